"""The corpus pipeline on Apache Beam: read, embed, write.

    lines = pipeline | ReadLines(["gs://corpus/*.txt.gz"])
    outputs = lines | EmbedSentences(embedder)
    outputs | WriteEmbeddings("gs://out/elmo", settings)

`keras_elmo.beam.embed_corpus` (`corpus_run.py`) builds and runs exactly
that (`keras-elmo embed-corpus`), after checking the inputs and the
output directory. Any filesystem Beam has (local, gs://, s3://, hdfs://)
works for both.

Exactly once: the file sinks write each bundle to a temporary file and
keep only the files of committed bundles, so a bundle that a runner
retries after a worker died is written once; `summary.json` is written
after every shard (it waits on their names), so its presence marks a
complete output.
"""

import os

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import RunInference

from elmo_core.embedding_files import parquet_layout as layout
from elmo_core.embedding_files.sentences import DEFAULT_DTYPE
from elmo_core.embedding_files.sentences import DTYPES
from elmo_core.embedding_files.sentences import BadLine
from elmo_core.errors import check_choice
from elmo_core.errors import check_flag
from elmo_core.text import lines as text_lines
from keras_elmo.beam.corpus_paths import output_path
from keras_elmo.beam.corpus_paths import patterns_of
from keras_elmo.beam.elements import BAD
from keras_elmo.beam.elements import RECORD_BATCH
from keras_elmo.beam.elements import SENTENCES
from keras_elmo.beam.elements import EmbedTransform
from keras_elmo.beam.elements import inference_array
from keras_elmo.beam.elements import open_files
from keras_elmo.beam.elements import read_keyed
from keras_elmo.beam.output_directory import claim_output
from keras_elmo.beam.proteins import protein_counts

# === Read ===


def _numbered_lines(readable_file):
    """`((path, line_number), raw bytes)` of each line of a matched file
    (`elmo_core.text.lines.numbered_lines`: numbered from 1, the line
    ending and a leading byte order mark removed; `.gz` decompressed).

    What cannot be read is a `BadLine` value instead of bytes: a line
    longer than the reader holds (`too_long`), and where the file cannot
    be read on (`unreadable`, at the first line not read: a truncated or
    damaged `.gz`, a compression the package does not read, not a regular
    file). An error of the filesystem itself (a lost connection) is
    raised, for the runner to retry.
    """
    yield from read_keyed(readable_file, _line_values)


def _line_values(lines, path):
    for line_number, line in text_lines.numbered_lines(lines):
        yield line_number, _line_value(line)


def _line_value(line):
    if line is None:
        return BadLine(
            layout.TOO_LONG,
            f"The line is longer than {text_lines.MAX_LINE_BYTES:,} bytes.",
        )
    return line


class ReadLines(beam.PTransform):
    """Every line of the files that `patterns` match, keyed by `(file,
    line)` (file as matched, line from 1), as raw bytes (or a `BadLine`
    where a line or the rest of a file cannot be read); spread over the
    workers (a file is read by one worker, its lines embedded by all).
    With `matched`, `patterns` are files already matched (as
    `embed_corpus` gives them), each read as named, never matched again
    (so `x[1].txt` is that file, not `x1.txt`).

    Example:

    >>> import apache_beam as beam
    >>> pattern = "tests/fixtures/bilm-tf/train/data.txt"
    >>> with beam.Pipeline() as pipeline:
    ...     _ = (
    ...         pipeline
    ...         | keras_elmo.beam.ReadLines([pattern])
    ...         | beam.combiners.Count.Globally()
    ...         | beam.Map(print)
    ...     )
    5
    """

    def __init__(self, patterns, matched=False):
        super().__init__()
        self.patterns = patterns_of(patterns, "patterns")
        self.matched = check_flag(matched, "matched")

    def expand(self, pbegin):
        return (
            open_files(pbegin, self.patterns, self.matched)
            | "Lines" >> beam.FlatMap(_numbered_lines)
            | "Spread" >> beam.Reshuffle()
        )


