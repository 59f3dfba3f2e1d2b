"""`keras-elmo embed` and `keras-elmo dump-token-embeddings`, and their
runtime choice (`--runtime`, `--precision`)."""

import contextlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time

from elmo_core.errors import KerasElmoError
from elmo_core.formats.exported_file import KINDS
from elmo_core.formats.exported_file import PRECISIONS
from elmo_core.text.tokenizers import DEFAULT_TOKENIZATION
from keras_elmo_cli.arguments import QUIET_DONE
from keras_elmo_cli.arguments import OneValue
from keras_elmo_cli.arguments import add_bilm_source
from keras_elmo_cli.arguments import add_fasta_arguments
from keras_elmo_cli.arguments import add_max_batch_tokens
from keras_elmo_cli.arguments import add_output_layers
from keras_elmo_cli.arguments import add_quiet
from keras_elmo_cli.arguments import add_tokenize
from keras_elmo_cli.arguments import bilm_source
from keras_elmo_cli.arguments import bilm_vocabulary
from keras_elmo_cli.arguments import fasta_settings
from keras_elmo_cli.arguments import output_path
from keras_elmo_cli.arguments import positive_int
from keras_elmo_cli.arguments import tokenization_note
from keras_elmo_cli.arguments import verbosity

RUNTIMES = ("tensorflow", *KINDS)
# The library's names of what these commands' flags give.
_ARGUMENT_FLAGS = {
    "input_file": "--input",
    "vocab_file": "--vocab",
    "output_file": "--output",
    "model_file": "--model",
}


def add_parser(commands):
    from elmo_core.embedding_files import hdf5_layout as dump
    from elmo_core.text.lines import ON_BAD_LINE

    embed = commands.add_parser(
        "embed",
        help="write the biLM layers of each sentence of a text file to hdf5",
        description="Reads one whitespace-tokenised sentence per line "
        "(UTF-8, .gz allowed) and writes hdf5 dataset str(i) for line i "
        "(from 0), float32 (num_layers + 1, n_i, 2 * projection_dim) "
        "(--top, --average: one layer), and "
        f"'{dump.SENTENCE_INDEX}' (JSON: sentence -> dataset key): the "
        "layout of `allennlp elmo`. Stateless: each sentence starts from a "
        "zero state. The output is written to OUTPUT.partial and renamed "
        "when complete. A protein FASTA file (.fasta, .fa, .faa, .fas, also "
        ".gz; or --input-format fasta) gives groups per_residue and "
        "per_protein of a dataset per record id, and id_to_hash (JSON: id "
        "-> md5 of the sequence; a sequence under several ids is embedded "
        "once).",
    )
    add_bilm_source(embed)
    io = embed.add_argument_group("input and output")
    io.add_argument(
        "--input",
        action=OneValue,
        required=True,
        help="sentences, one a line, or a protein FASTA file; - (or "
        "/dev/stdin) reads standard "
        "input (e.g. `cat text | keras-elmo embed --input - ...`; it is "
        "kept in a temporary file until the end, since every line is "
        "checked before any work)",
    )
    _add_output(io, dump.DEFAULT_SENTENCE_BATCH, "sentences")
    add_max_batch_tokens(io)
    io.add_argument(
        "--on-bad-line",
        choices=ON_BAD_LINE,
        default="error",
        help="a line that is not UTF-8 (FASTA: a bad record): stop with "
        "an error naming it (default), or skip it (no dataset for it; "
        "FASTA: listed in the dataset bad_records)",
    )
    layers = embed.add_argument_group(
        "layers of each sentence (allennlp elmo's options)"
    ).add_mutually_exclusive_group()
    add_output_layers(
        embed,
        layers,
        dump.OUTPUT_LAYERS,
        dump.DEFAULT_OUTPUT_LAYERS,
        "dataset shape",
    )
    io.add_argument(
        "--forget-sentences",
        action="store_true",
        help=f"leave out '{dump.SENTENCE_INDEX}' (it holds the text of "
        "every sentence)",
    )
    add_tokenize(
        embed.add_argument_group("raw sentences"), DEFAULT_TOKENIZATION
    )
    add_fasta_arguments(embed)
    add_runtime_arguments(embed)
    add_quiet(embed, QUIET_DONE)
    embed.set_defaults(
        run=run_embed,
        argument_flags=_ARGUMENT_FLAGS,
        needs_keras=_unless_exported_file,
    )

    tokens = commands.add_parser(
        "dump-token-embeddings",
        help="write the context-insensitive embedding of each vocab token",
        description="Writes hdf5 dataset 'embedding' (num_tokens, "
        "projection_dim): row k is the token encoder output for line k of "
        "the vocabulary.",
    )
    add_bilm_source(tokens)
    io = tokens.add_argument_group("input and output")
    io.add_argument("--vocab", required=True, help="one token a line")
    _add_output(io, dump.DEFAULT_TOKEN_BATCH, "tokens")
    add_quiet(tokens, QUIET_DONE)
    tokens.set_defaults(
        run=run_dump_token_embeddings,
        argument_flags=_ARGUMENT_FLAGS,
        needs_keras=_unless_exported_file,
    )


