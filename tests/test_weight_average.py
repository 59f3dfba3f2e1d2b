"""`--weight-average`: the run's weights after its last step are the
exponential moving average of the weights after each step, computed here
by hand from runs without an average; it survives a resume."""

import numpy as np
import pytest

from tests.helpers import STEPWISE_TRAIN_FLAGS
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import run_weights
from tests.helpers import train_fixture_steps
from tests.helpers import train_interrupted_then_resumed

# A constant rate and no warm-up: the first steps of a longer run are the
# steps of a shorter one.
FLAGS = [
    *TINY_TRAIN_FLAGS,
    "--tokens-per-batch", "64",
    "--num-sampled", "8",
    *STEPWISE_TRAIN_FLAGS,
]  # fmt: skip


def _train(output, steps, *extra, code=0):
    train_fixture_steps(output, steps, *FLAGS, *extra, code=code)


def test_the_last_weights_are_the_moving_average(tmp_path):
    raw = []
    for steps in (1, 2, 3):
        _train(tmp_path / f"raw{steps}", steps)
        raw.append(run_weights(tmp_path / f"raw{steps}"))
    _train(tmp_path / "average", 3, "--weight-average", "0.6")
    averaged = run_weights(tmp_path / "average")
    # The average starts at the weights after the first step.
    expected = raw[0]
    for step in raw[1:]:
        expected = [0.6 * e + 0.4 * w for e, w in zip(expected, step)]
    moved = 0
    for got, want, last in zip(averaged, expected, raw[-1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        moved += not np.allclose(want, last, atol=1e-6)
    # Most weights differ from the last step's: the average is not them.
    assert moved > len(expected) // 2


# Large: ~16 s; the average itself is checked by default
# (test_the_last_weights_are_the_moving_average)
@pytest.mark.large
def test_a_resumed_run_keeps_its_average(tmp_path, monkeypatch):
    _train(tmp_path / "whole", 4, "--weight-average", "0.5",
           "--checkpoint-every", "2")  # fmt: skip
    whole = run_weights(tmp_path / "whole")
    train_interrupted_then_resumed(
        monkeypatch,
        lambda code: _train(tmp_path / "resumed", 4, "--weight-average",
                            "0.5", "--checkpoint-every", "2", code=code),
    )  # fmt: skip
    for got, want in zip(run_weights(tmp_path / "resumed"), whole):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "value, message",
    [
        ("1", "--weight-average must be below 1"),
        ("1.5", "--weight-average"),
        ("nan", "--weight-average"),
        ("-0.1", "--weight-average"),
    ],
)
def test_a_bad_momentum_is_refused_by_its_flag(tmp_path, capsys, value,
                                               message):  # fmt: skip
    _train(tmp_path / "run", 1, "--weight-average", value, code=2)
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
    assert not (tmp_path / "run").exists()
