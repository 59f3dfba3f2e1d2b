"""Bad input to every `keras-elmo` subcommand (issue 11, section 1).

Each case runs `keras_elmo_cli.main(ARGV)` in-process and checks what a user
sees: exit status 2, a `keras-elmo CMD: error:` line that names the file,
line, key, flag or shape at fault, and no traceback. Each case also checks
that nothing was lost: every input and every pre-existing output is
byte-for-byte as before, nothing new was created and no `*.partial` is left.

A few cases run as real `python -m keras_elmo_cli` processes (exit status,
no traceback, no TensorFlow start-up logs), started at once in the
background while the in-process cases run; and one `embed` is killed
part-way with SIGKILL.
"""

import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import h5py
import numpy as np
import pytest

from elmo_core.settings.recipe import SMALL_CORPUS
from keras_elmo_cli import build_parser
from keras_elmo_cli import main
from tests.helpers import FIXTURES
from tests.helpers import MODEL_DIR
from tests.helpers import OPTIONS
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import WEIGHTS
from tests.helpers import assert_words_in
from tests.helpers import embed_args
from tests.helpers import fixture_options
from tests.helpers import named_cases
from tests.helpers import subprocess_env

TRAIN_DATA = os.path.join(FIXTURES, "train", "data.txt")
TRAIN_VOCAB = os.path.join(FIXTURES, "train", "vocab.txt")
TINY = [*TINY_TRAIN_FLAGS, "--tokens-per-batch", "64", "--num-sampled", "8"]
# The bad line of the training corpus of the fixture run (line 3).
BAD_LINE = b"na\xefve caf\xe9 line\n"
# What TensorFlow writes at start-up unless the CLI quiets it.
TF_NOISE = ("oneDNN", "cuda", "absl::InitializeLog", "cpu_feature_guard")


# name -> options.json content (a dict, or raw bytes).
BAD_OPTIONS = {
    "filters_int": fixture_options(**{"char_cnn.filters": 124}),
    "n_highway_list": fixture_options(**{"char_cnn.n_highway": [2]}),
    "n_layers_str": fixture_options(**{"lstm.n_layers": "two"}),
    "dim_negative": fixture_options(**{"lstm.dim": -5}),
    "projection_zero": fixture_options(**{"lstm.projection_dim": 0}),
    "no_dim": fixture_options(**{"lstm.dim": None}),
    "filters_negative": fixture_options(**{"char_cnn.filters": [[1, -4]]}),
    "cell_clip_str": fixture_options(**{"lstm.cell_clip": "big"}),
    # Valid, but not the size of the fixture weights.
    "dim_32": fixture_options(**{"lstm.dim": 32}),
    "list": [1, 2],
    "latin1": b'{"lstm": "caf\xe9"}',
}


def _write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    with open(path, "wb") as f:
        f.write(content)
    return path


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """Paths of the inputs and pre-existing outputs, by name (what the
    argv templates below use). Runs are added by the `runs` fixture."""
    root = str(tmp_path_factory.mktemp("bad_input_cli"))
    inputs = os.path.join(root, "inputs")
    outputs = os.path.join(root, "outputs")
    paths = dict(
        root=root,
        inputs=inputs,
        outputs=outputs,
        options=OPTIONS,
        weights=WEIGHTS,
        model_dir=os.path.dirname(OPTIONS),
        data=TRAIN_DATA,
        vocab=TRAIN_VOCAB,
    )
    text = "hello world\nthe cat sat on the mat\n"
    latin1 = b"fine line\n" + BAD_LINE + b"more\n"
    with open(TRAIN_DATA, "rb") as f:
        lines = f.readlines()
    files = {
        "sentences": ("sentences.txt", text),
        "latin1": ("latin1.txt", latin1),
        "damaged_gz": ("damaged.gz", gzip.compress(text.encode() * 50)[:40]),
        "not_gzip": ("not_gzip.gz", text),
        "nospecials": ("nospecials.txt", "hello\nworld\n"),
        # The fixture run's corpus: a line that is not UTF-8 (line 3).
        "corpus": ("corpus.txt", b"".join([*lines[:2], BAD_LINE, *lines[2:]])),
    }
    for name, (file, content) in files.items():
        paths[name] = _write(os.path.join(inputs, file), content)
    for name, content in BAD_OPTIONS.items():
        if not isinstance(content, bytes):
            content = json.dumps(content)
        paths[f"opt_{name}"] = _write(
            os.path.join(inputs, f"options_{name}.json"), content
        )
    os.makedirs(os.path.join(inputs, "empty_dir"))
    paths["empty_dir"] = os.path.join(inputs, "empty_dir")
    # An export directory (options.json + weights.hdf5): not a run.
    paths["export"] = os.path.join(inputs, "export")
    os.makedirs(paths["export"])
    shutil.copy(OPTIONS, os.path.join(paths["export"], "options.json"))
    shutil.copy(WEIGHTS, os.path.join(paths["export"], "weights.hdf5"))
    # Pre-existing outputs, which a failed command must leave as they are.
    paths["existing_hdf5"] = os.path.join(outputs, "existing.hdf5")
    os.makedirs(outputs)
    with h5py.File(paths["existing_hdf5"], "w") as f:
        f.create_dataset("0", data=np.arange(6, dtype="float32"))
    paths["existing_dir"] = os.path.join(outputs, "existing_dir")
    _write(os.path.join(paths["existing_dir"], "keep.txt"), "keep me\n")
    return paths


