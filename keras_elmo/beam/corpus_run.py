"""`keras_elmo.beam.embed_corpus`: a corpus run on Apache Beam, what
`keras-elmo embed-corpus` runs.

Everything is checked before the pipeline starts and before anything is
deleted: the inputs (each pattern matched once, here: the files are
handed to Beam as they are named, never as patterns again), the Beam
options, the biLM (loaded here once, so that a mistake in it fails at
once rather than on every worker; a runner that embeds in this process
reuses it) and the output against all of them.
"""

import json

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import StandardOptions

from elmo_core.embedding_files import parquet_layout as layout
from elmo_core.embedding_files.inputs import input_settings
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_flag
from elmo_core.errors import check_verbose
from elmo_core.text.tokenization_record import note_reading
from keras_elmo.beam.corpus_paths import check_output
from keras_elmo.beam.corpus_paths import input_files
from keras_elmo.beam.corpus_paths import output_path
from keras_elmo.beam.output_directory import claim_output
from keras_elmo.beam.pipeline import EmbedSentences
from keras_elmo.beam.pipeline import ReadLines
from keras_elmo.beam.pipeline import WriteEmbeddings
from keras_elmo.beam.pipeline import settings_of
from keras_elmo.beam.pipeline_options import check_runner
from keras_elmo.beam.pipeline_options import pipeline_options
from keras_elmo.beam.proteins import EmbedProteins
from keras_elmo.beam.proteins import ReadFasta
from keras_elmo.beam.proteins import embedder_for
from keras_elmo.corpus.sentence_embedder import SentenceEmbedder


def embed_corpus(
    inputs,
    output,
    source,
    weights=None,
    vocabulary=None,
    output_layers=None,
    scalar_weights=None,
    gamma=None,
    dtype=None,
    max_batch_tokens=None,
    max_sentence_tokens=None,
    tokenize=None,
    language=None,
    input_format=None,
    max_residues=None,
    protein_vectors=None,
    runner=None,
    beam_options=(),
    overwrite=False,
    verbose=1,
    **handler,
):
    """Embeds every line of the files `inputs` match into the directory
    `output` (the layout of `elmo_core.embedding_files.parquet_layout`),
    on the runner the Beam options name: what `keras-elmo embed-corpus`
    runs.

    Args:
        inputs: str or list of str. Paths or globs on any Beam filesystem
            (plain or `.gz` text, or FASTA), each matched once
            (`elmo_core.text.patterns`: a name that matches nothing is
            its file; `x[[]1].txt` names `x[1].txt`) and each file read
            as named.
        output: str. The output directory (local, gs://, ...): new or
            empty, or one a corpus run claimed (see `overwrite`); never
            one that is, lies inside or holds an input.
        source: the biLM (anything `keras_elmo.load_bilm` takes), or a
            `keras_elmo.corpus.SentenceEmbedder`, which holds the biLM
            and the settings below (leave them out).
        weights, vocabulary, output_layers, scalar_weights: the
            settings of `SentenceEmbedder` (None: its defaults).
        gamma, dtype, max_batch_tokens, max_sentence_tokens: the same.
        tokenize, language: the same (for FASTA, `max_residues` bounds a
            record, not `max_sentence_tokens`).
        input_format: `"lines"` or `"fasta"` (a row per record, keyed by
            `(file, header line)`, each distinct sequence embedded once);
            by the files' suffix when None.
        max_residues, protein_vectors: FASTA only (10000; `"both"`,
            `"per-residue"` or `"per-protein"`).
        runner: str or None. Beam's runner (None: `beam_options`', or
            Beam's default).
        beam_options: list of str or a `PipelineOptions`: Beam's flags
            (`--direct_num_workers=2`, ...), each checked.
        overwrite: bool. Delete a previous run in `output` first (only
            one whose marker was written there and that holds nothing but
            a run's files: `claim_output`). Defaults to `False`.
        verbose: 0 or 1: a note when `tokenize` reads otherwise than the
            biLM's corpus was read.
        **handler: `ELMoModelHandler` arguments (Beam batching, sharing).

    Returns:
        The parsed `summary.json` (counts, shard names, and the files that
        could not be read to their end under `unreadable_files`).

    Example:

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "a.txt"), "w") as f:
    ...     _ = f.write("The cat sat .\\n\\nHello world\\n")
    >>> summary = keras_elmo.beam.embed_corpus(
    ...     [os.path.join(folder, "*.txt")], os.path.join(folder, "out"),
    ...     "tests/fixtures/bilm-tf/model", output_layers="average")
    >>> summary["sentences"], summary["bad_lines"]["empty"]
    (2, 1)
    """
    files = input_files(inputs)
    output = output_path(output)
    check_output(output, files)
    overwrite = check_flag(overwrite, "overwrite")
    verbose = check_verbose(verbose)
    options = _options(runner, beam_options)
    settings = dict(
        weights=weights, vocabulary=vocabulary, output_layers=output_layers,
        scalar_weights=scalar_weights, gamma=gamma, dtype=dtype,
        max_batch_tokens=max_batch_tokens, tokenize=tokenize,
        language=language,
    )  # fmt: skip
    fasta = (input_format, max_residues, protein_vectors, max_sentence_tokens)
    embedder, proteins = _embedder(source, files, settings, *fasta)
    note_reading(
        embedder.source, embedder.tokenize, embedder.language,
        "embed-corpus", verbose,
    )  # fmt: skip
    check_output(output, files, embedder.load().inputs)
    claim_output(output, overwrite)
    _run(files, output, embedder, proteins, options, handler)
    return _summary(output)


