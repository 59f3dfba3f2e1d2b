"""The `keras-elmo` command line.

One module per subcommand (or group of related subcommands), each with
`add_parser(commands)`, which registers its parsers and sets `run`, and the
`run` functions themselves; `COMMANDS` lists them in `--help` order. The
modules parse and delegate: every default and rule lives in the library.

User mistakes (`KerasElmoError` and the OS errors that user paths cause)
are caught here, once, and printed as `keras-elmo CMD: error: ...` with
exit status 2, the library's Python argument names turned into the
command's flags (`keras_elmo.cli.messages`); anything else is a bug and
keeps its traceback. A usage mistake prints the command's one-line usage
and the error, also with exit status 2.

Parsing imports no TensorFlow (`--help`, `--version` and usage errors
answer at once): the parsers read their defaults from modules that do not
import it, and TensorFlow is imported only to run a command.
"""

import argparse
import gc
import gzip
import importlib
import os
import sys
import zipfile

from keras_elmo.cli.examples import epilog
from keras_elmo.cli.messages import command_line_message
from keras_elmo.cli.messages import flags_of
from keras_elmo.errors import KerasElmoError
from keras_elmo.utils.version import __version__

COMMANDS = (
    "keras_elmo.cli.prepare",
    "keras_elmo.cli.embed",
    "keras_elmo.cli.embed_corpus",
    "keras_elmo.cli.train",
    "keras_elmo.cli.distill",
    "keras_elmo.cli.evaluate",
    "keras_elmo.cli.export",
    "keras_elmo.cli.pretrained",
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


def _needs_tensorflow(args):
    """A command's `needs_tensorflow` default: True, False, or a function
    of the parsed arguments (`embed` runs an exported file without it)."""
    needs = getattr(args, "needs_tensorflow", True)
    return needs(args) if callable(needs) else needs


# Modules that `import tensorflow` (and Keras on it) import when they are
# installed, for features a command never uses: TensorFlow Lite's converter
# from JAX functions imports `jax` (2.5 s of a 4.7 s import on an AMD EPYC
# with jax installed), Keras's notebook display of a .keras file imports
# `IPython` (0.45 s). They are hidden for the import only: the names are
# free again afterwards, so a later `import jax` works as usual.
_NOT_NEEDED_AT_IMPORT = ("jax", "IPython")


def _import_tensorflow_quietly():
    """Imports TensorFlow (and Keras) fast and quietly: without the modules
    of `_NOT_NEEDED_AT_IMPORT`, and without TensorFlow's C++ start-up logs
    (oneDNN, CUDA) unless the user set TF_CPP_MIN_LOG_LEVEL: the command
    prints its own lines only.

    TensorFlow 2.21 writes some of those lines before its log level takes
    effect, so standard error is also pointed at /dev/null for the import
    (only; errors later are shown as usual).
    """
    if "tensorflow" in sys.modules:
        return
    hidden = [name for name in _NOT_NEEDED_AT_IMPORT if name not in sys.modules]
    sys.modules.update(dict.fromkeys(hidden))  # None: "not installed"
    try:
        if "TF_CPP_MIN_LOG_LEVEL" in os.environ:
            _import_tensorflow_and_keras()
        else:
            os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
            _with_stderr_discarded(_import_tensorflow_and_keras)
    finally:
        for name in hidden:
            if sys.modules.get(name, "") is None:
                del sys.modules[name]


def _import_tensorflow_and_keras():
    import keras  # noqa: F401
    import tensorflow  # noqa: F401


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
    command's examples (`keras_elmo.cli.examples`), kept as written."""

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
        "trained weights, pretrain on your corpus, export for serving. The "
        "commands run on TensorFlow whatever KERAS_BACKEND says (from "
        "Python, the layers run on JAX and PyTorch too).",
    )
    parser.add_argument(
        "--version", action="version", version=f"keras-elmo {__version__}"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND"
    )
    for name in COMMANDS:
        importlib.import_module(name).add_parser(commands)
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


def _use_tensorflow():
    """Points Keras at TensorFlow for this process, before it is imported.

    The commands are TensorFlow programs (tf.function dumps, tf.data
    training, the exports), so a `KERAS_BACKEND` of `jax` or `torch` in the
    environment is set aside, with a note: it would only turn every command
    into an error. Returns the error message when Keras was imported on
    another backend already (`main` called from such a process), else None.
    """
    chosen = os.environ.get("KERAS_BACKEND", "tensorflow")
    if "keras" in sys.modules:
        backend = sys.modules["keras"].backend.backend()
        if backend != "tensorflow":
            return (
                f"this process runs Keras on {backend!r}; the keras-elmo "
                "commands run on TensorFlow. Run the command in a process "
                "of its own (`keras-elmo ...`)."
            )
        return None
    if chosen != "tensorflow":
        print(
            f"keras-elmo: note: KERAS_BACKEND={chosen} is set aside; the "
            "command line runs on TensorFlow (from Python, the layers run "
            "on every backend).",
            file=sys.stderr,
        )
    os.environ["KERAS_BACKEND"] = "tensorflow"
    return None


def _quiet_stdout():
    """After a reader closed standard output (`keras-elmo presets | head`):
    what is still buffered goes to /dev/null, so that Python's flush at exit
    does not fail a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def command():
    """The `keras-elmo` program (and `python -m keras_elmo.cli`): `main` on
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
    problem = _use_tensorflow()
    if problem is not None:
        print(f"keras-elmo {args.command}: error: {problem}", file=sys.stderr)
        return 2
    if _needs_tensorflow(args):
        _import_tensorflow_quietly()
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
