"""The learning-rate schedule: warm-up, linear decay to zero, and a decay
whose end a time budget moves (rates computed by hand)."""

import numpy as np

from keras_elmo.optimizers.warmup_decay import WarmupDecay


def _rates(schedule, steps):
    return [schedule.rate(step) for step in steps]


def test_warmup_then_linear_decay_to_zero():
    schedule = WarmupDecay(1.0, warmup_steps=4, total_steps=10)
    expected = [0.25, 0.5, 0.75, 1.0] + [(10 - t) / 6 for t in range(4, 11)]
    np.testing.assert_allclose(_rates(schedule, range(11)), expected, 1e-6)


def test_without_warmup_the_decay_starts_at_once():
    schedule = WarmupDecay(0.003, total_steps=4)
    expected = [0.003, 0.00225, 0.0015, 0.00075, 0.0]
    np.testing.assert_allclose(_rates(schedule, range(5)), expected, 1e-6)


def test_constant_after_the_warmup():
    schedule = WarmupDecay(2.0, warmup_steps=2, total_steps=3, decay=False)
    np.testing.assert_allclose(_rates(schedule, range(5)), [1, 2, 2, 2, 2])
    schedule.replan(3, 4)  # nothing to move
    np.testing.assert_allclose(schedule.rate(10), 2.0)


def test_a_new_end_continues_from_the_current_rate():
    schedule = WarmupDecay(1.0, warmup_steps=4, total_steps=10)
    schedule.replan(6, 20)  # at step 6 the rate is 4 / 6
    expected = [4 / 6 * (20 - t) / 14 for t in range(6, 21)]
    np.testing.assert_allclose(_rates(schedule, range(6, 21)), expected, 1e-6)
    # A plan made during the warm-up keeps the warm-up.
    schedule = WarmupDecay(1.0, warmup_steps=4, total_steps=10**12)
    schedule.replan(1, 8)
    expected = [0.25, 0.5, 0.75, 1.0, 1.0, 0.75, 0.5, 0.25, 0.0]
    np.testing.assert_allclose(_rates(schedule, range(9)), expected, 1e-6)


def test_a_run_shorter_than_its_warmup_still_trains():
    schedule = WarmupDecay(1.0, warmup_steps=100, total_steps=10**12)
    schedule.replan(1, 3)  # at step 1 the rate is 0.02
    np.testing.assert_allclose(
        _rates(schedule, range(4)), [0.01, 0.02, 0.01, 0.0], 1e-6
    )
    short = WarmupDecay(1.0, warmup_steps=100, total_steps=3)
    assert short.rate(1) > 0 and short.rate(2) > 0


def test_the_state_round_trip():
    schedule = WarmupDecay(1.0, warmup_steps=4, total_steps=10)
    schedule.replan(6, 20)
    other = WarmupDecay(1.0, warmup_steps=4, total_steps=10**12)
    other.restore(schedule.state())
    np.testing.assert_allclose(
        _rates(other, range(21)), _rates(schedule, range(21)), 1e-7
    )
