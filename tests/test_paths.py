"""Paths that are not regular files (issue 24, class 4), standard input
and output, and the backend of the command line (class 7).

What lies at a path is checked before anything opens it (a FIFO would
block, `/dev/zero` never ends), by one helper (`elmo_core.files.paths`) that
every reader of a user path asks; the command line reads standard input
as `embed --input -`, refuses `-` and devices as outputs, ends quietly
when its reader closes standard output, and runs Keras on the backend
Keras is set to (KERAS_BACKEND), never another.
"""

import contextlib
import hashlib
import io
import os
import subprocess
import sys
import threading

import h5py
import numpy as np
import pytest

from elmo_core.errors import InputPathError
from elmo_core.errors import MissingInputError
from elmo_core.files.paths import check_input_directory
from elmo_core.files.paths import check_input_file
from keras_elmo_cli import main
from tests.helpers import MODEL_DIR
from tests.helpers import OPTIONS
from tests.helpers import TRAIN_TEXT
from tests.helpers import WEIGHTS
from tests.helpers import subprocess_env
from tests.hostile_files import special_paths

SENTENCES = "the cat sat\nhello world\n\nna\u00efve caf\u00e9\n"
# What each special path is, in the words of the error.
KINDS = {
    "fifo": "is a pipe (FIFO)",
    "loop": "is a symbolic link loop",
    "broken_link": "is a broken symbolic link",
    "folder": "is a directory",
    "dev_zero": "is a character device",
    "dev_null": "is a character device",
}


@pytest.fixture
def special(tmp_path):
    """The special paths, and a guard: should a reader open the FIFO, a
    writer comes after 30 s and closes it, so that the test fails instead
    of hanging."""
    paths = special_paths(str(tmp_path))
    done = threading.Event()

    def unblock():
        while not done.wait(30):
            with contextlib.suppress(OSError):
                os.close(os.open(paths["fifo"], os.O_WRONLY | os.O_NONBLOCK))

    threading.Thread(target=unblock, daemon=True).start()
    yield paths
    done.set()


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _run(argv, capsys, inputs=()):
    """`main(argv)`: (status, stderr); the `inputs` are byte-identical
    after."""
    before = {path: _digest(path) for path in inputs}
    status = main(argv)
    after = {path: _digest(path) for path in inputs}
    assert after == before
    return status, capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(KINDS))
def test_check_input_file_says_what_lies_there(special, name):
    error = MissingInputError if name == "broken_link" else InputPathError
    with pytest.raises(error) as raised:
        check_input_file(special[name], "Options file")
    message = str(raised.value)
    assert message.startswith(f"Options file {special[name]}")
    assert KINDS[name] in message


def test_check_input_passes_files_folders_and_links(tmp_path, special):
    link = tmp_path / "link.json"
    link.symlink_to(OPTIONS)
    assert check_input_file(link, "Options file") == str(link)
    assert check_input_directory(MODEL_DIR, "Model folder") == MODEL_DIR
    with pytest.raises(MissingInputError, match="not found: /nowhere/x"):
        check_input_file("/nowhere/x", "Options file")
    with pytest.raises(InputPathError, match="is a regular file"):
        check_input_directory(OPTIONS, "Model folder")
    with pytest.raises(InputPathError, match="is a pipe"):
        check_input_directory(special["fifo"], "Model folder")


def _embed(tmp_path, **flags):
    sentences = tmp_path / "sentences.txt"
    if not sentences.exists():
        sentences.write_text(SENTENCES, encoding="utf-8")
    values = {
        "--options": OPTIONS,
        "--weights": WEIGHTS,
        "--input": str(sentences),
        "--output": str(tmp_path / "out.hdf5"),
        **flags,
    }
    argv = ["embed", "--quiet"]
    for flag, value in values.items():
        argv += [flag, value]
    return argv


# (flag, special path, words the error adds)
READER_CASES = [
    ("--options", "fifo", "Options file"),
    ("--options", "dev_zero", "Options file"),
    ("--options", "loop", "Options file"),
    ("--options", "broken_link", "Options file"),
    ("--weights", "fifo", "Weight file"),
    ("--weights", "dev_null", "Weight file"),
    ("--input", "loop", "--input "),
    ("--input", "broken_link", "--input "),
    ("--input", "fifo", "--input - <"),
    ("--input", "dev_zero", "--input - <"),
]


@pytest.mark.parametrize("flag, name, words", READER_CASES)
def test_embed_refuses_what_is_not_a_file(
    tmp_path, special, capsys, flag, name, words
):
    argv = _embed(tmp_path, **{flag: special[name]})
    status, err = _run(argv, capsys, [OPTIONS, WEIGHTS])
    assert status == 2
    assert "keras-elmo embed: error: " in err
    assert special[name] in err and words in err
    assert KINDS[name].replace("is ", "") in err
    assert "Traceback" not in err
    assert not os.path.exists(tmp_path / "out.hdf5")


