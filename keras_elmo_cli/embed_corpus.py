"""`keras-elmo embed-corpus`: embed text files on Apache Beam (any
runner); it parses its flags and calls `keras_elmo.beam.embed_corpus`.

Parsing imports neither TensorFlow nor Beam. Running it does; local
workers inherit the quiet TensorFlow log level the command sets.
"""

import argparse
import logging
import os

from elmo_core.errors import KerasElmoError
from elmo_core.text.tokenizers import DEFAULT_TOKENIZATION
from keras_elmo_cli.arguments import add_bilm_source
from keras_elmo_cli.arguments import add_fasta_arguments
from keras_elmo_cli.arguments import add_input_files
from keras_elmo_cli.arguments import add_max_batch_tokens
from keras_elmo_cli.arguments import add_output_layers
from keras_elmo_cli.arguments import add_quiet
from keras_elmo_cli.arguments import add_scalar_mix
from keras_elmo_cli.arguments import add_tokenize
from keras_elmo_cli.arguments import finite_float
from keras_elmo_cli.arguments import library_arguments
from keras_elmo_cli.arguments import positive_int
from keras_elmo_cli.arguments import source_arguments

RUNNERS = ("DirectRunner", "FlinkRunner", "SparkRunner", "DataflowRunner")
# The library's names of what this command's flags give, where no flag
# has the name as its destination.
_ARGUMENT_FLAGS = {"beam_options": "--"}
# Beam's workers log every bundle at INFO; a command prints its own lines.
_QUIET_WORKERS = "--default_sdk_harness_log_level=WARNING"


def add_parser(commands):
    from elmo_core.embedding_files import sentences
    from elmo_core.embedding_files.hdf5_layout import DEFAULT_OUTPUT_LAYERS
    from elmo_core.embedding_files.hdf5_layout import OUTPUT_LAYERS
    from elmo_core.embedding_files.sentences import DTYPES

    parser = commands.add_parser(
        "embed-corpus",
        help="embed text files on Apache Beam (local, Flink, Spark, "
        "Dataflow) into sharded Parquet",
        description="Embeds every line of the --input files (one "
        "whitespace-tokenised sentence a line, UTF-8, plain or .gz; any "
        "filesystem Beam has) with Beam's RunInference, and writes the "
        "directory --output (new or empty, or a run's): embeddings-*.parquet "
        "(columns file, line (from 1), shape, embedding), bad_lines-*.jsonl "
        "(lines that are empty, too long or not UTF-8, and where a file "
        "could not be read on, with the reason) and summary.json (counts; "
        "written last); a file not read to its end exits 2 after the "
        "output is written. Each sentence equals its `keras-elmo "
        "embed` dataset. Beam pipeline options follow a `--`, e.g. `-- "
        "--direct_running_mode=multi_processing --direct_num_workers=2`. "
        "Protein FASTA files (.fasta, .fa, .faa, .fas, also .gz; or "
        "--input-format fasta) give a row per record, with columns id and "
        "sequence_hash, each distinct sequence embedded once. "
        "Needs the beam extra: pip install 'keras-elmo[beam]'.",
    )
    add_bilm_source(parser, vocabulary="vocabulary")
    io = parser.add_argument_group("input and output")
    add_input_files(io, "a text or FASTA file, or a glob")
    io.add_argument("--output", required=True, help="output directory")
    io.add_argument(
        "--overwrite",
        action="store_true",
        help="delete a previous run of this command in --output first "
        "(recognised by its marker, keras-elmo-corpus.json; a directory "
        "holding anything else is refused, with or without it)",
    )
    io.add_argument(
        "--max-sentence-tokens",
        type=positive_int,
        help="a longer line is reported as too long (default "
        f"{sentences.DEFAULT_MAX_SENTENCE_TOKENS}); FASTA records: "
        "--max-residues",
    )
    add_max_batch_tokens(io)
    layers = parser.add_argument_group("layers of each sentence")
    choice = layers.add_mutually_exclusive_group()
    add_output_layers(parser, choice, OUTPUT_LAYERS, DEFAULT_OUTPUT_LAYERS)
    add_scalar_mix(
        choice,
        "gamma * sum_k softmax(s)_k * layer_k for the weights s given; "
        "shape (n, 2 * projection_dim)",
        dest="scalar_weights",
    )
    layers.add_argument(
        "--gamma",
        type=finite_float,
        help="the scale of --scalar-mix (default 1.0)",
    )
    layers.add_argument(
        "--dtype",
        choices=DTYPES,
        help=f"stored precision; float16 halves the output (default "
        f"{DTYPES[0]})",
    )
    add_tokenize(
        parser.add_argument_group("raw sentences"), DEFAULT_TOKENIZATION
    )
    add_fasta_arguments(parser)
    add_quiet(parser, "no closing line (what was not embedded is still shown)")
    engine = parser.add_argument_group("Apache Beam")
    engine.add_argument(
        "--runner",
        help=f"Beam runner: {', '.join(RUNNERS)} (default {RUNNERS[0]}; "
        "its own options go after `--`)",
    )
    engine.add_argument(
        "beam_options",
        nargs=argparse.REMAINDER,
        help="-- then Beam pipeline options, passed through",
    )
    parser.set_defaults(run=run_embed_corpus, argument_flags=_ARGUMENT_FLAGS)


