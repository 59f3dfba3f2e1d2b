"""The `keras-elmo` command line: a thin layer over the library's public
functions (`keras_elmo.train`, `keras_elmo.distill`, the exports,
embedding, `elmo_core.prepare`, ...), which do the work.

One module per subcommand (or group of related subcommands), each with
`add_parser(commands)`, which registers its parsers and sets `run`, and the
`run` functions themselves; `COMMANDS` lists them in `--help` order. The
modules parse and delegate: every default and rule lives in the library.

User mistakes (`KerasElmoError` and the OS errors that user paths cause)
are caught here, once, and printed as `keras-elmo CMD: error: ...` with
exit status 2, the library's Python argument names turned into the
command's flags (`keras_elmo_cli.messages`); anything else is a bug and
keeps its traceback. A usage mistake prints the command's one-line usage
and the error, also with exit status 2.

Parsing imports neither Keras nor TensorFlow (`--help`, `--version` and
usage errors answer at once): the parsers read their defaults from
`elmo_core`, and Keras is imported only to run a command that needs it.
Keras runs on the backend it is set to (`KERAS_BACKEND`, or
`~/.keras/keras.json`); the commands that need TensorFlow (training, the
exports) say so on another one.
"""

import argparse
import gc
import gzip
import json
import os
import sys
import zipfile

from elmo_core.errors import KerasElmoError
from elmo_core.version import __version__
from keras_elmo_cli import distill
from keras_elmo_cli import embed
from keras_elmo_cli import embed_corpus
from keras_elmo_cli import evaluate
from keras_elmo_cli import export
from keras_elmo_cli import prepare
from keras_elmo_cli import pretrained
from keras_elmo_cli import train
from keras_elmo_cli.examples import epilog
from keras_elmo_cli.messages import command_line_message
from keras_elmo_cli.messages import flags_of

# The command modules, in `--help` order.
COMMANDS = (
    prepare,
    embed,
    embed_corpus,
    train,
    distill,
    evaluate,
    export,
    pretrained,
)

# Errors that a user's input or paths cause: reported in a few lines.
# (json.JSONDecodeError and UnicodeDecodeError are ValueErrors that the
# readers turn into KerasElmoErrors naming the file; OSError covers the
# path errors: not found, is a directory, permission denied, disk full.)
USER_ERRORS = (
    KerasElmoError,
    OSError,
    gzip.BadGzipFile,
    zipfile.BadZipFile,
    EOFError,
)


def _needs_keras(args):
    """A command's `needs_keras` default: True, False, or a function of
    the parsed arguments (`embed` runs an exported file without it)."""
    needs = getattr(args, "needs_keras", True)
    return needs(args) if callable(needs) else needs


# Modules that `import tensorflow` (and Keras on it) import when they are
# installed, for features a command never uses: TensorFlow Lite's converter
# from JAX functions imports `jax` (2.5 s of a 4.7 s import on an AMD EPYC
# with jax installed), Keras's notebook display of a .keras file imports
# `IPython` (0.45 s). They are hidden for the import only, and only when
# Keras runs on TensorFlow: the names are free again afterwards, so a later
# `import jax` works as usual.
_NOT_NEEDED_AT_IMPORT = ("jax", "IPython")


def keras_backend():
    """The backend Keras will run on in this process, by Keras's own rule
    (read, never set): `KERAS_BACKEND`, else the `backend` of Keras's
    config file (`$KERAS_HOME/keras.json`, default `~/.keras/keras.json`),
    else "tensorflow"."""
    if "keras" in sys.modules:
        return sys.modules["keras"].backend.backend()
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    home = os.environ.get("KERAS_HOME") or os.path.join(
        os.path.expanduser("~"), ".keras"
    )
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as f:
            backend = json.load(f).get("backend")
    except (OSError, ValueError, AttributeError):
        backend = None
    return backend if isinstance(backend, str) else "tensorflow"


def _import_keras_quietly():
    """Imports Keras (and TensorFlow, its default backend) fast and
    quietly: without the modules of `_NOT_NEEDED_AT_IMPORT` on TensorFlow,
    and without TensorFlow's C++ start-up logs (oneDNN, CUDA) unless the
    user set TF_CPP_MIN_LOG_LEVEL: the command prints its own lines only.

    TensorFlow 2.21 writes some of those lines before its log level takes
    effect, so standard error is also pointed at /dev/null for the import
    (only; errors later are shown as usual).
    """
    if "keras" in sys.modules:
        return
    hidden = []
    if keras_backend() == "tensorflow":
        hidden = [n for n in _NOT_NEEDED_AT_IMPORT if n not in sys.modules]
    sys.modules.update(dict.fromkeys(hidden))  # None: "not installed"
    try:
        if "TF_CPP_MIN_LOG_LEVEL" in os.environ:
            _import_keras()
        else:
            os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
            _with_stderr_discarded(_import_keras)
    finally:
        for name in hidden:
            if sys.modules.get(name, "") is None:
                del sys.modules[name]