# === Subprocesses, started in the background as soon as a test asks ===

# name -> (argv, words the error line must contain); started as
# `python -m keras_elmo_cli ARGV`, all at once.
SUBPROCESS_CASES = {
    "embed-output-is-input": (
        [
            "embed", "--options", "{options}", "--weights", "{weights}",
            "--input", "{sentences}", "--output", "{sentences}",
        ],
        [
            "--output is also an input",
            "Received: --output {sentences}",
        ],
    ),
    "train-filters-not-json": (
        [
            "train", "--train", "{data}", "--vocab", "{vocab}",
            "--output", "{sub}/run", "--filters", "[[1, 4]",
        ],
        ["argument --filters", "expected JSON"],
    ),
    "train-build-vocab-not-utf8": (
        [
            "train", "--train", "{latin1}", "--build-vocab",
            "--output", "{sub}/run",
        ],
        ["{latin1}, line 2: not valid UTF-8"],
    ),
    "export-savedmodel-max-batch-tokens-0": (
        [
            "export-savedmodel", "--options", "{options}",
            "--weights", "{weights}", "--output", "{sub}/saved",
            "--max-batch-tokens", "0",
        ],
        ["argument --max-batch-tokens", "Received: 0."],
    ),
    "embed-options-filters-int": (
        [
            "embed", "--options", "{opt_filters_int}", "--weights",
            "{weights}", "--input", "{sentences}", "--output",
            "{sub}/out.hdf5",
        ],
        ["options.json `char_cnn.filters` must be a list. Received: 124."],
    ),
    # The two mistakes a new user makes first, as they make them: the
    # command in a process of its own.
    "embed-options-missing": (
        [
            "embed", "--options", "{sub}/missing/options.json", "--weights",
            "{weights}", "--input", "{sentences}", "--output",
            "{sub}/missing.hdf5",
        ],
        ["--options: Options file not found: {sub}/missing/options.json"],
    ),
    "embed-output-a-directory": (
        [
            "embed", "--options", "{options}", "--weights", "{weights}",
            "--input", "{sentences}", "--output", "{sub}",
        ],
        ["--output is a directory", "Received: --output {sub}"],
    ),
}  # fmt: skip
# Lines for the killed `embed`: enough that it is still working when
# killed (it is killed as soon as its .partial file appears).
KILLED_LINES = 5000


def _cli(argv):
    return [sys.executable, "-m", "keras_elmo_cli", *argv]


def _quiet_env():
    # The CLI quiets TensorFlow itself; without TF_CPP_MIN_LOG_LEVEL the
    # test shows that it does.
    env = subprocess_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    return env


def _kill_when_partial(process, partial, result):
    deadline = time.time() + 300
    while not os.path.exists(partial) and time.time() < deadline:
        if process.poll() is not None:
            break
        time.sleep(0.02)
    time.sleep(0.3)  # part-way: the output is being written
    result["running_when_killed"] = process.poll() is None
    process.send_signal(signal.SIGKILL)
    process.wait()


@pytest.fixture(scope="module")
def processes(work):
    """The subprocess cases and the killed `embed`, all started at once."""
    sub = os.path.join(work["root"], "subprocess")
    os.makedirs(sub)
    paths = dict(work, sub=sub)
    started = {}
    for name, (argv, _) in SUBPROCESS_CASES.items():
        started[name] = subprocess.Popen(
            _cli([a.format(**paths) for a in argv]),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_quiet_env(),
            cwd=sub,
        )
    killed = os.path.join(work["root"], "killed")
    big = _write(
        os.path.join(killed, "big.txt"),
        "".join(f"sentence {i} of a long input\n" for i in range(KILLED_LINES)),
    )
    output = os.path.join(killed, "out.hdf5")
    with h5py.File(output, "w") as f:
        f.create_dataset("previous", data=np.ones(3, "float32"))
    with open(output, "rb") as f:
        previous = f.read()
    process = subprocess.Popen(
        _cli(embed_args(big, output, "--batch-size", "1")),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=subprocess_env(),
    )
    result = dict(process=process, output=output, previous=previous)
    watcher = threading.Thread(
        target=_kill_when_partial,
        args=(process, output + ".partial", result),
        daemon=True,
    )
    watcher.start()
    yield dict(started=started, sub=sub, killed=(watcher, result))
    for process in [*started.values(), process]:
        if process.poll() is None:
            process.kill()
        process.communicate()


# === The fixture run: trained for real, then damaged copies ===

# Every word kept (`--min-count 1`, not the recipe's 2): the vocabulary
# shows which lines were read.
RUN_ARGV = [
    "train", "--train", "{corpus}", "--build-vocab", "--min-count", "1",
    "--on-bad-line", "skip", "--output", "{run}", *TINY, "--steps", "1",
    "--checkpoint-every", "1",
]  # fmt: skip


def _damage(run, name, change):
    path = os.path.join(os.path.dirname(run), name)
    shutil.copytree(run, path)
    change(path)
    return path


def _truncate(path, size):
    with open(path, "r+b") as f:
        f.truncate(size)


def _set_json(path, value):
    with open(path, "w") as f:
        f.write(value if isinstance(value, str) else json.dumps(value))


