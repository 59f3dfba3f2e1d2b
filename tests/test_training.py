import json
import os

import numpy as np
import pytest

import keras_elmo
from keras_elmo.training.run_directory import load_run
from keras_elmo_cli import main
from tests.helpers import FIXTURES
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import checkpoint_step
from tests.helpers import kill_and_resume
from tests.shared import RUN_STEPS
from tests.shared import TRAIN_FLAGS
from tests.shared import copied

TRAIN_DATA = os.path.join(FIXTURES, "train", "data.txt")
TRAIN_VOCAB = os.path.join(FIXTURES, "train", "vocab.txt")
TINY = [*TINY_TRAIN_FLAGS, "--tokens-per-batch", "64", "--num-sampled", "8"]


def _train_args(output, *extra):
    return [
        "train",
        "--train", TRAIN_DATA,
        "--vocab", TRAIN_VOCAB,
        "--output", str(output),
        "--quiet",
        *TINY,
        *extra,
    ]  # fmt: skip


def test_train_evaluate_export_round_trip(tmp_path, capsys):
    run = tmp_path / "run"
    # float32 whatever the CPU (auto trains in bfloat16 where it is
    # native): the run's own model must equal its export below.
    args = _train_args(
        run, "--validation", TRAIN_DATA, "--steps", "6",
        "--checkpoint-every", "3", "--validate-every", "3",
        "--mixed-precision", "off",
    )  # fmt: skip
    assert main(args) == 0
    assert checkpoint_step(run) == 6
    with open(run / "history.json") as f:
        history = json.load(f)
    assert [h["step"] for h in history] == [3, 6]
    assert os.listdir(run / "logs")  # TensorBoard event files

    capsys.readouterr()
    assert (
        main(["evaluate", "--model", str(run), "--data", TRAIN_DATA, "--quiet"])
        == 0
    )
    printed = capsys.readouterr().out
    assert "held-out perplexity" in printed
    # The same number the last validation recorded (same data, same model).
    reported = float(printed.split("perplexity ")[1].split()[0])
    assert reported == pytest.approx(history[-1]["valid_perplexity"], rel=1e-3)

    export = tmp_path / "export"
    assert (
        main(["export-weights", "--model", str(run), "--output", str(export)])
        == 0
    )
    with open(export / "options.json") as f:
        assert json.load(f)["char_cnn"]["n_characters"] == 262
    bilm = keras_elmo.load_bilm(
        str(export / "options.json"), str(export / "weights.hdf5")
    )
    model, _, _ = load_run(str(run))
    ids = keras_elmo.batch_to_ids([["neural", "nets"], ["a", "b", "c", "d"]])
    ours = model.bilm(ids)["layer_outputs"]
    theirs = bilm(ids)["layer_outputs"]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)


@pytest.mark.large
def test_init_from_export_and_size_mismatch(tmp_path, capsys):
    run = tmp_path / "run"
    assert (
        main(_train_args(run, "--steps", "2", "--checkpoint-every", "2")) == 0
    )
    export = tmp_path / "export"
    assert (
        main(["export-weights", "--model", str(run), "--output", str(export)])
        == 0
    )
    # No size flags: the size is taken from the source.
    second = tmp_path / "second"
    args = [
        "train",
        "--train",
        TRAIN_DATA,
        "--vocab",
        TRAIN_VOCAB,
        "--output",
        str(second),
        "--steps",
        "1",
        "--checkpoint-every",
        "1",
        "--tokens-per-batch",
        "64",
        "--max-length",
        "30",
        "--init-from",
        str(export),
    ]
    assert main(args) == 0
    assert "biLM and softmax" in capsys.readouterr().out
    # Flags that do not fit the source's weights.
    third = tmp_path / "third"
    args = _train_args(third, "--steps", "1", "--init-from", str(export))
    args[args.index("--units") + 1] = "32"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "do not fit the model" in err
    assert "forward_lstm_0/kernel has shape (8, 64) there but (8, 128)" in err


# Large: ~20 s; an interrupted run resumes from its checkpoint by default in
# process
# (tests/test_windows.py::test_a_resumed_run_goes_on_from_its_carried_state).
@pytest.mark.large
def test_resume_after_kill(tmp_path):
    run = tmp_path / "run"
    arguments = _train_args(run, "--steps", "60", "--checkpoint-every", "5")
    kill_and_resume(arguments, run, tmp_path, 60)


# ~28 s on 2 AMD EPYC cores (XLA compiles the training step).
@pytest.mark.large
def test_jit_compile_training(tmp_path, capsys):
    run = tmp_path / "run"
    args = _train_args(
        run, "--steps", "3", "--checkpoint-every", "3", "--jit-compile", "on"
    )
    assert main(args) == 0
    assert checkpoint_step(run) == 3
    assert main(["evaluate", "--model", str(run), "--data", TRAIN_DATA]) == 0
    assert "perplexity" in capsys.readouterr().out

    both = _train_args(
        tmp_path / "r", "--steps", "1", "--jit-compile", "on",
        "--strategy", "one_device",
    )  # fmt: skip
    assert main(both) == 2
    err = capsys.readouterr().err
    assert "not supported with a distribution strategy" in err


def test_bad_inputs(tmp_path, capsys, trained_run):
    missing = _train_args(tmp_path / "r", "--steps", "1")
    missing[missing.index("--train") + 1] = str(tmp_path / "*.none")
    assert main(missing) == 2
    assert "No file matches" in capsys.readouterr().err

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("the\nof\n", encoding="utf-8")
    args = _train_args(tmp_path / "r", "--steps", "1")
    args[args.index("--vocab") + 1] = str(vocab)
    assert main(args) == 2
    assert "<S>, </S>, <UNK>" in capsys.readouterr().err

    no_vocab = _train_args(tmp_path / "r", "--steps", "1")
    del no_vocab[no_vocab.index("--vocab") : no_vocab.index("--vocab") + 2]
    assert main(no_vocab) == 2
    assert "--build-vocab" in capsys.readouterr().err

    # A run of other settings: the shared run (conftest.py `trained_run`)
    # asked to go on with other units.
    run = copied(trained_run, tmp_path / "run")
    other = [
        "train", "--train", TRAIN_DATA, "--vocab", TRAIN_VOCAB,
        "--output", run, "--steps", str(RUN_STEPS + 1), *TRAIN_FLAGS,
    ]  # fmt: skip
    other[other.index("--units") + 1] = "32"
    assert main(other) == 2
    assert "holds a run with other settings" in capsys.readouterr().err

    assert (
        main(["evaluate", "--model", str(tmp_path), "--data", TRAIN_DATA]) == 2
    )
    assert "not a training run directory" in capsys.readouterr().err
