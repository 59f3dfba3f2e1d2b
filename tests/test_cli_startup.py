"""The command line answers `--help`, `--version`, `presets`, `download`
and usage mistakes without importing TensorFlow, in two-line usage errors, and
`train` reports progress as the other commands do."""

import io
import json
import os
import subprocess
import sys

import pytest

from elmo_core import progress as progress_module
from elmo_core.progress import Progress
from keras_elmo_cli import main
from tests.helpers import ROOT
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import run_python
from tests.helpers import subprocess_env

# Each argv must leave TensorFlow (and Keras, and Apache Beam) unimported.
LIGHT_COMMANDS = [
    ["--help"],
    ["--version"],
    ["presets"],
    ["download", "no-such-model"],  # tried and refused without Keras
    ["embed", "--help"],
    ["embed-corpus", "--help"],
    ["dump-token-embeddings", "--help"],
    ["train", "--help"],
    ["evaluate", "--help"],
    ["export-weights", "--help"],
    ["export-savedmodel", "--help"],
    ["export-onnx", "--help"],
    ["export-litert", "--help"],
    ["download", "--help"],
    ["presets", "--help"],
    [],  # no command: a usage error
    ["bogus"],
    ["train"],  # missing required flags
    ["embed", "--batch-size", "x", "--input", "a", "--output", "b"],
    ["embed-corpus", "--max-batch-tokens", "0", "--input", "a"],
    ["export-onnx", "--precision", "float16", "--output", "x.onnx"],
]

PROBE = r"""
import json, sys
from keras_elmo_cli import main
status = main(json.loads(sys.argv[1]))
heavy = [m for m in ("tensorflow", "keras", "apache_beam") if m in sys.modules]
print(json.dumps({"status": status, "heavy": heavy}))
"""


def _probe(argv, tmp_path):
    ran = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(KERAS_ELMO_HOME=str(tmp_path / "cache")),
    )
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    return result, ran.stderr


def test_light_commands_do_not_import_tensorflow(tmp_path):
    for argv in LIGHT_COMMANDS:
        result, err = _probe(argv, tmp_path)
        assert result["heavy"] == [], (argv, result)
        is_help = argv in (["--help"], ["--version"]) or "--help" in argv
        expected = 0 if is_help or argv == ["presets"] else 2
        assert result["status"] == expected, (argv, result, err)


# Each example script's --help, run in one child: its exit status and
# the heavy modules imported by then (`PATHS`: the scripts, as JSON).
EXAMPLES_PROBE = r"""
import json, runpy, sys
results = {}
for path in json.loads(PATHS):
    sys.argv = [path, "--help"]
    try:
        runpy.run_path(path, run_name="__main__")
        status = None
    except SystemExit as stop:
        status = stop.code
    heavy = [m for m in ("tensorflow", "keras") if m in sys.modules]
    results[path] = {"status": status, "heavy": heavy}
print(json.dumps(results))
"""