# === Embed ===


class _Tokenize(beam.DoFn):
    """`(key, tokens)`, or `(key, reason)` to the BAD output."""

    def __init__(self, embedder):
        self.embedder = embedder

    def process(self, element):
        key, sentence = element
        try:
            if isinstance(sentence, BadLine):  # ReadLines found it so
                raise sentence
            yield key, self.embedder.tokens(sentence)
        except BadLine as error:
            detail = str(error) if error.reason == layout.UNREADABLE else None
            yield beam.pvalue.TaggedOutput(BAD, (key, error.reason, detail))


class EmbedSentences(EmbedTransform):
    """`(key, sentence)` -> `{SENTENCES: (key, array), BAD: (key,
    reason, detail)}`: bad lines go aside (`detail`: words for an
    unreadable file, else None), the rest through `RunInference` with an
    `ELMoModelHandler`.

    Example:

    >>> import apache_beam as beam
    >>> embedder = keras_elmo.corpus.SentenceEmbedder(
    ...     "tests/fixtures/bilm-tf/model", output_layers="top")
    >>> lines = [(("a.txt", 1), b"The cat sat ."), (("a.txt", 2), b"")]
    >>> with beam.Pipeline() as pipeline:
    ...     out = (
    ...         pipeline
    ...         | beam.Create(lines)
    ...         | keras_elmo.beam.EmbedSentences(embedder)
    ...     )
    ...     shapes = out["sentences"] | beam.MapTuple(
    ...         lambda key, array: (key, array.shape))
    ...     _ = (
    ...         (shapes, out["bad"])
    ...         | beam.Flatten()
    ...         | beam.combiners.ToList()
    ...         | beam.Map(lambda rows: print(sorted(rows, key=str)))
    ...     )
    [(('a.txt', 1), (4, 32)), (('a.txt', 2), 'empty', None)]
    """

    def expand(self, sentences):
        tokens = sentences | "Tokenize" >> beam.ParDo(
            _Tokenize(self.embedder)
        ).with_outputs(BAD, main=SENTENCES)
        handler = self.model_handler()
        embedded = (
            tokens[SENTENCES]
            | "Embed" >> RunInference(handler)
            | "Arrays" >> beam.Map(inference_array)
        )
        return {SENTENCES: embedded, BAD: tokens[BAD]}


# === Write ===


class _Counts(beam.CombineFn):
    """Sums dicts of counts."""

    def create_accumulator(self):
        return {}

    def add_input(self, accumulator, counts):
        for name, value in counts.items():
            accumulator[name] = accumulator.get(name, 0) + value
        return accumulator

    def merge_accumulators(self, accumulators):
        merged = {}
        for accumulator in accumulators:
            self.add_input(merged, accumulator)
        return merged

    def extract_output(self, accumulator):
        return accumulator


def _sentence_counts(element):
    # The token count is the time axis: (..., n, width).
    return {"sentences": 1, "tokens": int(element[1].shape[-2])}


def _bad_line_counts(element):
    return {element[1]: 1}


def _is_unreadable(element):
    return element[1] == layout.UNREADABLE


def _unreadable_file(element):
    (file, line), _, detail = element
    return file, line, detail


def _write_summary(
    counts, output, settings, run, embedding_files, bad_files, unreadable
):
    summary = layout.summary(
        counts,
        settings,
        [os.path.basename(name) for name in embedding_files],
        [os.path.basename(name) for name in bad_files],
        unreadable,
        run,
    )
    final = FileSystems.join(output, layout.SUMMARY_FILE)
    temporary = f"{final}.partial"
    with FileSystems.create(temporary) as f:
        f.write(summary.encode("utf-8"))
    if FileSystems.exists(final):  # a retried step wrote it already
        FileSystems.delete([final])
    FileSystems.rename([temporary], [final])


