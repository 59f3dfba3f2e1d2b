"""No command writes over, or into, anything it reads (issue 24, class 1).

For every command that writes and every kind of biLM source (an official
pair, an export folder, a word export with its vocab.txt, a training run
with its checkpoint, an ELMoForManyLangs folder with its pickles, a .keras
file) and the input text: each file the command reads, given as its
output, is refused before any work with exit status 2 and a message naming
it, and every file is byte-identical afterwards. So are outputs inside an
input folder, directory outputs that hold an input, and outputs that reach
an input through a symbolic or a hard link.
"""

import hashlib
import os
import shutil

import pytest

from keras_elmo_cli import main
from tests.helpers import FIXTURES
from tests.helpers import MODEL_DIR

ROOT = os.path.dirname(FIXTURES)
WORDS = os.path.join(ROOT, "bilm-tf-words", "model")
EFML = os.path.join(ROOT, "elmo_for_many_langs", "char_model")
COMPAT = os.path.join(ROOT, "compat")


def _copy(source, target, names=None):
    os.makedirs(target)
    for name in names or os.listdir(source):
        path = os.path.join(source, name)
        if os.path.isdir(path):
            shutil.copytree(path, os.path.join(target, name))
        else:
            shutil.copy(path, os.path.join(target, name))
    return target


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """`{kind: (source flags, folder)}` and the text inputs, copied."""
    root = str(tmp_path_factory.mktemp("inputs_kept"))
    pair = _copy(MODEL_DIR, os.path.join(root, "pair"), ["options.json"])
    shutil.copy(os.path.join(MODEL_DIR, "lm_weights.hdf5"), pair)
    export = _copy(pair, os.path.join(root, "export"))
    words = _copy(WORDS, os.path.join(root, "words"))
    run = _copy(os.path.join(COMPAT, "run"), os.path.join(root, "run"))
    efml = _copy(EFML, os.path.join(root, "efml"))
    keras_dir = _copy(COMPAT, os.path.join(root, "keras"), ["characters.keras"])
    text_dir = os.path.join(root, "text")
    os.makedirs(text_dir)
    text = os.path.join(text_dir, "sentences.txt")
    with open(text, "w", encoding="utf-8") as f:
        f.write("the cat sat\nhello world\n")
    vocab = os.path.join(text_dir, "vocab.txt")
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("the\ncat\n")
    options = os.path.join(pair, "options.json")
    weights = os.path.join(pair, "lm_weights.hdf5")
    sources = {
        "pair": (["--options", options, "--weights", weights], pair),
        "export": (["--model", export], export),
        "words": (["--model", words], words),
        "run": (["--model", run], run),
        "efml": (["--model", efml], efml),
        "keras": (
            ["--model", os.path.join(keras_dir, "characters.keras")],
            keras_dir,
        ),
    }
    return dict(root=root, sources=sources, text=text, vocab=vocab)


def _files(folder):
    return sorted(
        os.path.join(directory, name)
        for directory, _, names in os.walk(folder)
        for name in names
    )


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _digests(work):
    return {path: _digest(path) for path in _files(work["root"])}


def _refused(work, argv, capsys, words):
    """Runs `argv`: exit status 2, an error with `words`, no traceback, and
    every file of every source byte-identical (none added)."""
    before = _digests(work)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error: --output" in err and "Traceback" not in err
    for word in words:
        assert word in err, err
    assert _digests(work) == before


# Commands that write a file: argv after the source flags, by output.
FILE_COMMANDS = {
    "embed": lambda w, out: ["--input", w["text"], "--output", out],
    "dump-token-embeddings": lambda w, out: [
        "--vocab",
        w["vocab"],
        "--output",
        out,
    ],
    "export-onnx": lambda w, out: ["--output", out],
    "export-litert": lambda w, out: ["--output", out],
}
# Commands that write a folder.
DIRECTORY_COMMANDS = {
    "export-savedmodel": lambda w, out: ["--output", out],
    "train": lambda w, out: [
        "--train",
        w["text"],
        "--build-vocab",
        "--steps",
        "1",
        "--output",
        out,
    ],
}
SOURCE_KINDS = ("pair", "export", "words", "run", "efml", "keras")
# The kinds whose source is a folder (a pair and a .keras file are files:
# a new file beside them is no input).
FOLDER_KINDS = ("export", "words", "run", "efml")


