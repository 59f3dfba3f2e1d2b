"""The library speaks Python; the command line translates (issue 25).

Outside `keras_elmo/cli/`, no string of the package names a command-line
flag: messages name Python arguments (`init_from`) and errors carry the
argument. The command line's one catch (`keras_elmo_cli.messages`) shows
them as the flags of the command that ran. The same mistake reads in
Python names from Python and in flags from the command line.
"""

import argparse
import ast
import os
import re

import pytest

import keras_elmo
from elmo_core.errors import NOT_GIVEN
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_number
from elmo_core.errors import compose
from elmo_core.errors.shown import SHOWN_CHARACTERS
from elmo_core.errors.shown import SHOWN_STRING_CHARACTERS
from elmo_core.ids.vocabulary import Vocabulary
from elmo_core.settings.training_config import TrainingConfig
from keras_elmo_cli import build_parser
from keras_elmo_cli import main
from keras_elmo_cli.messages import command_line_message
from keras_elmo_cli.messages import flags_of
from tests.helpers import FIXTURES
from tests.helpers import TINY_TRAIN_FLAGS

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "keras_elmo")
FLAG = re.compile(r"(?<![\w-])--[a-z]")
# "path:line" -> why a flag may stand in a string there (text about
# another program's flags, say).
ALLOWED = {
    "keras_elmo/beam/pipeline_options.py:24": "Apache Beam's own option",
    "keras_elmo/beam/pipeline_options.py:25": "Apache Beam's own help",
}
DATA = os.path.join(FIXTURES, "train", "data.txt")
VOCAB = os.path.join(FIXTURES, "train", "vocab.txt")


def _string_lines(text, pattern):
    """The line numbers of `text` (Python source) whose string literals,
    docstrings left out, match `pattern`."""
    tree = ast.parse(text)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(
            node,
            (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef),
        ):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(
                first.value, ast.Constant
            ):
                docstrings.add(id(first.value))
    lines = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            segment = ast.get_source_segment(text, node) or node.value
            for offset, line in enumerate(segment.splitlines()):
                if pattern.search(line):
                    lines.add(node.lineno + offset)
    return sorted(lines)


def _flag_lines(text):
    """The line numbers of `text` whose strings name a command-line flag."""
    return _string_lines(text, FLAG)


def _library_files(skip=("cli",)):
    for directory, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d not in (*skip, "__pycache__")]
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(directory, name)


def test_the_flag_finder_finds_flags_in_messages_only():
    source = (
        '"""A docstring may say --model."""\n'
        "# so may a comment: --model\n"
        'def f(x):\n    raise ValueError(\n        "bad"\n'
        '        f" --init-from {x}")\n'
        "y = 'a-b and x--y'\n"
    )
    assert _flag_lines(source) == [6]


def test_no_library_message_names_a_flag():
    found = []
    for path in _library_files():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        relative = os.path.relpath(path, os.path.dirname(PACKAGE))
        for line in _flag_lines(text):
            if f"{relative}:{line}" not in ALLOWED:
                found.append(f"{relative}:{line}")
    assert not found, (
        "messages outside keras_elmo/cli/ name command-line flags (name the "
        f"Python argument in backticks instead): {found}"
    )


# === The translation ===


def _flags(**argument_flags):
    """The flags of `keras-elmo train`, and `argument_flags`."""
    parser = build_parser().commands["train"]
    args = argparse.Namespace(argument_flags=argument_flags)
    return flags_of(parser, args)


def test_flags_come_from_the_parsers_and_the_explicit_names():
    flags = _flags(output_dir="--output")
    assert flags["init_from"] == "--init-from"
    assert flags["learning_rate_schedule"] == "--lr-schedule"
    assert flags["size"] == "--size"  # --size and --preset: the first
    assert flags["output_dir"] == "--output"
    assert flags["validate_every"] == "--validate-every"
    assert "train_files" not in flags  # only what the command says


def test_train_names_its_own_arguments_whatever_its_steps_call_them(
    tmp_path,
):
    # The vocabulary builder calls it `max_size`; keras_elmo.train calls it
    # `max_vocab_size`, and the command, whose flags give train's
    # arguments, --max-vocab-size.
    with pytest.raises(KerasElmoError) as raised:
        keras_elmo.train(DATA, str(tmp_path / "run"), build_vocab=True,
                         max_vocab_size=0, steps=1, verbose=0)  # fmt: skip
    assert raised.value.argument == "max_vocab_size"
    assert "`max_size`" not in raised.value.message
    flags = flags_of(
        build_parser().commands["train"],
        build_parser().parse_args(
            ["train", "--train", DATA, "--output", "x", "--build-vocab"]
        ),
    )
    assert flags["max_vocab_size"] == "--max-vocab-size"
    assert flags["output"] == "--output" and flags["train"] == "--train"


def test_argument_names_become_flags():
    error = KerasElmoError(
        "`init_from` is no biLM source; give `output_dir` elsewhere "
        "(options.json `lstm.dim` and `stateful` stay).",
        "init_from",
        received="x",
    )
    assert command_line_message(error, _flags(output_dir="--output")) == (
        "--init-from is no biLM source; give --output elsewhere "
        "(options.json `lstm.dim` and `stateful` stay). Received: "
        "--init-from x."
    )