def _beam_options(args):
    """What follows `--`: Beam's options (checked by the library), after
    the one that keeps Beam's workers quiet."""
    options = list(args.beam_options)
    if options and options[0] == "--":
        options = options[1:]
    if options and not options[0].startswith("-"):
        raise KerasElmoError(
            f"Unexpected argument {options[0]!r}; Beam options go after "
            "`--` and start with `--` (e.g. -- --direct_num_workers=2)."
        )
    return [_QUIET_WORKERS, *options]


def _report(summary, output):
    """The closing line, then a line on what was not embedded (if any)."""
    from elmo_core.embedding_files.parquet_layout import BAD_LINE_REASONS

    bad = summary["bad_lines"]
    units = ("sentences", "tokens")
    if summary.get("settings", {}).get("input_format") == "fasta":
        units = ("proteins", "residues")
    lines = [
        f"Embedded {summary['sentences']} {units[0]} ({summary['tokens']} "
        f"{units[1]}) into {output} ({len(summary['embedding_files'])} "
        "Parquet shards)"
    ]
    if any(bad.values()):
        counts = ", ".join(
            f"{bad[reason]} {meaning}"
            for reason, meaning in BAD_LINE_REASONS.items()
            if bad.get(reason)
        )
        lines.append(
            f"Not embedded: {counts}; listed in "
            f"{os.path.join(output, 'bad_lines-*.jsonl')}"
        )
    return lines


def _require_beam():
    """`KerasElmoError` naming the extra when Beam is missing."""
    import importlib.util

    if importlib.util.find_spec("apache_beam") is None:
        raise KerasElmoError(
            "Embedding a corpus on Apache Beam needs Beam: pip install "
            "'keras-elmo[beam]' (apache-beam)."
        )


def run_embed_corpus(args):
    _require_beam()
    # Beam warns on import that Google Cloud clients are missing.
    logging.disable(logging.WARNING)
    try:
        from keras_elmo.beam import embed_corpus
    finally:
        logging.disable(logging.NOTSET)

    if args.scalar_weights is not None:
        args.output_layers = "mix"
    values = library_arguments(args, embed_corpus)
    values.update(
        source_arguments(args, "source"), beam_options=_beam_options(args)
    )
    summary = embed_corpus(**values)
    closing, *warnings = _report(summary, args.output)
    for line in warnings if args.quiet else [closing, *warnings]:
        print(line)
    _check_read_whole(summary, args.output)


def _check_read_whole(summary, output):
    """Fails the command (after the report) when an input could not be
    read to its end: its lines up to there are in the output, the rest
    is not."""
    unreadable = summary.get("unreadable_files") or []
    if not unreadable:
        return
    first = unreadable[0]
    more = f"; and {len(unreadable) - 1} more" if len(unreadable) > 1 else ""
    raise KerasElmoError(
        f"not every input was read to its end: {first['detail']}: its "
        f"lines from {first['line']} on were not read{more}. The lines "
        f"before were embedded into {output}, whose summary.json lists "
        "each such file (`unreadable_files`). Replace the file and run "
        "again with --overwrite.",
        "inputs",
    )
