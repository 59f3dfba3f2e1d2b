"""`keras-elmo embed` and `keras-elmo dump-token-embeddings`: each parses
its flags and calls the library function of its name
(`keras_elmo.embed`, `keras_elmo.dump_token_embeddings`; for an exported
`.onnx` / `.tflite` file their twins in `elmo_core.embedding_files`,
without Keras)."""

import contextlib
import json
import os
import shutil
import stat
import sys
import tempfile

from elmo_core.embedding_files.runtime_dump import EMBED_RUNTIMES
from elmo_core.errors import KerasElmoError
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
from keras_elmo_cli.arguments import library_arguments
from keras_elmo_cli.arguments import output_path
from keras_elmo_cli.arguments import positive_int
from keras_elmo_cli.arguments import source_arguments

# The library's names of what these commands' flags give, where no flag
# has the name as its destination.
_ARGUMENT_FLAGS = {"model_file": "--model"}


def add_parser(commands):
    from elmo_core.embedding_files import hdf5_layout as dump
    from elmo_core.text.lines import ON_BAD_LINE

    embed = commands.add_parser(
        "embed",
        help="write the biLM layers of each sentence of a text file to hdf5",
        description="Reads one sentence a line (UTF-8, .gz allowed; each "
        "line in its normal form, split by --tokenize: as written by "
        "default) and writes hdf5 dataset str(i) for line i "
        "(from 0), float32 (num_layers + 1, n_i, 2 * projection_dim) "
        "(--top, --average: one layer), and "
        f"'{dump.SENTENCE_INDEX}' (JSON: sentence -> dataset key): the "
        "layout of `allennlp elmo`. Stateless: each sentence starts from a "
        "zero state. The output is written to OUTPUT.partial and renamed "
        "when complete. A protein FASTA file (.fasta, .fa, .faa, .fas, also "
        ".gz; or --input-format fasta) gives groups per_residue and "
        "per_protein of a dataset per record id, and id_to_hash (JSON: id "
        "-> md5 of the sequence; a sequence under several ids is embedded "
        "once). Runs keras_elmo.embed.",
    )
    add_bilm_source(embed, vocabulary="vocabulary")
    io = embed.add_argument_group("input and output")
    io.add_argument(
        "--input",
        dest="input_file",
        metavar="INPUT",
        action=OneValue,
        required=True,
        help="sentences, one a line, or a protein FASTA file (a path, "
        "never a pattern); - (or /dev/stdin) reads standard "
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
        dest="sentence_index",
        action="store_false",
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
        "the vocabulary. Runs keras_elmo.dump_token_embeddings.",
    )
    add_bilm_source(tokens, vocabulary="vocabulary")
    io = tokens.add_argument_group("input and output")
    io.add_argument(
        "--vocab",
        dest="vocab_file",
        metavar="VOCAB",
        required=True,
        help="one token a line",
    )
    _add_output(io, dump.DEFAULT_TOKEN_BATCH, "tokens")
    add_quiet(tokens, QUIET_DONE)
    tokens.set_defaults(
        run=run_dump_token_embeddings,
        argument_flags=_ARGUMENT_FLAGS,
        needs_keras=_unless_exported_file,
    )


def _unless_exported_file(args):
    """`needs_keras`: False when `--model` names an exported file
    (its runtime runs it without Keras or TensorFlow)."""
    from elmo_core.embedding_files import runtime_dump

    return runtime_dump.runtime_of(args.model) is None


def _add_output(group, batch_size, units):
    """`--output` (the hdf5 file) and `--batch-size` (`units` a batch)."""
    group.add_argument(
        "--output",
        dest="output_file",
        metavar="OUTPUT",
        type=output_path,
        required=True,
        help="hdf5 file to write",
    )
    group.add_argument(
        "--batch-size",
        type=positive_int,
        default=batch_size,
        help=f"{units} a batch at most (default %(default)s)",
    )


def _call(args, **given):
    """Calls the library function of the command's name with the biLM the
    flags name and the arguments they give: the one of
    `elmo_core.embedding_files` for an exported file (no Keras), else the
    one of `keras_elmo` (twins, of the same arguments)."""
    from elmo_core import embedding_files
    from elmo_core.embedding_files import runtime_dump

    name = args.command.replace("-", "_")
    source = source_arguments(args, "source")
    if runtime_dump.runtime_of(source["source"]) is not None:
        function = getattr(embedding_files, name)
    else:
        import keras_elmo

        function = getattr(keras_elmo, name)
    values = library_arguments(args, function)
    values.update(source, **given)
    return function(**values)


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
    with _input_file(args.input_file) as input_file:
        count = _call(args, input_file=input_file)
    _report(count, args)


def _report(count, args):
    """The closing line (not with --quiet), and the records left out
    (always)."""
    from elmo_core.proteins.fasta import input_format_of

    output = args.output_file
    fasta = input_format_of([args.input_file], args.input_format)
    what = "proteins" if fasta == "fasta" else "sentences"
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
    count = _call(args)
    if not args.quiet:
        print(f"Wrote {count} token embeddings to {args.output_file}")


def add_runtime_arguments(parser):
    """`--runtime` and `--precision`, for commands that run a biLM."""
    group = parser.add_argument_group("runtime")
    group.add_argument(
        "--runtime",
        choices=EMBED_RUNTIMES,
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