def _import_keras():
    import keras  # noqa: F401


def _with_stderr_discarded(function):
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            function()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are two lines: the command's
    one-line usage and the error (argparse's default prints the whole
    usage block, 30 lines for `train`), whose help ends with the
    command's examples (`keras_elmo_cli.examples`), kept as written."""

    def format_help(self):
        examples = epilog(self.prog.partition(" ")[2])
        return super().format_help() + ("\n" + examples if examples else "")

    def actions(self):
        """The parser's arguments (argparse `Action`s), in order."""
        return list(self._actions)

    def error(self, message):
        usage = f"usage: {self.prog} [OPTIONS]"
        if self._subparsers is not None:
            usage = f"usage: {self.prog} COMMAND [OPTIONS]"
        self.exit(
            2,
            f"{usage} (`{self.prog} --help` lists them)\n"
            f"{self.prog}: error: {message}\n",
        )


def build_parser():
    parser = _Parser(
        prog="keras-elmo",
        description="ELMo biLMs in Keras 3: embed text with official or "
        "trained weights, pretrain on your corpus, export for serving. Keras "
        "runs on the backend it is set to (KERAS_BACKEND or "
        "~/.keras/keras.json; TensorFlow unless you chose another); "
        "training and the exports need TensorFlow.",
    )
    parser.add_argument(
        "--version", action="version", version=f"keras-elmo {__version__}"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND"
    )
    for module in COMMANDS:
        module.add_parser(commands)
    parser.commands = commands.choices  # command name -> its parser
    return parser


def _check_values_given(parser, args):
    """An empty value (`--model ''`, an unset variable in a script) is a
    usage error naming its flag: no option takes one, and as a path it
    would name the current directory or nothing."""
    for action in parser.actions():
        value = getattr(args, action.dest, None)
        values = value if isinstance(value, list) else [value]
        if action.option_strings and "" in values:
            parser.error(
                f"argument {action.option_strings[0]}: expected a value, "
                "not an empty one ('')"
            )


def _describe(error, flags):
    if isinstance(error, OSError) and error.filename and error.strerror:
        return f"{error.filename}: {error.strerror}"
    if isinstance(error, EOFError):
        return f"a compressed input ended early ({error}); is it complete?"
    return command_line_message(error, flags)


def _quiet_stdout():
    """After a reader closed standard output (`keras-elmo presets | head`):
    what is still buffered goes to /dev/null, so that Python's flush at exit
    does not fail a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def command():
    """The `keras-elmo` program (and `python -m keras_elmo_cli`): `main` on
    the command line's arguments, and a faster exit.

    When `main` returns, every file was written, closed and renamed into
    place. Python's exit then runs as usual (threads joined, `atexit`
    functions, modules torn down), except that the cycle collector leaves
    the objects alive at that point to the end of the process
    (`gc.freeze`): walking TensorFlow's millions of objects took 1.1 s of
    every exit after `embed` (0.3 s frozen; AMD EPYC).
    """
    status = main()
    gc.freeze()
    sys.exit(status)


def main(argv=None):
    """Runs `keras-elmo ARGV`; returns the exit status.

    A reader that closes standard output early (`| head`) is a normal end,
    as for any command-line tool: no message, exit status 141 (128 +
    SIGPIPE, what the shell reports for `ls | head`).
    """
    try:
        status = _main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return 128 + 13  # SIGPIPE
    return status


def _main(argv):
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        _check_values_given(parser.commands[args.command], args)
    except SystemExit as exit:  # argparse: --help, or a usage error
        return exit.code
    if _needs_keras(args):
        _import_keras_quietly()
    try:
        args.run(args)
    except BrokenPipeError:
        raise
    except USER_ERRORS as error:
        flags = flags_of(parser.commands[args.command], args)
        print(
            f"keras-elmo {args.command}: error: {_describe(error, flags)}",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print(f"keras-elmo {args.command}: interrupted", file=sys.stderr)
        return 130
    return 0