@pytest.fixture(scope="module")
def runs(work, processes):
    """`work` plus a trained run (`--build-vocab --on-bad-line skip` on a
    corpus with a line that is not UTF-8) and damaged copies of it."""
    run = os.path.join(work["root"], "runs", "run")
    paths = dict(work, run=run)
    stdout = _run_main([a.format(**paths) for a in RUN_ARGV])
    checkpoint = os.path.join(run, "checkpoint")
    config = os.path.join(run, "config.json")
    with open(config) as f:
        saved = json.load(f)
    unknown_key = dict(saved, colour="blue")
    strict = dict(saved, on_bad_line="error")
    damaged = {
        "run_no_checkpoint": lambda r: shutil.rmtree(
            os.path.join(r, "checkpoint")
        ),
        "run_state_truncated": lambda r: _truncate(
            os.path.join(r, "checkpoint", "state.npz"), 100
        ),
        "run_meta_not_json": lambda r: _set_json(
            os.path.join(r, "checkpoint", "meta.json"), "{oops"
        ),
        "run_meta_no_variables": lambda r: _set_json(
            os.path.join(r, "checkpoint", "meta.json"), {"step": 1}
        ),
        "run_config_not_json": lambda r: _set_json(
            os.path.join(r, "config.json"), '{"train_files": ['
        ),
        "run_config_list": lambda r: _set_json(
            os.path.join(r, "config.json"), [1, 2]
        ),
        "run_config_unknown_key": lambda r: _set_json(
            os.path.join(r, "config.json"), unknown_key
        ),
        # Not damaged: a run that stops at lines that are not UTF-8.
        "run_strict": lambda r: _set_json(
            os.path.join(r, "config.json"), strict
        ),
    }
    for name, change in damaged.items():
        paths[name] = _damage(run, name, change)
    assert os.path.isdir(checkpoint)
    return dict(paths, run_stdout=stdout)