def test_the_text_of_a_message_is_never_parsed():
    # A message may show a value in its own words ("init_from='x'" in a
    # config); only the fields make the "Received:" tail.
    error = KerasElmoError(
        "`init_from` reads characters (init_from='x' in its config).",
        "init_from",
        received="my run",
    )
    assert command_line_message(error, _flags()) == (
        "--init-from reads characters (init_from='x' in its config). "
        "Received: --init-from 'my run'."
    )


def test_an_error_that_does_not_name_its_argument_gets_its_flag():
    error = KerasElmoError("must be a multiple of 2.", "learning_rate_schedule")
    assert command_line_message(error, _flags()) == (
        "--lr-schedule: must be a multiple of 2."
    )


def test_an_error_without_argument_is_shown_as_it_is():
    # config.json's keys are spelled like arguments; they are not flags.
    error = KerasElmoError("run/config.json: `init_from` must be a string.")
    assert command_line_message(error, _flags()) == str(error)


def test_an_error_composes_its_text_from_its_fields():
    error = KerasElmoError(
        "`init_from` is no biLM source; give `output_dir` elsewhere.",
        "init_from",
        received="my run/x",
    )
    assert str(error) == (
        "`init_from` is no biLM source; give `output_dir` elsewhere. "
        "Received: init_from='my run/x'."
    )
    assert command_line_message(error, _flags(output_dir="--output")) == (
        "--init-from is no biLM source; give --output elsewhere. "
        "Received: --init-from 'my run/x'."
    )


def test_the_fields_survive_pickling():
    import pickle

    from elmo_core.embedding_files.sentences import BadLine
    from elmo_core.errors import MissingInputError

    error = pickle.loads(
        pickle.dumps(KerasElmoError("`units` bad.", "units", received=0))
    )
    assert (error.argument, error.received, str(error)) == (
        "units",
        0,
        "`units` bad. Received: units=0.",
    )
    line = pickle.loads(pickle.dumps(BadLine("empty", "no tokens")))
    assert (line.reason, str(line)) == ("empty", "no tokens")
    missing = pickle.loads(pickle.dumps(MissingInputError("gone.", "x")))
    assert isinstance(missing, FileNotFoundError)
    assert (missing.argument, str(missing)) == ("x", "gone.")


def test_a_hostile_value_is_shown_within_bounds_on_both_sides():
    # A string (a path) is shown whole up to SHOWN_STRING_CHARACTERS;
    # anything else in SHOWN_CHARACTERS.
    error = KerasElmoError("`model` bad.", "model", received="a" * 10_000)
    assert len(str(error)) < SHOWN_STRING_CHARACTERS + 40
    message = command_line_message(error, {"model": "--model"})
    assert len(message) < SHOWN_STRING_CHARACTERS + 40
    assert "--model aaa" in message
    error = KerasElmoError("`w` bad.", "w", received=[[1.0] * 10**6])
    assert len(str(error)) < SHOWN_CHARACTERS + 30
    path = "/data/" + "x" * 200 + "/corpus.txt"
    error = KerasElmoError("`inputs` bad.", "inputs", received=path)
    assert str(error).endswith(f"Received: inputs={path!r}.")


def test_the_checks_carry_the_argument_as_data():
    with pytest.raises(KerasElmoError) as raised:
        check_number(float("nan"), "dropout", minimum=0.0)
    error = raised.value
    assert error.argument == "dropout"
    assert error.expected == "a finite number >= 0.0"
    assert str(error) == (
        "`dropout` must be a finite number >= 0.0. Received: dropout=nan."
    )
    assert command_line_message(error, {"dropout": "--dropout"}) == (
        "--dropout must be a finite number >= 0.0. Received: --dropout nan."
    )
    # A name that is no argument (a file's key) is given as `where`.
    with pytest.raises(KerasElmoError) as raised:
        check_number("x", where="options.json `lstm.cell_clip`")
    assert raised.value.argument is None
    assert str(raised.value) == (
        "options.json `lstm.cell_clip` must be a finite number. Received: 'x'."
    )


# === One mistake, from Python and from the command line ===


def test_a_python_call_names_the_python_argument(tmp_path):
    from keras_elmo.training.fit import fit_run
    from keras_elmo.training.fit_options import FitOptions

    config = TrainingConfig(train_files=[DATA], bilm={}, vocabulary_size=9)
    with pytest.raises(KerasElmoError) as raised:
        fit_run(
            str(tmp_path / "run"),
            config,
            Vocabulary.from_file(VOCAB),
            FitOptions(steps=1, validate_every=2),
        )
    message = str(raised.value)
    assert raised.value.argument == "validate_every"
    assert "`validate_every` needs held-out files" in message
    assert "give `validation_files`" in message
    assert "Received: validate_every=2." in message
    assert not FLAG.search(message), message
    assert not os.path.exists(tmp_path / "run")