def test_other_readers_refuse_what_is_not_a_file(tmp_path, special, capsys):
    vocab = ["--vocab", special["dev_zero"]]
    argv = ["dump-token-embeddings", "--model", MODEL_DIR, *vocab]
    status, err = _run([*argv, "--output", str(tmp_path / "t.h5")], capsys)
    assert status == 2 and f"{special['dev_zero']} is a character" in err
    argv = ["train", "--train", special["fifo"], "--vocab", OPTIONS]
    status, err = _run([*argv, "--output", str(tmp_path / "run")], capsys)
    assert status == 2 and f"{special['fifo']} is a pipe (FIFO)" in err
    argv = ["evaluate", "--model", special["loop"], "--data", OPTIONS]
    status, err = _run(argv, capsys)
    assert status == 2 and f"{special['loop']}" in err
    assert "Traceback" not in err


def test_outputs_refuse_devices_and_standard_output(tmp_path, capsys):
    status, err = _run(_embed(tmp_path, **{"--output": "/dev/null"}), capsys)
    assert status == 2
    assert "--output is a character device" in err
    assert "Received: --output /dev/null." in err
    status, err = _run(_embed(tmp_path, **{"--output": "-"}), capsys)
    assert status == 2 and "'-' (standard output) cannot take it" in err
    assert os.path.exists("/dev/null") and not os.path.exists("-")


def _layers(path):
    with h5py.File(path, "r") as f:
        return {k: f[k][...] for k in f if k != "sentence_to_index"}


def test_embed_reads_standard_input(tmp_path, capsys, monkeypatch):
    argv = _embed(tmp_path)
    assert main(argv) == 0
    from_file = _layers(tmp_path / "out.hdf5")
    stdin = io.TextIOWrapper(io.BytesIO(SENTENCES.encode("utf-8")))
    monkeypatch.setattr(sys, "stdin", stdin)
    piped = str(tmp_path / "piped.hdf5")
    assert main(_embed(tmp_path, **{"--input": "-", "--output": piped})) == 0
    from_stdin = _layers(piped)
    assert sorted(from_stdin) == sorted(from_file) == ["0", "1", "2", "3"]
    for key, values in from_file.items():
        np.testing.assert_array_equal(from_stdin[key], values)
    # /dev/stdin is standard input too.
    stdin = io.TextIOWrapper(io.BytesIO(SENTENCES.encode("utf-8")))
    monkeypatch.setattr(sys, "stdin", stdin)
    named = str(tmp_path / "named.hdf5")
    argv = _embed(tmp_path, **{"--input": "/dev/stdin", "--output": named})
    assert main(argv) == 0
    for key, values in _layers(named).items():
        np.testing.assert_array_equal(values, from_file[key])
    # A bad line is named as a line of standard input.
    bad = io.TextIOWrapper(io.BytesIO(b"fine\nna\xefve\n"))
    monkeypatch.setattr(sys, "stdin", bad)
    status, err = _run(_embed(tmp_path, **{"--input": "-"}), capsys)
    assert status == 2
    assert "standard input (--input -), line 2: not valid UTF-8" in err


def _child(argv, stdout=subprocess.PIPE, **env):
    return subprocess.run(
        [sys.executable, "-m", "keras_elmo_cli", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        env=subprocess_env(**env),
    )


def test_a_closed_standard_output_ends_quietly(tmp_path):
    read, write = os.pipe()
    os.close(read)  # the reader is gone, as after `| head`
    try:
        ran = _child(["presets"], stdout=write, KERAS_ELMO_HOME=str(tmp_path))
    finally:
        os.close(write)
    assert ran.stderr == ""
    assert ran.returncode == 141  # 128 + SIGPIPE, as the shell says of ls


@pytest.mark.parametrize("backend", ["torch"])
def test_commands_run_on_the_backend_keras_is_set_to(tmp_path, backend):
    # embed runs on it, as the layers do; train needs TensorFlow and says
    # how to get it. The user's KERAS_BACKEND is never set aside.
    argv = _embed(tmp_path)
    assert main(argv) == 0
    expected = _layers(tmp_path / "out.hdf5")
    output = str(tmp_path / f"{backend}.hdf5")
    argv[argv.index("--output") + 1] = output
    ran = _child(argv, KERAS_BACKEND=backend)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == ""
    for key, values in _layers(output).items():
        np.testing.assert_allclose(values, expected[key], atol=1e-5)
    train = ["train", "--train", TRAIN_TEXT, "--build-vocab", "--steps",
             "1", "--output", str(tmp_path / "run")]  # fmt: skip
    ran = _child(train, KERAS_BACKEND=backend)
    assert ran.returncode == 2
    assert "runs on the TensorFlow backend only" in ran.stderr
    assert "KERAS_BACKEND=tensorflow" in ran.stderr
    assert "Traceback" not in ran.stderr