def _source_argv(command, work, kind):
    flags, _ = work["sources"][kind]
    if command == "train":
        # train starts from a source with --init-from.
        if kind == "pair":
            return ["--init-from", f"{flags[1]},{flags[3]}"]
        return ["--init-from", flags[1]]
    return list(flags)


@pytest.mark.parametrize("kind", SOURCE_KINDS)
@pytest.mark.parametrize("command", sorted(FILE_COMMANDS))
def test_no_file_of_a_source_can_be_a_file_output(work, capsys, command, kind):
    _, folder = work["sources"][kind]
    targets = _files(folder)
    assert targets  # the source has files to protect
    if command == "embed":
        targets.append(work["text"])
    if command == "dump-token-embeddings":
        targets.append(work["vocab"])
    for target in targets:
        argv = [command, *_source_argv(command, work, kind)]
        argv += FILE_COMMANDS[command](work, target)
        _refused(work, argv, capsys, [target, "is also an input"])


@pytest.mark.parametrize("kind", FOLDER_KINDS)
@pytest.mark.parametrize("command", sorted(FILE_COMMANDS))
def test_no_output_goes_into_a_source_folder(work, capsys, command, kind):
    _, folder = work["sources"][kind]
    target = os.path.join(folder, "checkpoint" if kind == "run" else "")
    target = os.path.join(target, "new.out")
    argv = [command, *_source_argv(command, work, kind)]
    argv += FILE_COMMANDS[command](work, target)
    _refused(work, argv, capsys, [target, "lies inside"])


@pytest.mark.parametrize("kind", SOURCE_KINDS)
@pytest.mark.parametrize("command", sorted(DIRECTORY_COMMANDS))
def test_no_folder_output_is_holds_or_enters_a_source(
    work, capsys, command, kind
):
    _, folder = work["sources"][kind]
    # A run is read from its files and checkpoint folder (what is made
    # from it may go beside them, see test_export_weights_into_its_run).
    inner = os.path.join(folder, "checkpoint" if kind == "run" else "")
    cases = [
        (folder, None),
        (os.path.dirname(folder), "holds"),
        (os.path.join(inner, "new"), "lies inside"),
    ]
    if kind not in FOLDER_KINDS:
        # The source is files in `folder`, which holds them.
        cases = [(folder, "holds"), cases[1]]
    for target, words in cases:
        argv = [command, *_source_argv(command, work, kind)]
        argv += DIRECTORY_COMMANDS[command](work, target)
        expected = [target]
        if words is not None:
            expected.append(words)
        _refused(work, argv, capsys, expected)


def test_export_weights_keeps_its_run(work, capsys):
    run = work["sources"]["run"][1]
    for target, words in [
        (run, "holds"),
        (os.path.join(run, "checkpoint"), "is also an input"),
        (work["root"], "holds"),
    ]:
        argv = ["export-weights", "--model", run, "--output", target]
        _refused(work, argv, capsys, [target, words])


def test_export_weights_into_its_run(work, tmp_path):
    # The documented layout (`--output RUN/export`): beside what the run
    # is read from, which stays as it was.
    run = str(tmp_path / "run")
    shutil.copytree(work["sources"]["run"][1], run)
    before = {path: _digest(path) for path in _files(run)}
    target = os.path.join(run, "export")
    assert main(["export-weights", "--model", run, "--output", target]) == 0
    assert os.path.isfile(os.path.join(target, "weights.hdf5"))
    after = {path: _digest(path) for path in _files(run)}
    assert {k: v for k, v in after.items() if k in before} == before


def test_train_keeps_its_text_and_vocabulary(work, capsys):
    text_dir = os.path.dirname(work["text"])
    argv = ["train", "--train", work["text"], "--vocab", work["vocab"]]
    argv += ["--steps", "1", "--output", text_dir]
    _refused(work, argv, capsys, [text_dir, "holds"])


def test_links_reach_the_file_they_name(work, capsys, tmp_path):
    pair_flags, pair = work["sources"]["pair"]
    weights = pair_flags[3]
    hard = os.path.join(work["root"], "hard_link.hdf5")
    os.link(weights, hard)
    soft = os.path.join(work["root"], "soft_link")
    os.symlink(pair, soft)
    try:
        for target in (hard, os.path.join(soft, "lm_weights.hdf5")):
            argv = ["embed", *pair_flags]
            argv += FILE_COMMANDS["embed"](work, target)
            _refused(work, argv, capsys, [target, "is also an input"])
    finally:
        os.remove(hard)
        os.remove(soft)