def test_the_command_line_names_the_flag(tmp_path, capsys):
    argv = [
        "train", "--train", DATA, "--vocab", VOCAB, "--quiet",
        *TINY_TRAIN_FLAGS, "--output", str(tmp_path / "run"),
        "--steps", "1", "--validate-every", "2",
    ]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-elmo train: error: --validate-every needs")
    assert "give --validation, or leave --validate-every out" in err
    assert "Received: --validate-every 2." in err
    assert "validate_every" not in err
    assert not os.path.exists(tmp_path / "run")


# === One form: "message. Received: argument=value." composed from fields ===

# A value received, written into a message by hand ("Received: x=1",
# "must be 1; received 2", "ScalarMix received a list").
HAND_WRITTEN = re.compile(r"\breceived\b", re.IGNORECASE)
# The two places that compose the tail from an error's fields.
COMPOSERS = ("keras_elmo/errors/kinds.py", "keras_elmo/cli/messages.py")


def test_the_tail_finder_finds_tails_written_by_hand():
    source = (
        '"""A docstring may say what it received."""\n'
        "def f(x):\n"
        '    raise KerasElmoError(f"`x` must be 1; received {x}.")\n'
        "def g(x):\n"
        '    raise KerasElmoError("`x` must be 1.", "x", received=x)\n'
        "def h(x):\n"
        '    raise TypeError(\n        "bad."\n        f" Received: x={x}")\n'
    )
    assert _string_lines(source, HAND_WRITTEN) == [3, 9]


def test_no_message_writes_its_own_received_tail():
    found = []
    for path in _library_files(skip=()):
        relative = os.path.relpath(path, os.path.dirname(PACKAGE))
        if relative.replace(os.sep, "/") in COMPOSERS:
            continue
        with open(path, encoding="utf-8") as f:
            lines = _string_lines(f.read(), HAND_WRITTEN)
        found += [f"{relative}:{line}" for line in lines]
    assert not found, (
        "messages that write the value received themselves; pass it as the "
        "error's `received=` (or, for an exception outside the family, "
        f"compose the text with elmo_core.errors.compose): {found}"
    )


def _mistakes(tmp_path):
    """(call, the CLI flag of its argument or None): real mistakes, from
    the checks to the layers, the loader, the files and the trainer."""
    import keras_elmo
    from elmo_core.characters import check_filters
    from elmo_core.errors import check_integer
    from elmo_core.files import check_output_file
    from elmo_core.settings.time_budget import parse_duration
    from keras_elmo.layers import BiLM
    from keras_elmo.layers import ScalarMix
    from keras_elmo.training.strategies import read_tf_config

    return [
        (lambda: check_integer(0, "units", minimum=1), "--units"),
        (lambda: check_integer(0, where="options.json `dim`", minimum=1), None),
        (lambda: BiLM(units=0), "--units"),
        (lambda: BiLM(units=8, projection_dim=16), "--projection-dim"),
        (lambda: check_filters([[0, 4]], 50), "--filters"),
        (lambda: ScalarMix()([]), None),
        (lambda: parse_duration("soon"), "--time-budget"),
        (lambda: read_tf_config("{"), None),
        (lambda: keras_elmo.load_bilm(3), "--model"),
        (lambda: keras_elmo.load_bilm(str(tmp_path / "none")), "--model"),
        (lambda: check_output_file(tmp_path, argument="output"), "--output"),
        (
            lambda: TrainingConfig(
                train_files=[DATA], bilm={}, vocabulary_size=2
            ),
            "--max-vocab",
        ),
    ]


def test_every_received_value_ends_its_message_in_one_form(tmp_path):
    flags = {
        "units": "--units",
        "projection_dim": "--projection-dim",
        "filters": "--filters",
        "time_budget": "--time-budget",
        "source": "--model",
        "output": "--output",
        "vocabulary_size": "--max-vocab",
    }
    for call, flag in _mistakes(tmp_path):
        with pytest.raises(KerasElmoError) as raised:
            call()
        error = raised.value
        text = str(error)
        assert error.received is not NOT_GIVEN, text
        assert not HAND_WRITTEN.search(error.message), text
        assert text == compose(error.message, error.argument, error.received)
        assert text.count("Received: ") == 1 and text.endswith("."), text
        name = f"{error.argument}=" if error.argument else ""
        assert f". Received: {name}" in text, text
        on_the_command_line = command_line_message(error, flags)
        if flag is not None:
            assert f"Received: {flag} " in on_the_command_line, text
        assert on_the_command_line.count("Received: ") == 1


def test_a_sentence_for_a_batch_is_refused_in_the_one_form():
    # Once a TypeError composed with `compose`; now a KerasElmoError (the
    # fuzz test accepts only the family), its text unchanged.
    from elmo_core.characters import batch_to_ids

    with pytest.raises(KerasElmoError) as raised:
        batch_to_ids("Hello world")
    assert str(raised.value).endswith(
        'Split each sentence first, e.g. [["Hello", "world"], ["Hi"]]. '
        "Received: sentences='Hello world'."
    )
