"""The corpus pipeline on Apache Beam: read, embed, write.

    lines = pipeline | ReadLines(["gs://corpus/*.txt.gz"])
    outputs = lines | EmbedSentences(embedder)
    outputs | WriteEmbeddings("gs://out/elmo", settings)

`embed_corpus` builds and runs exactly that (`keras-elmo embed-corpus`),
after checking the inputs and the output directory. Any filesystem Beam
has (local, gs://, s3://, hdfs://) works for both.

Exactly once: the file sinks write each bundle to a temporary file and
keep only the files of committed bundles, so a bundle that a runner
retries after a worker died is written once; `summary.json` is written
after every shard (it waits on their names), so its presence marks a
complete output.
"""

import json
import os

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import KeyedModelHandler
from apache_beam.ml.inference.base import RunInference
from apache_beam.options.pipeline_options import PipelineOptions

from keras_elmo.beam.model_handler import ELMoModelHandler
from keras_elmo.corpus.sentences import BadLine
from keras_elmo.embedding_files import parquet_layout as layout
from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import OutputPathError

BAD = "bad"
SENTENCES = "sentences"
# Beam's file sinks write into folders named so, then rename.
_TEMPORARY = "beam-temp-"
# Rows buffered per Parquet write: bounds a writer's memory (a sentence
# of all layers at the original size is ~300 KB).
_RECORD_BATCH = 64


# === Read ===


def _numbered_lines(readable_file):
    """`((path, line_number), raw bytes)` of each line of a matched file,
    numbered from 1, the line ending removed; `.gz` decompressed."""
    path = readable_file.metadata.path
    with readable_file.open(compression_type=CompressionTypes.AUTO) as f:
        for line_number, raw in enumerate(f, start=1):
            yield (path, line_number), raw.rstrip(b"\r\n")


class ReadLines(beam.PTransform):
    """Every line of the files that `patterns` match, keyed by `(file,
    line)` (file as matched, line from 1), as raw bytes; spread over the
    workers (a file is read by one worker, its lines embedded by all).

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

    def __init__(self, patterns):
        super().__init__()
        self.patterns = list(patterns)

    def expand(self, pbegin):
        return (
            pbegin
            | "Patterns" >> beam.Create(self.patterns)
            | "Match" >> fileio.MatchAll()
            | "Open" >> fileio.ReadMatches()
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
            yield key, self.embedder.tokens(sentence)
        except BadLine as error:
            yield beam.pvalue.TaggedOutput(BAD, (key, error.reason))


def _array(element):
    key, prediction = element
    return key, prediction.inference


class EmbedSentences(beam.PTransform):
    """`(key, sentence)` -> `{SENTENCES: (key, array), BAD: (key,
    reason)}`: bad lines go aside, the rest through `RunInference` with an
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
    [(('a.txt', 1), (4, 32)), (('a.txt', 2), 'empty')]
    """

    def __init__(self, embedder, **handler_kwargs):
        super().__init__()
        self.embedder = embedder
        self.handler_kwargs = handler_kwargs

    def expand(self, sentences):
        tokens = sentences | "Tokenize" >> beam.ParDo(
            _Tokenize(self.embedder)
        ).with_outputs(BAD, main=SENTENCES)
        handler = KeyedModelHandler(
            ELMoModelHandler(self.embedder, keyed=True, **self.handler_kwargs)
        )
        embedded = (
            tokens[SENTENCES]
            | "Embed" >> RunInference(handler)
            | "Arrays" >> beam.Map(_array)
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


def _write_summary(counts, output, settings, embedding_files, bad_files):
    text = layout.summary(
        counts,
        settings,
        [os.path.basename(name) for name in embedding_files],
        [os.path.basename(name) for name in bad_files],
    )
    final = FileSystems.join(output, layout.SUMMARY_FILE)
    temporary = f"{final}.partial"
    with FileSystems.create(temporary) as f:
        f.write(text.encode("utf-8"))
    if FileSystems.exists(final):  # a retried step wrote it already
        FileSystems.delete([final])
    FileSystems.rename([temporary], [final])


class WriteEmbeddings(beam.PTransform):
    """Writes `EmbedSentences`' outputs into the directory `output`, in
    the layout of `keras_elmo.embedding_files.parquet_layout`; `settings`
    (a JSON dict) goes into `summary.json`.

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

    def __init__(self, output, settings, dtype="float32"):
        super().__init__()
        self.output = output
        self.settings = settings
        self.dtype = dtype

    def expand(self, outputs):
        embedded, bad = outputs[SENTENCES], outputs[BAD]
        embedding_files = (
            embedded
            | "Rows" >> beam.MapTuple(layout.embedding_record)
            | "WriteParquet"
            >> beam.io.WriteToParquet(
                FileSystems.join(self.output, layout.EMBEDDINGS_PREFIX),
                layout.parquet_schema(self.dtype),
                codec="snappy",
                record_batch_size=_RECORD_BATCH,
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
                embedded | "CountSentences" >> beam.Map(_sentence_counts),
                bad | "CountBad" >> beam.Map(_bad_line_counts),
            )
            | "AllCounts" >> beam.Flatten()
            | "Sum" >> beam.CombineGlobally(_Counts())
        )
        return counts | "Summary" >> beam.Map(
            _write_summary,
            self.output,
            self.settings,
            beam.pvalue.AsList(embedding_files),
            beam.pvalue.AsList(bad_files),
        )