def _unless_exported_file(args):
    """`needs_keras`: False when `--model` names an exported file
    (its runtime runs it without TensorFlow)."""
    from elmo_core.embedding_files import runtime_dump

    return runtime_dump.runtime_of(args.model) is None


def _add_output(group, batch_size, units):
    """`--output` (the hdf5 file) and `--batch-size` (`units` a batch)."""
    group.add_argument(
        "--output", type=output_path, required=True, help="hdf5 file to write"
    )
    group.add_argument(
        "--batch-size",
        type=positive_int,
        default=batch_size,
        help=f"{units} a batch at most (default %(default)s)",
    )


def _open_source(args, *inputs):
    """The biLM source, once the output was checked against every input:
    the local ones first (before a download), then every file the source
    reads."""
    from elmo_core.files import check_output_file

    inputs = [*inputs, args.bilm_vocab]
    check_output_file(
        args.output, [*inputs, args.options, args.weights], "output"
    )
    source = bilm_source(args)
    inputs += source.inputs()
    check_output_file(args.output, inputs, "output")
    return source


def _exported_model(args):
    """The `.onnx` / `.tflite` file that `--model` names, loaded by its
    runtime (no TensorFlow), or None for any other biLM source."""
    from elmo_core.embedding_files import runtime_dump

    if runtime_dump.runtime_of(args.model) is None:
        return None
    for flag, value in (
        ("--options", args.options),
        ("--weights", args.weights),
        ("--bilm-vocab", args.bilm_vocab),
    ):
        if value:
            raise KerasElmoError(
                f"--model {args.model} is an exported model file; {flag} "
                "does not apply to it (it holds its options and weights, and "
                "reads characters). Drop " + flag + "."
            )
    return runtime_dump.open_model(
        args.model,
        getattr(args, "runtime", None),
        getattr(args, "precision", None),
    )


# The names of standard input that --input takes.
STANDARD_INPUT = ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")


@contextlib.contextmanager
def _input_file(path):
    """`path`, or for `-` (or `/dev/stdin`) a temporary file holding
    standard input: embed reads its input twice (every line is checked
    before any work), so a stream is kept whole first. Another pipe or
    device given by name is refused with the way to read it."""
    if path not in STANDARD_INPUT:
        _check_not_stream(path)
        yield path
        return
    if sys.stdin is None:
        raise KerasElmoError(
            f"--input {path} reads the sentences from standard input, which "
            "is closed here; send them through a pipe or a redirect."
        )
    if sys.stdin.isatty():
        raise KerasElmoError(
            f"--input {path} reads the sentences from standard input, which "
            "is a terminal here; send them through a pipe or a redirect "
            "(`... | keras-elmo embed --input - ...`, `--input - < FILE`)."
        )
    with tempfile.TemporaryDirectory() as directory:
        copy = os.path.join(directory, "standard-input.txt")
        with open(copy, "wb") as f:
            shutil.copyfileobj(sys.stdin.buffer, f)
        try:
            yield copy
        except KerasElmoError as error:  # named as the user gave it
            named = f"standard input (--input {path})"
            error.message = error.message.replace(copy, named)
            if isinstance(error.received, str):
                error.received = error.received.replace(copy, named)
            raise error from None


def _check_not_stream(path):
    from elmo_core.files.paths import kind_of

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return  # the reader says what is wrong
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        raise KerasElmoError(
            f"--input {path} is {kind_of(mode)}, not a file; embed checks "
            "every line before any work, so it reads a stream through "
            f"standard input: --input - < {path}"
        )


def run_embed(args):
    input_format, max_residues, protein_vectors = fasta_settings(
        args, [args.input]
    )
    if input_format == "fasta" and args.forget_sentences:
        raise KerasElmoError(
            "--forget-sentences leaves out the text of the sentences; a FASTA "
            "input has none (its output is keyed by record id). Drop it."
        )
    fasta = {
        "input_format": input_format,
        "max_residues": max_residues,
        "protein_vectors": protein_vectors,
        "tokenize": args.tokenize,
        "language": args.language,
    }
    note = tokenization_note(args, args.model)
    if note and not args.quiet:
        print(f"keras-elmo embed: {note}", file=sys.stderr)
    with _input_file(args.input) as input_file:
        _embed(args, input_file, fasta)


