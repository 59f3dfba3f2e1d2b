"""A full disk or the file-size limit while an hdf5 output is written:
the command says so and exits 2, the previous output is kept whole, and
nothing is left behind (HDF5 itself died with SIGSEGV there).

- the file-size limit for real: `keras-elmo embed` in a child process
  under `RLIMIT_FSIZE`;
- a full disk for real: a 256 KiB tmpfs, mounted in a user and mount
  namespace of its own (`unshare -rm`; large: a second child process);
- a full disk in this process, for every hdf5 writer (`embed`,
  `dump-token-embeddings`, `export-weights`): a file whose writes fail
  with ENOSPC after 20 KB.
"""

import errno
import os
import resource
import shutil
import subprocess
import sys

import pytest

from elmo_core.files import outputs as files
from keras_elmo_cli import main
from tests.helpers import FIXTURES
from tests.helpers import MODEL_DIR
from tests.helpers import subprocess_env

OLD = b"the previous output\n"
RUN = os.path.join(os.path.dirname(FIXTURES), "compat", "run")
# An output of this text takes some 700 KB (200 sentences of 30 tokens).
TEXT = (
    "\n".join(" ".join(f"word{j}" for j in range(30)) for _ in range(200))
    + "\n"
)


def _embed(output, text):
    command = [sys.executable, "-m", "keras_elmo_cli", "embed"]
    return [*command, "--model", MODEL_DIR, "--input", text, "--output",
            output, "--quiet"]  # fmt: skip


def _kept(output):
    with open(output, "rb") as f:
        assert f.read() == OLD
    folder = os.path.dirname(output)
    assert sorted(os.listdir(folder)) == [os.path.basename(output)]


def _limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))


def test_the_file_size_limit_while_embed_writes(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(TEXT)
    out = tmp_path / "out"
    out.mkdir()
    output = str(out / "embeddings.hdf5")
    with open(output, "wb") as f:
        f.write(OLD)
    child = subprocess.run(
        _embed(output, str(text)),
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(),
        preexec_fn=_limit_file_size,
    )
    assert child.returncode == 2, (child.returncode, child.stderr[-2000:])
    assert "the file-size limit (`ulimit -f`) was reached" in child.stderr
    assert "Traceback" not in child.stderr
    _kept(output)


@pytest.mark.large
def test_a_full_disk_while_embed_writes(tmp_path):
    unshare = shutil.which("unshare")
    text = tmp_path / "text.txt"
    text.write_text(TEXT)
    disk = tmp_path / "disk"
    disk.mkdir()
    output = str(disk / "embeddings.hdf5")
    script = (
        f"mount -t tmpfs -o size=256k tmpfs {disk} || exit 77; "
        f"printf 'the previous output\\n' > {output}; "
        + " ".join(_embed(output, str(text)))
        + f"; status=$?; cat {output}; ls {disk}; exit $status"
    )
    child = subprocess.run(
        [unshare or "unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(),
    )
    if unshare is None or child.returncode == 77 or "unshare:" in child.stderr:
        pytest.skip(f"no user and mount namespace here: {child.stderr[:200]}")
    assert child.returncode == 2, child.stderr[-2000:]
    assert "the disk is full (No space left on device)" in child.stderr
    assert child.stdout.splitlines() == [
        OLD.decode().strip(),
        "embeddings.hdf5",
    ]


class _FullDisk(files._GuardedFile):
    """A file on a disk that fills after 20 KB."""

    def __init__(self, path):
        super().__init__(path)
        self.file = _Filling(self.file, 20_000)


class _Filling:
    def __init__(self, file, room):
        self.file, self.room = file, room

    def write(self, data):
        size = memoryview(data).nbytes
        if size > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= size
        return self.file.write(data)

    def __getattr__(self, name):
        return getattr(self.file, name)


@pytest.mark.parametrize("command", ["embed", "dump-token-embeddings",
                                     "export-weights"])  # fmt: skip
def test_every_hdf5_writer_survives_a_full_disk(
    tmp_path, monkeypatch, capsys, command
):
    from tests.helpers import OPTIONS
    from tests.helpers import WEIGHTS

    monkeypatch.setattr(files, "_GuardedFile", _FullDisk)
    text = tmp_path / "text.txt"
    text.write_text(TEXT)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(f"word{j}" for j in range(3000)) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    name = "weights.hdf5" if command == "export-weights" else "out.hdf5"
    output = out / name
    output.write_bytes(OLD)
    source = ["--options", OPTIONS, "--weights", WEIGHTS]
    argv = {
        "embed": ["embed", "--model", MODEL_DIR, "--input", str(text),
                  "--output", str(output), "--quiet"],
        "dump-token-embeddings": ["dump-token-embeddings", *source,
                                  "--vocab", str(vocab), "--output",
                                  str(output), "--quiet"],
        "export-weights": ["export-weights", "--model", RUN, "--output",
                           str(out)],
    }[command]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the disk is full (No space left on device)" in err, err
    assert output.read_bytes() == OLD
    assert not [n for n in os.listdir(out) if n.endswith(".partial")]