# === Run ===


def _output_files(output):
    """What a run wrote into `output` (shards, summary, Beam's temporary
    folders and their files), files before their folders; or []."""
    found = set()
    for name in (
        layout.SUMMARY_FILE,
        f"{layout.SUMMARY_FILE}.partial",
        f"{layout.EMBEDDINGS_PREFIX}-*",
        f"{layout.BAD_LINES_PREFIX}-*",
        f"{_TEMPORARY}*/*",
    ):
        pattern = FileSystems.join(output, name)
        for match in FileSystems.match([pattern])[0].metadata_list:
            found.add(match.path)
    # Matches are files; Beam's temporary folders are their parents (and,
    # on a local disk, the empty ones too).
    folders = {
        os.path.dirname(path)
        for path in found
        if os.path.basename(os.path.dirname(path)).startswith(_TEMPORARY)
    }
    if FileSystems.get_scheme(output) in (None, "file") and os.path.isdir(
        output
    ):
        folders.update(
            os.path.join(output, name)
            for name in os.listdir(output)
            if name.startswith(_TEMPORARY)
        )
    return sorted(found) + sorted(folders)


def check_output(output, overwrite=False):
    """Refuses an output directory that holds a run (finished, or the
    leftovers of one that was killed) unless `overwrite`, which deletes
    that run's files first (the summary first, so nothing reads a half
    deleted output as complete)."""
    found = _output_files(output)
    if not found:
        return
    summary = FileSystems.join(output, layout.SUMMARY_FILE)
    if not overwrite:
        what = (
            "a finished run"
            if FileSystems.exists(summary)
            else f"the leftovers of a run that did not finish ({len(found)} "
            "files, no summary.json)"
        )
        raise OutputPathError(
            f"`output` {output} holds {what}. Choose another directory, or "
            "pass `overwrite` to delete it and embed again.",
            "output",
            received=output,
        )
    if FileSystems.exists(summary):
        FileSystems.delete([summary])
    FileSystems.delete([path for path in found if path != summary])


def input_files(patterns, output):
    """The files `patterns` match (each must match one at least; none may
    lie in `output`)."""
    if not patterns:
        raise KerasElmoError(
            "`inputs` is empty; give at least one path or glob.",
            "inputs",
            received=patterns,
        )
    files = []
    for pattern in patterns:
        matched = FileSystems.match([pattern])[0].metadata_list
        if not matched:
            raise KerasElmoError(
                f"`inputs` {pattern} matches no file; expected text files of "
                "one sentence a line (a path or a glob, '.gz' allowed).",
                "inputs",
            )
        files.extend(match.path for match in matched)
    prefix = FileSystems.join(output, "")
    inside = [path for path in files if path.startswith(prefix)]
    if inside:
        raise OutputPathError(
            f"`inputs` matches {inside[0]}, inside `output` {output}; the "
            "run would read its own output. Write the output elsewhere.",
            "inputs",
        )
    return files


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
    }


def embed_corpus(
    inputs, output, embedder, beam_options=(), overwrite=False, **handler
):
    """Embeds every line of the files `inputs` match into the directory
    `output` (the layout of `keras_elmo.embedding_files.parquet_layout`), on the
    runner the Beam options name.

    Args:
        inputs: list of str. Paths or globs, on any Beam filesystem.
        output: str. The output directory (local, gs://, ...).
        embedder: a `keras_elmo.corpus.SentenceEmbedder`.
        beam_options: list of str or a `PipelineOptions`: Beam's flags
            (`--runner=FlinkRunner`, `--direct_num_workers=2`, ...).
        overwrite: bool. Delete a previous run in `output` first; otherwise
            such a directory is refused. Defaults to `False`.
        **handler: `ELMoModelHandler` arguments (Beam batching, sharing).

    Returns:
        The parsed `summary.json` (counts and shard names).

    The biLM is loaded here once before the run starts, so that a mistake
    in it (source, vocabulary, mix size) fails at once rather than on
    every worker; a runner that embeds in this process reuses it.

    Example:

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "a.txt"), "w") as f:
    ...     _ = f.write("The cat sat .\\n\\nHello world\\n")
    >>> embedder = keras_elmo.corpus.SentenceEmbedder(
    ...     "tests/fixtures/bilm-tf/model", output_layers="average")
    >>> summary = keras_elmo.beam.embed_corpus(
    ...     [os.path.join(folder, "*.txt")], os.path.join(folder, "out"),
    ...     embedder)
    >>> summary["sentences"], summary["bad_lines"]["empty"]
    (2, 1)
    """
    input_files(inputs, output)
    check_output(output, overwrite)
    embedder.load()
    if not isinstance(beam_options, PipelineOptions):
        beam_options = PipelineOptions(list(beam_options))
    with beam.Pipeline(options=beam_options) as pipeline:
        (
            pipeline
            | "Read" >> ReadLines(inputs)
            | "Embed" >> EmbedSentences(embedder, **handler)
            | "Write"
            >> WriteEmbeddings(output, settings_of(embedder), embedder.dtype)
        )
    path = FileSystems.join(output, layout.SUMMARY_FILE)
    with FileSystems.open(path) as f:
        return json.loads(f.read().decode("utf-8"))
