"""Expensive things tests need, built once per test run and shared by
every worker process (pytest-xdist's recipe: the workers' base temporary
folders share a parent, and a file lock there lets one worker build a
thing while the others wait for it).

The session fixtures of conftest.py name what is here: the fixture biLM
exported by the command line (ONNX, LiteRT, SavedModel), one small
training run and one small distillation run. A test that checks the act
itself (an export's options, a training run's steps) still does it; a
test that only needs its result takes the shared one, and copies it
(`copied`) before changing anything in it.
"""

import os
import shutil
import tempfile

from filelock import FileLock

from tests.helpers import MODEL_DIR
from tests.helpers import STEPWISE_TRAIN_FLAGS
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import TRAIN_TEXT
from tests.helpers import TRAIN_VOCAB
from tests.helpers import folder_digest

# The shared distillation run's student (a few hundred weights) and
# settings for runs of seconds: float32, a constant rate, no dropout, the
# full softmax of the fixture vocabulary.
DISTILL_FLAGS = [
    "--units", "16",
    "--projection-dim", "8",
    "--filters", "[[1, 4], [2, 4]]",
    "--char-embedding-dim", "4",
    "--max-length", "30",
    "--tokens-per-batch", "64",
    "--num-sampled", "100",
    "--dropout", "0",
    *STEPWISE_TRAIN_FLAGS,
]  # fmt: skip
# The shared training run: the tiny biLM, a checkpoint at its last step.
TRAIN_FLAGS = [
    *TINY_TRAIN_FLAGS,
    "--tokens-per-batch", "64",
    "--num-sampled", "8",
    *STEPWISE_TRAIN_FLAGS,
]  # fmt: skip
RUN_STEPS = 2
# What each shared command printed, beside what it wrote.
PRINTED = ".printed.txt"


def shared_path(tmp_path_factory, name, build):
    """The path `name` in the test run's shared folder, made by
    `build(path)` the first time any worker asks for it (in a folder of
    its own, then renamed: a build that fails leaves nothing under
    `name`, and the next worker that asks tries again)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder = root / "shared"
    folder.mkdir(exist_ok=True)
    path = folder / name
    with FileLock(str(folder / f"{name}.lock")):
        if not path.exists():
            building = tempfile.mkdtemp(dir=folder, prefix=f"{name}.")
            build(os.path.join(building, name))
            # What the build wrote beside `name` first, `name` last.
            for entry in sorted(os.listdir(building), key=lambda e: e == name):
                os.rename(os.path.join(building, entry), folder / entry)
            os.rmdir(building)
    return str(path)


def copied(source, target):
    """A copy of the shared file or folder `source` at `target` (str),
    for a test that changes it."""
    if os.path.isdir(source):
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)
    return str(target)


def printed(path):
    """What the command that wrote the shared `path` printed."""
    with open(path + PRINTED, encoding="utf-8") as f:
        return f.read()


def _command(argv, printed_to=None):
    """`keras-elmo ARGV` in this process; asserts it succeeded, and keeps
    its standard output in `printed_to` if given."""
    import contextlib
    import io

    from keras_elmo_cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    assert code == 0, (argv, out.getvalue())
    if printed_to is not None:
        with open(printed_to, "w", encoding="utf-8") as f:
            f.write(out.getvalue())


def export_fixture(command):
    """A `build(path)` that exports the bilm-tf fixture biLM with the
    command `command` (`export-onnx`, `export-litert`,
    `export-savedmodel`), float32, as a user would; what it printed is
    kept (`printed`)."""

    def build(path):
        argv = [command, "--model", MODEL_DIR, "--output", path]
        _command(argv, printed_to=path + PRINTED)

    return build


def train_run(path):
    """`keras-elmo train` of the tiny biLM on the fixture text and
    vocabulary, `RUN_STEPS` steps, checkpointed at the last."""
    _command(
        [
            "train", "--train", TRAIN_TEXT, "--vocab", TRAIN_VOCAB,
            "--output", path, "--steps", str(RUN_STEPS), *TRAIN_FLAGS,
        ]
    )  # fmt: skip


def distill_run(path):
    """`keras-elmo distill` of a tiny student from the fixture biLM on the
    fixture text, `RUN_STEPS` steps, the teacher's start by default
    (`--from-teacher auto`); what it printed is kept (`printed`)."""
    flags = [f for f in DISTILL_FLAGS if f != "--quiet"]
    before = folder_digest(MODEL_DIR)
    _command(
        [
            "distill", "--teacher", MODEL_DIR, "--train", TRAIN_TEXT,
            "--vocab", TRAIN_VOCAB, "--output", path,
            "--steps", str(RUN_STEPS), *flags,
        ],
        printed_to=path + PRINTED,
    )  # fmt: skip
    # The teacher is only read (tests/test_distill.py counts on this check).
    assert folder_digest(MODEL_DIR) == before, "distill changed its teacher"