def _run_main(argv):
    """Runs the CLI in-process; returns its standard output (asserting
    success)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    assert status == 0, err.getvalue()
    return out.getvalue()


# === The in-process cases ===

EMBED = ["embed", "--options", "{options}", "--weights", "{weights}"]
TOKENS = [
    "dump-token-embeddings", "--options", "{options}", "--weights",
    "{weights}",
]  # fmt: skip
TRAIN = ["train", "--train", "{data}", "--vocab", "{vocab}", "--quiet"]
NEW_RUN = ["--output", "{outputs}/new_run", *TINY, "--steps", "1"]
DISTILL = [
    "distill", "--train", "{data}", "--vocab", "{vocab}", "--quiet",
    "--teacher",
]  # fmt: skip
ONNX = ["export-onnx", "--options", "{options}", "--weights", "{weights}"]
LITERT = ["export-litert", "--options", "{options}", "--weights", "{weights}"]
SAVED = [
    "export-savedmodel",
    "--options",
    "{options}",
    "--weights",
    "{weights}",
]
NEW_FILE = ["--output", "{outputs}/new.hdf5"]


def _embed_options(name, words):
    argv = [
        "embed", "--options", f"{{opt_{name}}}", "--weights", "{weights}",
        "--input", "{sentences}", *NEW_FILE,
    ]  # fmt: skip
    return (f"options-{name}", argv, words)


def _resume(run, *extra):
    argv = [a for a in RUN_ARGV if a != "{run}"]
    at = argv.index("--output") + 1
    return [*argv[:at], f"{{{run}}}", *argv[at:], "--quiet", *extra]


# (id, argv template, words the error line must contain). `{name}` is a
# path of the `runs` fixture.
CASES = [
    # --- An output path that is a directory, or a file where a directory
    # is expected, or under a file ---
    ("embed-output-is-directory",
     [*EMBED, "--input", "{sentences}", "--output", "{outputs}"],
     ["--output is a directory",
      "Received: --output {outputs}"]),
    ("dump-output-is-directory",
     [*TOKENS, "--vocab", "{vocab}", "--output", "{existing_dir}"],
     ["--output is a directory",
      "Received: --output {existing_dir}"]),
    ("export-onnx-output-is-directory",
     [*ONNX, "--output", "{existing_dir}"],
     ["--output is a directory",
      "Received: --output {existing_dir}"]),
    ("export-litert-output-is-directory",
     [*LITERT, "--output", "{outputs}"],
     ["--output is a directory",
      "Received: --output {outputs}"]),
    ("train-output-is-file",
     [*TRAIN, "--output", "{existing_hdf5}", *TINY],
     ["--output is an existing file",
      "Received: --output {existing_hdf5}"]),
    ("export-weights-output-is-file",
     ["export-weights", "--model", "{run}", "--output", "{existing_hdf5}"],
     ["--output is an existing file",
      "Received: --output {existing_hdf5}"]),
    ("export-savedmodel-output-is-file",
     [*SAVED, "--output", "{existing_hdf5}"],
     ["--output is an existing file",
      "Received: --output {existing_hdf5}"]),
    ("export-savedmodel-output-not-empty",
     [*SAVED, "--output", "{existing_dir}"],
     ["--output exists and is not empty",
      "Received: --output {existing_dir}"]),
    ("embed-output-under-a-file",
     [*EMBED, "--input", "{sentences}", "--output", "{existing_hdf5}/x.h5"],
     ["{existing_hdf5} is a file, not a directory"]),
    ("export-weights-output-under-a-file",
     ["export-weights", "--model", "{run}", "--output",
      "{existing_hdf5}/export"],
     ["{existing_hdf5} is a file, not a directory"]),
    # --- An output that would destroy an input ---
    ("embed-output-is-input",
     [*EMBED, "--input", "{sentences}", "--output", "{sentences}"],
     ["--output is also an input",
      "Received: --output {sentences}"]),
    ("embed-output-is-weights",
     [*EMBED, "--input", "{sentences}", "--output", "{weights}"],
     ["--output is also an input",
      "Received: --output {weights}"]),
    ("embed-output-is-options",
     [*EMBED, "--input", "{sentences}", "--output", "{options}"],
     ["--output is also an input",
      "Received: --output {options}"]),
    ("dump-output-is-vocab",
     [*TOKENS, "--vocab", "{vocab}", "--output", "{vocab}"],
     ["--output is also an input",
      "Received: --output {vocab}"]),
    ("export-weights-output-is-model",
     ["export-weights", "--model", "{run}", "--output", "{run}"],
     ["--output holds", "checkpoint, an input",
      "Received: --output {run}"]),
    ("export-onnx-output-is-weights",
     [*ONNX, "--output", "{weights}"],
     ["--output is also an input",
      "Received: --output {weights}"]),
    ("embed-run-output-is-input",
     ["embed", "--model", "{run}", "--input", "{sentences}",
      "--output", "{sentences}"],
     ["--output is also an input",
      "Received: --output {sentences}"]),
    # --- embed-corpus: the library's arguments read as its flags ---
    ("embed-corpus-mix-of-the-wrong-size",
     ["embed-corpus", "--model", "{model_dir}", "--input", "{sentences}",
      "--output", "{outputs}/corpus", "--scalar-mix", "[0, 0.5]"],
     ["--scalar-mix must be 3 numbers", "has 3 layers to mix",
      "Received: --scalar-mix [0.0, 0.5]."]),
    ("embed-corpus-input-matches-nothing",
     ["embed-corpus", "--model", "{model_dir}", "--input",
      "{inputs}/missing*.txt", "--output", "{outputs}/corpus"],
     ["--input {inputs}/missing*.txt matches no file"]),
    # --- options.json: a directory, not JSON, wrong types, out of range ---
    ("embed-options-is-directory",
     ["embed", "--options", "{model_dir}", "--weights", "{weights}",
      "--input", "{sentences}", *NEW_FILE],
     ["Options file {model_dir} is a directory"]),
    ("train-options-is-directory",
     [*TRAIN, *NEW_RUN, "--options", "{model_dir}"],
     ["Options file {model_dir} is a directory"]),
    ("embed-options-not-json",
     ["embed", "--options", "{sentences}", "--weights", "{weights}",
      "--input", "{sentences}", *NEW_FILE],
     ["Options file {sentences} is not valid JSON"]),
    _embed_options("list", ["{opt_list} holds a JSON list"]),
    _embed_options("latin1", ["{opt_latin1} is not valid JSON"]),
    _embed_options("filters_int", [
        "options.json `char_cnn.filters` must be a list. Received: 124.",
    ]),
    _embed_options("n_highway_list", [
        "`char_cnn.n_highway` must be an integer",
        "Received: [2].",
    ]),
    _embed_options("n_layers_str", [
        "`lstm.n_layers` must be an integer",
        "Received: 'two'.",
    ]),
    _embed_options("dim_negative", [
        "`lstm.dim` must be an integer >= 1. Received: -5.",
    ]),
    _embed_options("projection_zero", [
        "`lstm.projection_dim` must be an integer >= 1",
        "Received: 0.",
    ]),
    _embed_options("no_dim", ["no `lstm.dim`"]),
    _embed_options("filters_negative", ["[1, -4]", "filters"]),
    _embed_options("cell_clip_str", [
        "`lstm.cell_clip` must be a finite number",
        "Received: 'big'.",
    ]),
    ("train-options-dim-negative",
     [*TRAIN, "--output", "{outputs}/new_run", "--steps", "1",
      "--options", "{opt_dim_negative}"],
     ["`lstm.dim` must be an integer >= 1. Received: -5."]),
    ("export-savedmodel-options-n-layers-str",
     ["export-savedmodel", "--options", "{opt_n_layers_str}",
      "--weights", "{weights}", "--output", "{outputs}/saved"],
     ["`lstm.n_layers` must be an integer", "Received: 'two'."]),
    ("dump-options-filters-int",
     ["dump-token-embeddings", "--options", "{opt_filters_int}",
      "--weights", "{weights}", "--vocab", "{vocab}", *NEW_FILE],
     ["options.json `char_cnn.filters` must be a list. Received: 124."]),
    # --- Weights: not HDF5, or of another size ---
    ("embed-weights-not-hdf5",
     ["embed", "--options", "{options}", "--weights", "{sentences}",
      "--input", "{sentences}", *NEW_FILE],
     ["Could not open {sentences} as an HDF5 weight file"]),
    ("embed-weights-wrong-shapes",
     ["embed", "--options", "{opt_dim_32}", "--weights", "{weights}",
      "--input", "{sentences}", *NEW_FILE],
     ["Dataset 'RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0'",
      "has shape (32, 256), but the options imply (32, 128)"]),
    ("export-onnx-weights-wrong-shapes",
     ["export-onnx", "--options", "{opt_dim_32}", "--weights", "{weights}",
      "--output", "{outputs}/m.onnx"],
     ["LSTMCell/W_0", "has shape (32, 256)"]),
    ("init-from-wrong-size",
     [*TRAIN, *NEW_RUN, "--init-from", "{options},{weights}"],
     ["--init-from weights do not fit", "char_cnn/kernel_1"]),
    # --- Size flags: each named, negative sizes by their own flag ---
    ("train-units-negative", [*TRAIN, *NEW_RUN, "--units", "-5"],
     ["argument --units", "Received: -5."]),
    ("train-projection-dim-zero",
     [*TRAIN, *NEW_RUN, "--projection-dim", "0"],
     ["argument --projection-dim", "Received: 0."]),
    ("train-cell-clip-negative", [*TRAIN, *NEW_RUN, "--cell-clip", "-1"],
     ["--cell-clip must be a finite number >= 0.0",
      "Received: --cell-clip -1.0."]),
    ("train-filters-int", [*TRAIN, *NEW_RUN, "--filters", "124"],
     ["--filters must be a list", "Received: --filters 124"]),
    ("train-filters-negative", [*TRAIN, *NEW_RUN, "--filters", "[[1, -4]]"],
     ["[1, -4]", "filters"]),
    ("train-tokens-per-batch-too-small",
     [*TRAIN, *NEW_RUN, "--tokens-per-batch", "10"],
     ["--tokens-per-batch must hold", "--max-length + 2 = 32"]),
    ("train-dropout-one", [*TRAIN, *NEW_RUN, "--dropout", "1"],
     ["--dropout", "[0, 1)"]),
    ("train-epochs-nan", [*TRAIN, *NEW_RUN, "--epochs", "nan"],
     ["argument --epochs"]),
    ("train-steps-zero", [*TRAIN, "--output", "{outputs}/r", "--steps", "0"],
     ["argument --steps"]),
    ("train-filters-with-words",
     [*TRAIN, *NEW_RUN, "--token-encoder", "words"],
     ["--filters", "word-input biLM"]),
    # --- distill: the teacher, the student's size, the loss ---
    ("distill-teacher-missing",
     [*DISTILL, "{inputs}/no_teacher", *NEW_RUN],
     ["--teacher", "{inputs}/no_teacher"]),
    ("distill-teacher-empty-folder", [*DISTILL, "{empty_dir}", *NEW_RUN],
     ["--teacher is no biLM source", "Received: --teacher {empty_dir}"]),
    ("distill-teacher-is-the-output",
     [*DISTILL, "{run}", "--output", "{run}", *TINY, "--steps", "1"],
     ["--output"]),
    ("distill-teacher-is-text", [*DISTILL, "{data}", *NEW_RUN],
     ["--teacher"]),
    ("distill-windows", [*DISTILL, "{run}", *NEW_RUN, "--windows", "20"],
     ["--windows", "sentences"]),
    ("distill-no-loss",
     [*DISTILL, "{run}", *NEW_RUN, "--lm-weight", "0", "--layer-weight",
      "0"],
     ["--layer-weight", "learn nothing"]),
    ("distill-units-negative",
     [*DISTILL, "{run}", *NEW_RUN, "--units", "-5"],
     ["argument --units", "Received: -5."]),
    ("distill-projection-above-units",
     [*DISTILL, "{run}", *NEW_RUN, "--units", "4"],
     ["--projection-dim"]),
    ("distill-layer-loss-unknown",
     [*DISTILL, "{run}", *NEW_RUN, "--layer-loss", "l1"],
     ["argument --layer-loss", "l1"]),
    ("distill-not-utf8",
     ["distill", "--train", "{latin1}", "--vocab", "{vocab}", "--teacher",
      "{run}", *NEW_RUN],
     ["{latin1}, line 2: not valid UTF-8"]),
    # --- Training, held-out and embed input: damaged, not UTF-8, missing ---
    ("train-damaged-gz",
     ["train", "--train", "{damaged_gz}", "--vocab", "{vocab}", *NEW_RUN],
     ["{damaged_gz} is not a readable .gz file"]),
    ("train-not-gzip",
     ["train", "--train", "{not_gzip}", "--vocab", "{vocab}", *NEW_RUN],
     ["{not_gzip} is not a readable .gz file"]),
    ("train-build-vocab-damaged-gz",
     ["train", "--train", "{damaged_gz}", "--build-vocab", *NEW_RUN],
     ["{damaged_gz} is not a readable .gz file"]),
    ("train-not-utf8",
     ["train", "--train", "{latin1}", "--vocab", "{vocab}", *NEW_RUN],
     ["{latin1}, line 2: not valid UTF-8", "0xef"]),
    ("train-build-vocab-not-utf8",
     ["train", "--train", "{latin1}", "--build-vocab", *NEW_RUN],
     ["{latin1}, line 2: not valid UTF-8"]),
    ("train-validation-not-utf8",
     [*TRAIN, *NEW_RUN, "--validation", "{latin1}"],
     ["{latin1}, line 2: not valid UTF-8"]),
    ("train-glob-matches-nothing",
     ["train", "--train", "{inputs}/*.nothing", "--vocab", "{vocab}",
      *NEW_RUN],
     ["No file matches '{inputs}/*.nothing'"]),
    ("train-validation-glob-matches-nothing",
     [*TRAIN, *NEW_RUN, "--validation", "{inputs}/none*"],
     ["No file matches '{inputs}/none*'"]),
    ("train-data-is-directory",
     ["train", "--train", "{inputs}", "--vocab", "{vocab}", *NEW_RUN],
     ["{inputs} is a directory"]),
    # --- prepare: raw text in ---
    ("prepare-not-utf8",
     ["prepare", "--input", "{latin1}", "--output", "{outputs}/prepared"],
     ["{latin1}, line 2: not valid utf-8", "--encoding"]),
    ("prepare-damaged-gz",
     ["prepare", "--input", "{damaged_gz}", "--output", "{outputs}/prepared"],
     ["{damaged_gz} is not a readable .gz file"]),
    ("prepare-bad-stop-at",
     ["prepare", "--input", "{sentences}", "--output", "{outputs}/prepared",
      "--stop-at", "(unclosed"],
     ["--stop-at is not a regular expression"]),
    ("prepare-unknown-language",
     ["prepare", "--input", "{sentences}", "--output", "{outputs}/prepared",
      "--language", "xx-nowhere"],
     ["--language xx-nowhere"]),
    ("evaluate-not-utf8",
     ["evaluate", "--model", "{run_strict}", "--data", "{latin1}"],
     ["{latin1}, line 2: not valid UTF-8"]),
    ("evaluate-damaged-gz",
     ["evaluate", "--model", "{run}", "--data", "{damaged_gz}"],
     ["{damaged_gz} is not a readable .gz file"]),
    ("evaluate-glob-matches-nothing",
     ["evaluate", "--model", "{run}", "--data", "{inputs}/*.none"],
     ["No file matches '{inputs}/*.none'"]),
    ("embed-not-utf8",
     [*EMBED, "--input", "{latin1}", *NEW_FILE],
     ["{latin1}, line 2: not valid UTF-8"]),
    ("embed-not-utf8-existing-output",
     [*EMBED, "--input", "{latin1}", "--output", "{existing_hdf5}"],
     ["{latin1}, line 2: not valid UTF-8"]),
    ("embed-damaged-gz-existing-output",
     [*EMBED, "--input", "{damaged_gz}", "--output", "{existing_hdf5}"],
     ["{damaged_gz} is not a readable .gz file"]),
    ("embed-input-missing",
     [*EMBED, "--input", "{inputs}/missing.txt", *NEW_FILE],
     ["{inputs}/missing.txt"]),
    ("embed-input-is-directory",
     [*EMBED, "--input", "{inputs}", *NEW_FILE],
     ["{inputs} is a directory"]),
    ("dump-vocab-not-utf8",
     [*TOKENS, "--vocab", "{latin1}", "--output", "{existing_hdf5}"],
     ["{latin1}, line 2: not valid UTF-8"]),
    ("dump-vocab-missing",
     [*TOKENS, "--vocab", "{inputs}/missing.txt", *NEW_FILE],
     ["{inputs}/missing.txt"]),
    # --- The output vocabulary ---
    ("train-vocab-without-specials",
     ["train", "--train", "{data}", "--vocab", "{nospecials}", *NEW_RUN],
     ["{nospecials} lacks the special token(s) <S>, </S>, <UNK>"]),
    ("train-vocab-and-build-vocab",
     [*TRAIN, "--build-vocab", *NEW_RUN],
     ["either --vocab or --build-vocab, not both"]),
    ("train-no-vocab", ["train", "--train", "{data}", *NEW_RUN],
     ["output vocabulary as --vocab", "--build-vocab"]),
    ("train-vocab-not-utf8",
     ["train", "--train", "{data}", "--vocab", "{latin1}", *NEW_RUN],
     ["{latin1}, line 2: not valid UTF-8"]),
    ("train-min-count-zero",
     [*TRAIN[:3], "--build-vocab", "--min-count", "0", *NEW_RUN],
     ["argument --min-count"]),
    ("export-savedmodel-cache-vocab-missing",
     [*SAVED, "--output", "{outputs}/saved", "--cache-vocab",
      "{inputs}/missing.txt"],
     ["{inputs}/missing.txt"]),
    # --- Run directories: damaged, of other settings, not a run ---
    ("evaluate-config-not-json",
     ["evaluate", "--model", "{run_config_not_json}", "--data", "{data}"],
     ["{run_config_not_json}/config.json is not valid JSON"]),
    ("train-resume-config-not-json", _resume("run_config_not_json"),
     ["{run_config_not_json}/config.json is not valid JSON"]),
    ("train-resume-config-list", _resume("run_config_list"),
     ["{run_config_list}/config.json must hold a JSON object"]),
    ("export-weights-config-list",
     ["export-weights", "--model", "{run_config_list}", "--output",
      "{existing_dir}"],
     ["{run_config_list}/config.json must hold a JSON object"]),
    ("evaluate-config-unknown-key",
     ["evaluate", "--model", "{run_config_unknown_key}", "--data", "{data}"],
     ["config.json has unknown key(s) ['colour']"]),
    ("train-resume-config-unknown-key", _resume("run_config_unknown_key"),
     ["config.json has unknown key(s) ['colour']",
      "was it written by keras-elmo train?"]),
    ("evaluate-state-truncated",
     ["evaluate", "--model", "{run_state_truncated}", "--data", "{data}"],
     ["{run_state_truncated}/checkpoint is damaged",
      "state.npz cannot be read"]),
    ("embed-run-state-truncated",
     ["embed", "--model", "{run_state_truncated}", "--input",
      "{sentences}", "--output", "{existing_hdf5}"],
     ["state.npz cannot be read"]),
    ("train-resume-state-truncated", _resume("run_state_truncated"),
     ["state.npz cannot be read"]),
    ("export-weights-meta-not-json",
     ["export-weights", "--model", "{run_meta_not_json}", "--output",
      "{existing_dir}"],
     ["{run_meta_not_json}/checkpoint/meta.json is not valid JSON"]),
    ("export-savedmodel-meta-no-variables",
     ["export-savedmodel", "--model", "{run_meta_no_variables}",
      "--output", "{outputs}/saved"],
     ["meta.json lacks the variable list"]),
    ("evaluate-no-checkpoint",
     ["evaluate", "--model", "{run_no_checkpoint}", "--data", "{data}"],
     ["{run_no_checkpoint} has no checkpoint yet"]),
    ("export-weights-no-checkpoint",
     ["export-weights", "--model", "{run_no_checkpoint}", "--output",
      "{outputs}/export"],
     ["{run_no_checkpoint} has no checkpoint yet"]),
    ("train-resume-other-settings", _resume("run", "--dropout", "0.3"),
     ["{run} holds a run with other settings",
      f"dropout: {SMALL_CORPUS['dropout']:g} there, 0.3 now"]),
    ("train-resume-other-vocabulary",
     ["train", "--train", "{corpus}", "--vocab", "{vocab}",
      "--on-bad-line", "skip", "--output", "{run}", *TINY, "--steps", "1",
      "--checkpoint-every", "1"],
     ["{run} holds a run with other settings", "vocabulary_size"]),
    ("embed-model-neither-run-nor-export",
     ["embed", "--model", "{empty_dir}", "--input", "{sentences}",
      *NEW_FILE],
     ["--model is no biLM source: expected a training run directory",
      "Received: --model {empty_dir}",
      "found neither"]),
    ("evaluate-model-is-export",
     ["evaluate", "--model", "{export}", "--data", "{data}"],
     ["{export} is not a training run directory"]),
    ("export-weights-model-is-export",
     ["export-weights", "--model", "{export}", "--output", "{outputs}/e"],
     ["{export} is not a training run directory"]),
    ("embed-model-is-file",
     ["embed", "--model", "{sentences}", "--input", "{sentences}",
      *NEW_FILE],
     ["--model is a file", "Received: --model {sentences}"]),
    ("embed-model-missing",
     ["embed", "--model", "{inputs}/nothing", "--input", "{sentences}",
      *NEW_FILE],
     ["--model is no such file or directory",
      "Received: --model {inputs}/nothing"]),
    ("embed-model-and-options",
     [*EMBED, "--model", "{run}", "--input", "{sentences}", *NEW_FILE],
     ["Give either --model or --options/--weights, not both"]),
    ("embed-options-without-weights",
     ["embed", "--options", "{options}", "--input", "{sentences}",
      *NEW_FILE],
     ["--options OPTIONS.json --weights WEIGHTS.hdf5"]),
    ("train-size-is-pretrained",
     [*TRAIN, *NEW_RUN, "--size", "zh"],
     ["argument --size/--preset", "'zh' is a pretrained model, not a "
      "training size", "use --init-from zh"]),
    ("train-preset-unknown",
     [*TRAIN, *NEW_RUN, "--preset", "huge"],
     ["argument --size/--preset", "expected one of tiny, tiny-lstm, mini, "
      "cpu, small, medium, original. Received: huge."]),
    ("train-init-from-neither",
     [*TRAIN, *NEW_RUN, "--init-from", "{empty_dir}"],
     ["--init-from is no biLM source",
      "Received: --init-from {empty_dir}"]),
    # --- Other flags ---
    ("export-savedmodel-max-batch-tokens-negative",
     [*SAVED, "--output", "{outputs}/saved", "--max-batch-tokens", "-3"],
     ["argument --max-batch-tokens", "Received: -3."]),
    ("embed-batch-size-zero",
     [*EMBED, "--input", "{sentences}", *NEW_FILE, "--batch-size", "0"],
     ["argument --batch-size", "Received: 0."]),
    ("dump-batch-size-zero",
     [*TOKENS, "--vocab", "{vocab}", *NEW_FILE, "--batch-size", "0"],
     ["argument --batch-size"]),
    ("embed-precision-without-runtime",
     [*EMBED, "--input", "{sentences}", *NEW_FILE, "--precision", "int8"],
     ["--precision int8 needs --runtime onnx or litert"]),
    ("export-onnx-scalar-mix-not-numbers",
     [*ONNX, "--output", "{outputs}/m.onnx", "--scalar-mix", "a,b"],
     ["argument --scalar-mix", "Received: a,b."]),
    ("export-litert-scalar-mix-wrong-count",
     [*LITERT, "--output", "{outputs}/m.tflite", "--scalar-mix", "0,0"],
     ["LiteRT export: --scalar-mix must be 3 numbers, one per biLM layer.",
      "Received: --scalar-mix [0.0, 0.0]."]),
    ("download-unknown-name", ["download", "no-such-model"],
     ["'no-such-model' is not a pretrained model name"]),
    ("download-nothing", ["download"], ["required: NAME|URL"]),
    ("presets-extra-argument", ["presets", "extra"],
     ["unrecognized arguments: extra"]),
]  # fmt: skip


def _snapshot(*roots):
    """`{path: sha256 or "dir"}` of everything under `roots`."""
    state = {}
    for root in roots:
        for directory, dirs, files in os.walk(root):
            for name in dirs:
                state[os.path.join(directory, name)] = "dir"
            for name in files:
                path = os.path.join(directory, name)
                with open(path, "rb") as f:
                    state[path] = hashlib.sha256(f.read()).hexdigest()
    return state


def _changes(before, after):
    return {
        path: (before.get(path), after.get(path))
        for path in set(before) | set(after)
        if before.get(path) != after.get(path)
    }


def test_every_subcommand_has_bad_input_cases():
    # argparse has no public list of subcommands; its actions hold it.
    (commands,) = [a for a in build_parser()._actions if a.dest == "command"]
    tested = {argv[0] for _, argv, _ in CASES}
    tested |= {argv[0] for argv, _ in SUBPROCESS_CASES.values()}
    assert set(commands.choices) <= tested, set(commands.choices) - tested


@pytest.mark.parametrize("argv, words", named_cases(CASES))
def test_bad_input_is_one_clear_error_and_loses_nothing(
    processes, runs, capsys, argv, words
):
    argv = [a.format(**runs) for a in argv]
    roots = [runs["inputs"], runs["outputs"], os.path.dirname(runs["run"])]
    before = _snapshot(*roots, FIXTURES)
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 2, (out, err)
    assert "Traceback" not in out + err
    # (argparse reports unknown arguments as the main parser.)
    assert f"keras-elmo {argv[0]}: error: " in err or (
        "keras-elmo: error: unrecognized arguments" in err
    )
    assert_words_in(err, [word.format(**runs) for word in words])
    assert _changes(before, _snapshot(*roots, FIXTURES)) == {}


def test_build_vocab_skips_bad_lines(runs):
    """`train --build-vocab --on-bad-line skip` (the fixture run): the
    vocabulary is built from the good lines, the bad one reported."""
    with open(os.path.join(runs["run"], "vocab.txt"), encoding="utf-8") as f:
        vocabulary = f.read().split("\n")
    assert vocabulary[:3] == ["<S>", "</S>", "<UNK>"]
    assert "neural" in vocabulary and "recurrent" in vocabulary
    assert "line" not in vocabulary  # only on the skipped line
    assert f"{runs['corpus']}:3" in runs["run_stdout"]
    assert "built a vocabulary" in runs["run_stdout"]


@pytest.mark.parametrize("name", sorted(SUBPROCESS_CASES))
def test_bad_input_in_a_real_process(processes, work, name):
    argv, words = SUBPROCESS_CASES[name]
    process = processes["started"][name]
    out, err = (text.decode() for text in process.communicate(timeout=300))
    assert process.returncode == 2, (out, err)
    assert "Traceback" not in out + err
    paths = dict(work, sub=processes["sub"])
    assert_words_in(err, [word.format(**paths) for word in words])
    assert err.startswith(f"keras-elmo {argv[0]}: ") or "usage:" in err
    for noise in TF_NOISE:
        assert noise not in err, err
    assert os.listdir(processes["sub"]) == []


def test_embed_killed_part_way_loses_nothing(processes, work, capsys):
    watcher, result = processes["killed"]
    watcher.join(timeout=300)
    output = result["output"]
    assert result["running_when_killed"], "embed ended before the kill"
    assert result["process"].returncode == -signal.SIGKILL
    with open(output, "rb") as f:
        assert f.read() == result["previous"]
    assert os.path.exists(output + ".partial")  # left by the kill
    # The next run succeeds and removes the stale .partial.
    argv = [*EMBED, "--input", "{sentences}", "--output", output, "--quiet"]
    assert main([a.format(**work) for a in argv]) == 0
    assert not os.path.exists(output + ".partial")
    with h5py.File(output) as f:
        assert sorted(f) == ["0", "1", "sentence_to_index"]
        assert f["1"].shape == (3, 6, 32)
    capsys.readouterr()


def test_a_zero_byte_gz_is_refused_not_read_as_empty(tmp_path, capsys):
    # gzip -t calls it truncated; read as empty text it would be lost.
    empty = tmp_path / "cut.txt.gz"
    empty.write_bytes(b"")
    commands = [
        ["embed", "--model", MODEL_DIR, "--output", str(tmp_path / "e.hdf5")],
        ["train", "--output", str(tmp_path / "run"), *TINY_TRAIN_FLAGS],
        ["embed-corpus", "--model", MODEL_DIR, "--output", str(tmp_path / "c")],
    ]
    flags = ["--input", "--train", "--input"]
    for argv, flag in zip(commands, flags):
        assert main([*argv, flag, str(empty)]) == 2
        err = capsys.readouterr().err
        assert "cut.txt.gz is empty (0 bytes)" in err, err
        assert "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["cut.txt.gz"]
    # An empty text, gzipped, is 20 bytes of gzip or more.
    with gzip.open(empty, "wb"):
        pass
    assert len(empty.read_bytes()) >= 20