class WriteEmbeddings(beam.PTransform):
    """Writes `EmbedSentences`' outputs into the directory `output`, in
    the layout of `elmo_core.embedding_files.parquet_layout`; `settings`
    (a JSON dict) goes into `summary.json`.

    Applying it claims `output` (`claim_output`): a new or empty
    directory, or one holding only the marker, gets the marker; any other
    is refused before the pipeline runs.

    Example:

    >>> import os, tempfile
    >>> import apache_beam as beam
    >>> from keras_elmo.beam.pipeline import settings_of
    >>> embedder = keras_elmo.corpus.SentenceEmbedder(
    ...     "tests/fixtures/bilm-tf/model", output_layers="top")
    >>> output = os.path.join(tempfile.mkdtemp(), "elmo-out")
    >>> with beam.Pipeline() as pipeline:
    ...     _ = (
    ...         pipeline
    ...         | beam.Create([(("a.txt", 1), b"Hello world")])
    ...         | keras_elmo.beam.EmbedSentences(embedder)
    ...         | keras_elmo.beam.WriteEmbeddings(output, settings_of(embedder))
    ...     )
    >>> [(key, array.shape) for *key, array in
    ...  keras_elmo.corpus.read_embeddings(output)]  # fmt: skip
    [(['a.txt', 1], (2, 32))]
    """

    def __init__(
        self, output, settings, dtype=DEFAULT_DTYPE, protein_vectors=None
    ):
        super().__init__()
        self.output = output_path(output)
        self.settings = settings
        self.dtype = check_choice(dtype, "dtype", choices=DTYPES)
        self.protein_vectors = protein_vectors

    def expand(self, outputs):
        run = claim_output(self.output)
        embedded, bad = outputs[SENTENCES], outputs[BAD]
        if self.protein_vectors is None:
            record = layout.embedding_record
            schema = layout.parquet_schema(self.dtype)
            counted = _sentence_counts
        else:
            record = layout.protein_record
            schema = layout.protein_schema(self.dtype, self.protein_vectors)
            counted = protein_counts
        embedding_files = (
            embedded
            | "Rows" >> beam.MapTuple(record)
            | "WriteParquet"
            >> beam.io.WriteToParquet(
                FileSystems.join(self.output, layout.EMBEDDINGS_PREFIX),
                schema,
                codec="snappy",
                record_batch_size=RECORD_BATCH,
                file_name_suffix=layout.EMBEDDINGS_SUFFIX,
            )
        )
        bad_files = (
            bad
            | "BadRows" >> beam.MapTuple(layout.bad_line_record)
            | "WriteBadLines"
            >> beam.io.WriteToText(
                FileSystems.join(self.output, layout.BAD_LINES_PREFIX),
                file_name_suffix=layout.BAD_LINES_SUFFIX,
            )
        )
        counts = (
            (
                embedded | "CountSentences" >> beam.Map(counted),
                bad | "CountBad" >> beam.Map(_bad_line_counts),
            )
            | "AllCounts" >> beam.Flatten()
            | "Sum" >> beam.CombineGlobally(_Counts())
        )
        unreadable = (
            bad
            | "Unreadable" >> beam.Filter(_is_unreadable)
            | "UnreadableFiles" >> beam.Map(_unreadable_file)
        )
        return counts | "Summary" >> beam.Map(
            _write_summary,
            self.output,
            self.settings,
            run,
            beam.pvalue.AsList(embedding_files),
            beam.pvalue.AsList(bad_files),
            beam.pvalue.AsList(unreadable),
        )


# === Run ===


def settings_of(embedder):
    """The `summary.json` settings of a run with `embedder`."""
    return {
        "source": os.fspath(embedder.source),
        "weights": embedder.weights,
        "output_layers": embedder.output_layers,
        "scalar_weights": (
            None
            if embedder.scalar_weights is None
            else [float(w) for w in embedder.scalar_weights]
        ),
        "gamma": embedder.gamma,
        "dtype": embedder.dtype,
        "max_sentence_tokens": embedder.max_sentence_tokens,
        "protein_vectors": embedder.protein_vectors,
    }
