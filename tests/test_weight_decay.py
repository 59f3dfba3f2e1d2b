"""`--weight-decay`: before each update every weight shrinks by the step's
learning rate x the decay of itself (decoupled, as in AdamW), whatever the
optimizer, rows a sparse gradient does not touch included; checked against
the update computed here by hand, and through `train`, resume and an older
run's `config.json`."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from elmo_core.errors import KerasElmoError
from elmo_core.settings.recipe import SMALL_CORPUS
from elmo_core.settings.training_config import TrainingConfig
from keras_elmo.training.compiled_model import build_optimizer
from tests.helpers import STEPWISE_TRAIN_FLAGS
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import run_weights
from tests.helpers import train_fixture_steps
from tests.helpers import train_interrupted_then_resumed

RATE = 0.01
FLAGS = [
    *TINY_TRAIN_FLAGS,
    "--tokens-per-batch", "64",
    "--num-sampled", "8",
    "--optimizer", "adam",
    "--learning-rate", str(RATE),
    *STEPWISE_TRAIN_FLAGS,
]  # fmt: skip


def _config(**values):
    return TrainingConfig(
        train_files=["train.txt"],
        bilm=dict(filters=[[1, 4]], num_layers=1, units=8, projection_dim=4),
        vocabulary_size=10,
        **values,
    )


def _one_step(optimizer, start, gradient):
    variable = keras.Variable(start)
    optimizer.apply([gradient], [variable])
    return variable.numpy()


@pytest.mark.parametrize("optimizer", ["adam", "adagrad"])
def test_a_zero_gradient_step_only_shrinks(optimizer):
    # Adam's and Adagrad's update of a zero gradient is zero: what is left
    # is the decay, by the learning rate x the decay.
    config = _config(optimizer=optimizer, learning_rate=0.1, weight_decay=2.0)
    start = np.array([[1.0, -2.0], [0.5, 4.0]], "float32")
    got = _one_step(build_optimizer(config), start, np.zeros_like(start))
    np.testing.assert_allclose(got, start * (1 - 0.1 * 2.0), rtol=1e-6)


def test_untouched_rows_of_a_sparse_gradient_shrink_too():
    config = _config(optimizer="adam", learning_rate=0.1, weight_decay=0.5)
    start = np.array([[1.0, 2.0], [3.0, 4.0], [-1.0, 0.5]], "float32")
    gradient = tf.IndexedSlices(
        tf.constant([[1.0, -1.0]]), tf.constant([1]), tf.constant([3, 2])
    )
    got = _one_step(build_optimizer(config), start, gradient)
    expected = start * (1 - 0.1 * 0.5)
    # Adam's first step moves a touched weight by the rate, against the
    # gradient's sign (its bias-corrected moments are g and g^2).
    expected[1] -= 0.1 * np.array([1.0, -1.0])
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_no_decay_is_keras_none():
    assert build_optimizer(_config()).weight_decay is None


def _train(output, steps, *extra, code=0):
    train_fixture_steps(output, steps, *FLAGS, *extra, code=code)


def test_a_training_step_decays_every_weight_by_the_rate(tmp_path):
    # One step from the same start with and without a decay d: the two
    # differ by rate x d x the start (the gradient is taken before the
    # decay), and what the step moved is Adam's first step, at most the
    # rate a weight, and nothing where the gradient is zero.
    decay = 3.0
    _train(tmp_path / "plain", 1, "--weight-decay", "0")
    _train(tmp_path / "decayed", 1, "--weight-decay", str(decay))
    plain, decayed = (
        run_weights(tmp_path / "plain"),
        run_weights(tmp_path / "decayed"),
    )
    still = stepped = 0
    for after, shrunk in zip(plain, decayed):
        start = (after - shrunk) / (RATE * decay)
        moved = np.abs(start - after)
        assert moved.max() <= RATE * 1.001
        still += int(np.sum(moved < 1e-6))
        stepped += int(np.sum(moved > RATE / 2))
        np.testing.assert_allclose(
            shrunk, start * (1 - RATE * decay) - (start - after), atol=1e-6
        )
    # The softmax rows no sampled word touched did not move, and shrank.
    assert still > 0 and stepped > 0
    config = json.loads((tmp_path / "decayed" / "config.json").read_text())
    assert config["weight_decay"] == decay


@pytest.mark.large  # the optimizer is rebuilt from config.json either way
def test_a_resumed_run_keeps_decaying(tmp_path, monkeypatch):
    extra = ("--weight-decay", "2", "--checkpoint-every", "2")
    _train(tmp_path / "whole", 4, *extra)
    train_interrupted_then_resumed(
        monkeypatch,
        lambda code: _train(tmp_path / "resumed", 4, *extra, code=code),
    )
    for got, want in zip(
        run_weights(tmp_path / "resumed"), run_weights(tmp_path / "whole")
    ):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_older_run_without_the_key_had_no_decay(tmp_path, capsys):
    _train(
        tmp_path / "run", 1, "--weight-decay", "0", "--checkpoint-every", "1"
    )
    path = tmp_path / "run" / "config.json"
    config = json.loads(path.read_text())
    del config["weight_decay"]
    path.write_text(json.dumps(config))
    assert TrainingConfig.from_json(config).weight_decay == 0.0
    # It resumes with no decay; the recipe's decay is another run's.
    _train(tmp_path / "run", 2, "--weight-decay", "0")
    capsys.readouterr()
    _train(tmp_path / "run", 3, code=2)
    recipe = SMALL_CORPUS["weight_decay"]
    assert f"weight_decay: 0.0 there, {recipe:g} now" in capsys.readouterr().err


@pytest.mark.parametrize(
    "value, message",
    [
        ("nan", "--weight-decay: expected a number >= 0"),
        ("-0.1", "--weight-decay: expected a number >= 0"),
        ("inf", "--weight-decay: expected a number >= 0"),
        ("100", "Give a decay below 100 (1 / the learning rate)"),
    ],
)
def test_a_bad_decay_is_refused_by_its_flag(tmp_path, capsys, value, message):
    _train(tmp_path / "run", 1, "--weight-decay", value, code=2)
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
    assert not (tmp_path / "run").exists()


def test_a_decay_that_flips_the_weights_is_refused_in_python():
    with pytest.raises(KerasElmoError, match="weight_decay"):
        _config(optimizer="adagrad", weight_decay=5.0)
    assert _config(optimizer="adagrad", weight_decay=4.9).weight_decay == 4.9