def _embed(args, input_file, fasta):
    from elmo_core.embedding_files import runtime_dump

    what = "proteins" if fasta["input_format"] == "fasta" else "sentences"

    # Before the biLM source is resolved: an exported file runs as it is.
    model = _exported_model(args)
    if model is not None:
        count = runtime_dump.embed_file(
            model,
            input_file,
            args.output,
            args.batch_size,
            verbose=verbosity(args),
            on_bad_line=args.on_bad_line,
            output_layers=args.output_layers,
            sentence_index=not args.forget_sentences,
            max_batch_tokens=args.max_batch_tokens,
            **fasta,
        )
        _report(count, what, args)
        return
    from keras_elmo.corpus.bilm_dump import embed_file

    source = _open_source(args, input_file)
    vocabulary = bilm_vocabulary(args, source)
    bilm = runtime_bilm(
        source.read().bilm,
        args.runtime or "tensorflow",
        args.precision or "float32",
        quiet=args.quiet,
    )
    count = embed_file(
        bilm,
        input_file,
        args.output,
        batch_size=args.batch_size,
        verbose=verbosity(args),
        on_bad_line=args.on_bad_line,
        vocabulary=vocabulary,
        output_layers=args.output_layers,
        sentence_index=not args.forget_sentences,
        max_batch_tokens=args.max_batch_tokens,
        **fasta,
    )
    _report(count, what, args)


def _report(count, what, args):
    """The closing line (not with --quiet), and the records left out
    (always)."""
    output = args.output
    if not args.quiet:
        print(f"Wrote the biLM layers of {count} {what} to {output}")
    if what != "proteins":
        return
    import h5py

    from elmo_core.embedding_files.hdf5_layout import BAD_RECORDS

    with h5py.File(output, "r") as f:
        if BAD_RECORDS in f:
            bad = json.loads(f[BAD_RECORDS][0])
            print(
                f"Left out {len(bad)} bad records (--on-bad-line skip), "
                f"listed in its dataset {BAD_RECORDS}"
            )


def run_dump_token_embeddings(args):
    from elmo_core.embedding_files import runtime_dump

    model = _exported_model(args)
    if model is not None:
        count = runtime_dump.dump_token_embeddings(
            model,
            args.vocab,
            args.output,
            args.batch_size,
            verbose=verbosity(args),
        )
        _wrote_token_embeddings(args, count)
        return
    from keras_elmo.corpus.bilm_dump import dump_token_embeddings

    source = _open_source(args, args.vocab)
    count = dump_token_embeddings(
        source.read().bilm,
        args.vocab,
        args.output,
        batch_size=args.batch_size,
        verbose=verbosity(args),
        vocabulary=bilm_vocabulary(args, source),
    )
    _wrote_token_embeddings(args, count)


def _wrote_token_embeddings(args, count):
    if not args.quiet:
        print(f"Wrote {count} token embeddings to {args.output}")


def add_runtime_arguments(parser):
    """`--runtime` and `--precision`, for commands that run a biLM."""
    group = parser.add_argument_group("runtime")
    group.add_argument(
        "--runtime",
        choices=RUNTIMES,
        help="run the biLM in TensorFlow (default), or export it first and "
        "run it with ONNX Runtime or LiteRT (exporting takes a while at the "
        "original size: export once with keras-elmo export-onnx / "
        "export-litert and pass the file as --model FILE.onnx|.tflite, "
        "which runs without TensorFlow)",
    )
    group.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="with --runtime onnx (float32, int8) or litert (all): the "
        "precision of the export (default float32; a --model file has its "
        "own)",
    )


def runtime_bilm(bilm, runtime, precision, quiet=False):
    """`bilm` itself, or its export run by ONNX Runtime or LiteRT (the
    export takes a while: it says so unless `quiet`)."""
    if runtime == "tensorflow":
        if precision != "float32":
            raise KerasElmoError(
                f"--precision {precision} needs --runtime onnx or litert; "
                "the TensorFlow runtime runs the biLM in float32."
            )
        return bilm
    from elmo_core import runtime as runtimes
    from keras_elmo import export

    write = {"onnx": export.to_onnx, "litert": export.to_litert}[runtime]
    load = {"onnx": runtimes.ONNXBiLM, "litert": runtimes.LiteRTBiLM}
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, f"bilm{KINDS[runtime].suffix}")
        if not quiet:
            print(
                f"exporting the biLM to {runtime} ({precision}) for "
                f"--runtime {runtime}; this can take a minute ...",
                flush=True,
            )
        started = time.monotonic()
        write(bilm, path, precision=precision)
        if not quiet:
            print(f"exported in {time.monotonic() - started:.0f} s")
        # Both runtimes hold the model once loaded; the file can go.
        return load[runtime](path)