def _summary(output):
    """The parsed `summary.json` the run wrote into `output`."""
    path = FileSystems.join(output, layout.SUMMARY_FILE)
    with FileSystems.open(path) as f:
        return json.loads(f.read().decode("utf-8"))


def _options(runner, beam_options):
    """The checked `PipelineOptions` of the run, its runner `runner` when
    given."""
    options = pipeline_options(beam_options)
    if runner is None:
        return options
    if not isinstance(runner, str) or not runner:
        raise KerasElmoError(
            "`runner` must be the name of a Beam runner, e.g. "
            "'DirectRunner' or 'DataflowRunner'.",
            "runner",
            received=runner,
        )
    options.view_as(StandardOptions).runner = check_runner(runner)
    return options


def _embedder(
    source, files, settings, input_format, max_residues, protein_vectors,
    max_sentence_tokens,
):  # fmt: skip
    """`(embedder, proteins)`: the `SentenceEmbedder` of the run, for
    FASTA input (`proteins`) or lines."""
    given = {name: v for name, v in settings.items() if v is not None}
    if isinstance(source, SentenceEmbedder):
        if given or max_sentence_tokens is not None:
            name = next(iter(given), "max_sentence_tokens")
            raise KerasElmoError(
                f"`source` is a SentenceEmbedder, which holds its settings; "
                f"give `{name}` to it, or give the biLM itself as `source`.",
                name,
            )
        tokenize = source.tokenize
    else:
        tokenize = given.get("tokenize", "whitespace")
    fasta = input_settings(
        files, input_format, max_residues, protein_vectors, tokenize
    )
    proteins = fasta.input_format == "fasta"
    if isinstance(source, SentenceEmbedder):
        return embedder_for(source, proteins, input_format), proteins
    if proteins and max_sentence_tokens is not None:
        raise KerasElmoError(
            "`max_sentence_tokens` is for lines of text; a FASTA record is "
            "bounded by `max_residues`.",
            "max_sentence_tokens",
            received=max_sentence_tokens,
        )
    if proteins:
        given.update(
            max_sentence_tokens=fasta.max_residues,
            protein_vectors=fasta.protein_vectors,
        )
    elif max_sentence_tokens is not None:
        given["max_sentence_tokens"] = max_sentence_tokens
    embedder = SentenceEmbedder(source, **given)
    return embedder_for(embedder, proteins, input_format), proteins


def _run(files, output, embedder, proteins, options, handler):
    """Builds and runs the pipeline: read, embed, write."""
    if proteins:
        read = ReadFasta(files, embedder.max_sentence_tokens, matched=True)
        embed = EmbedProteins(embedder, **handler)
    else:
        read = ReadLines(files, matched=True)
        embed = EmbedSentences(embedder, **handler)
    write = WriteEmbeddings(
        output,
        {
            **settings_of(embedder),
            "input_format": "fasta" if proteins else "lines",
        },
        embedder.dtype,
        embedder.protein_vectors if proteins else None,
    )
    with beam.Pipeline(options=options) as pipeline:
        pipeline | "Read" >> read | "Embed" >> embed | "Write" >> write