def test_example_scripts_answer_help_without_tensorflow():
    examples = os.path.join(ROOT, "examples")
    paths = sorted(
        os.path.join(examples, name)
        for name in os.listdir(examples)
        if name.endswith(".py")
    )
    probe = f"PATHS = {json.dumps(paths)!r}\n" + EXAMPLES_PROBE
    ran = run_python(probe, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    results = json.loads(ran.stdout.strip().splitlines()[-1])
    assert sorted(results) == paths
    for path, result in results.items():
        assert result == {"status": 0, "heavy": []}, (path, result)


@pytest.mark.parametrize(
    "argv, usage, error",
    [
        ([], "usage: keras-elmo COMMAND [OPTIONS]", "required: COMMAND"),
        (
            ["train", "--train", "x.txt"],
            "usage: keras-elmo train [OPTIONS]",
            "required: --output",
        ),
        (
            ["embed", "--top", "--average"],
            "usage: keras-elmo embed [OPTIONS]",
            "not allowed with argument --top",
        ),
    ],
)
def test_usage_mistake_is_two_lines(argv, usage, error, capsys):
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(usage) and "--help" in lines[0]
    assert lines[1].startswith("keras-elmo") and error in lines[1]


def test_help_shows_the_library_defaults(capsys):
    from elmo_core.embedding_files import sentences
    from elmo_core.embedding_files import token_batches
    from elmo_core.embedding_files.hdf5_layout import DEFAULT_SENTENCE_BATCH
    from elmo_core.formats.savedmodel_limits import DEFAULT_MAX_BATCH_TOKENS
    from elmo_core.settings.training_config import DEFAULT_CHECKPOINT_EVERY

    def shown(*argv):
        with pytest.raises(SystemExit):
            from keras_elmo_cli import build_parser

            build_parser().parse_args([*argv, "--help"])
        return " ".join(capsys.readouterr().out.split())

    embed = shown("embed")
    assert f"(default {DEFAULT_SENTENCE_BATCH})" in embed
    corpus = shown("embed-corpus")
    # One default for the same work on both commands.
    for text in (embed, corpus):
        assert f"(default {token_batches.DEFAULT_MAX_BATCH_TOKENS})" in text
    assert f"(default {sentences.DEFAULT_MAX_SENTENCE_TOKENS})" in corpus
    assert f"(default {DEFAULT_MAX_BATCH_TOKENS})" in shown("export-savedmodel")
    train = shown("train")
    assert f"(default {DEFAULT_CHECKPOINT_EVERY})" in train
    assert "a pretrained model name" in train  # --init-from
    assert "an input" in train  # --vocab
    assert "a pretrained model name" in shown("embed")  # --model
    assert "(path or URL)" in shown("embed")  # --options / --weights
    assert "ONNX int8 only" in shown("export-onnx")  # --per-channel


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_progress_lines_and_a_first_eta_that_is_not_far_off(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(progress_module.time, "time", clock)
    stream = io.StringIO()
    progress = Progress(100, "step", label="train", interval=10, stream=stream)
    clock.now += 60  # the first step: tracing and compiling
    progress.update(1, [("loss", 5.25)])
    for step in range(2, 101):
        clock.now += 1.0  # then one step a second
        progress.update(step, [("loss", 5.0)])
    lines = stream.getvalue().splitlines()
    # The first step, then one line every 10 s, then the last.
    assert lines[0] == "train: 1/100 steps (1%), loss 5.25"
    assert len(lines) == 1 + 9 + 1
    assert lines[1] == (
        "train: 11/100 steps (11%), loss 5, 1.00 steps/s, ETA 89s"
    )
    assert lines[-1].startswith("train: 100/100 steps (100%)")
    assert "ETA" not in lines[-1]


def test_train_reports_steps_and_validation_in_a_log(tmp_path, capsys):
    corpus = tmp_path / "train.txt"
    corpus.write_text(
        "\n".join(f"the cat {i} sat on the mat" for i in range(60)) + "\n",
        encoding="utf-8",
    )
    valid = tmp_path / "valid.txt"
    valid.write_text("the cat sat\non the mat\n", encoding="utf-8")
    argv = ["train", "--train", str(corpus), "--validation", str(valid),
            "--build-vocab", "--output", str(tmp_path / "run"), "--steps",
            "4", "--checkpoint-every", "2", "--tokens-per-batch", "64",
            "--num-sampled", "4", *TINY_TRAIN_FLAGS]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    steps = [line for line in out if line.startswith("train: ")]
    assert steps[0].startswith("train: 1/4 steps (25%), epoch ")
    assert "sampled ppl" in steps[0] and "loss" in steps[0]
    assert steps[-1].startswith("train: 4/4 steps (100%)")
    validation = [line for line in out if line.startswith("validation: ")]
    assert validation and "batch" in validation[-1]
    assert any(line.startswith("validation at step 4") for line in out)
    assert os.path.isfile(tmp_path / "run" / "history.json")


def test_embed_runtime_says_it_is_exporting(monkeypatch, capsys):
    from elmo_core import runtime
    from keras_elmo import export
    from keras_elmo.corpus.embedding import runtime_bilm

    written = []
    monkeypatch.setattr(
        export, "to_onnx", lambda bilm, path, precision: written.append(path)
    )
    monkeypatch.setattr(runtime, "ONNXBiLM", lambda path: ("loaded", path))
    assert runtime_bilm("bilm", "onnx", "int8")[0] == "loaded"
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("embed: exporting the biLM to onnx (int8)")
    assert err[1].startswith("embed: exported in ")
    assert runtime_bilm("bilm", "onnx", "int8", verbose=0)[0] == "loaded"
    captured = capsys.readouterr()
    assert captured.out == captured.err == "" and len(written) == 2


# A command run as the program, `keras_elmo_cli.command` (the console
# script): the modules TensorFlow would import for features no command
# uses stay out of the process, the names stay importable afterwards, and
# the exit status and output survive the faster exit.
PROGRAM = r"""
import atexit, json, sys

def report():
    # Neither imported, nor left hidden (a None entry would make a later
    # `import jax` fail): the names are free again.
    found = {m: m in sys.modules for m in ("jax", "IPython")}
    print(json.dumps({"imported": found}))

atexit.register(report)
sys.argv = ["keras-elmo", *json.loads(sys.argv[1])]
from keras_elmo_cli import command
command()
"""


@pytest.mark.parametrize("works", [True, False], ids=["embeds", "refused"])
def test_the_program_starts_without_jax_and_ipython(tmp_path, works):
    from tests.helpers import OPTIONS
    from tests.helpers import WEIGHTS

    text = tmp_path / "in.txt"
    text.write_text("the cat sat\n\non the mat .\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    weights = WEIGHTS if works else str(tmp_path / "missing.hdf5")
    argv = ["embed", "--options", OPTIONS, "--weights", weights,
            "--input", str(text), "--output", str(out)]  # fmt: skip
    env = subprocess_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")  # the command quiets TensorFlow itself
    ran = subprocess.run(
        [sys.executable, "-c", PROGRAM, json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    lines = ran.stdout.strip().splitlines()
    assert json.loads(lines[-1]) == {
        "imported": {"jax": False, "IPython": False}
    }, ran.stdout
    if works:
        assert ran.returncode == 0, ran.stderr
        assert lines[-2] == f"Wrote the biLM layers of 3 sentences to {out}"
        assert ran.stderr == ""
        import h5py

        with h5py.File(out) as f:
            assert sorted(f) == ["0", "1", "2", "sentence_to_index"]
    else:
        assert ran.returncode == 2
        assert ran.stderr.startswith("keras-elmo embed: error: --weights: ")
        assert "missing.hdf5" in ran.stderr and not out.exists()
