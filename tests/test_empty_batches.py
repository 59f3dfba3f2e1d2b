"""Batches with nothing (or little) to run, on TensorFlow
(`tests/backend_checks/empty_batches.py`; JAX and PyTorch are compared
with these results in `tests/test_backends.py`).

The TensorFlow loop runs only the rows still running and at least one
step (`keras_elmo/layers/backends/tensorflow_rows.py`): a batch of no
rows, of empty rows only, or with empty rows among others must give
what each row gives alone, in inference, in the training call and its
gradients; a stateful biLM keeps the state of the rows past the batch,
and each row's state is the one that row reaches alone.
"""

import numpy as np
import pytest

from tests.backend_checks import empty_batches
from tests.backend_checks.empty_batches import CASES
from tests.backend_checks.empty_batches import ids

ATOL = 1e-5
# Largest |difference| / largest |gradient| of a weight: sums over the
# rows in another order.
RELATIVE = 1e-5


@pytest.fixture(scope="module")
def found():
    return empty_batches.results()


@pytest.fixture(scope="module")
def plain():
    return empty_batches.bilm()


def _rows(case):
    return [] if isinstance(case, tuple) else case


def _lengths(case):
    if isinstance(case, tuple):
        return [0] * case[0]
    return [len(row) for row in case]


@pytest.mark.parametrize("name", CASES)
def test_shapes_mask_and_training_call(found, name):
    batch, steps = ids(CASES[name]).shape[:2]
    layers, mask = found[f"{name}/layers"], found[f"{name}/mask"]
    assert layers.shape == (3, batch, steps, empty_batches.WIDTH)
    assert mask.shape == (batch, steps)
    lengths = np.array(_lengths(CASES[name]), int).reshape(-1, 1)
    expected = np.arange(steps)[None, :] < lengths
    np.testing.assert_array_equal(mask, expected.reshape(batch, steps))
    # Nothing at padding; no dropout, so training gives the same.
    assert not layers[:, ~mask].any()
    np.testing.assert_array_equal(found[f"{name}/training_layers"], layers)


@pytest.mark.parametrize("name", CASES)
def test_each_row_as_alone(found, plain, name):
    inputs = ids(CASES[name])
    layers = found[f"{name}/layers"]
    for b in range(len(inputs)):
        alone, _ = empty_batches.layers(plain(inputs[b : b + 1]))
        np.testing.assert_allclose(layers[:, b], alone[:, 0], atol=ATOL)


@pytest.mark.parametrize("name", CASES)
def test_gradients_sum_of_rows_alone(found, plain, name):
    inputs = ids(CASES[name])
    weights = empty_batches.loss_weights(*inputs.shape[:2])
    prefix = f"{name}/gradient/"
    got = {k[len(prefix) :]: v for k, v in found.items() if prefix in k}
    want = {k: np.zeros_like(v) for k, v in got.items()}
    for b, row in enumerate(_rows(CASES[name])):
        if row:
            alone = empty_batches.gradients(
                plain, ids([row]), weights[:, b : b + 1, : len(row)]
            )
            for path, grad in alone.items():
                want[path] += grad
    assert len(got) == len(plain.trainable_variables)
    for path, grad in got.items():
        assert np.isfinite(grad).all(), path
        scale = max(np.abs(want[path]).max(), 1e-30)
        if not any(_rows(CASES[name])):
            # Nothing to learn from: no gradient at all.
            assert not grad.any(), path
        else:
            assert np.abs(grad - want[path]).max() <= RELATIVE * scale, path


@pytest.mark.large
@pytest.mark.parametrize("name", CASES)
def test_stateful_rows_as_alone(found, name):
    # An empty sentence still runs its boundary tokens (<S> </S>, as in
    # bilm-tf); the rows past the batch keep their state.
    inputs = ids(CASES[name])
    ordinary = ids(empty_batches.ORDINARY)
    before = found[f"{name}/stateful/state_0"]
    after = found[f"{name}/stateful/state_1"]
    np.testing.assert_array_equal(after[len(inputs) :], before[len(inputs) :])
    for b in range(len(inputs)):
        model = empty_batches.bilm(stateful=True, max_batch_size=1)
        if b < len(ordinary):
            model(ordinary[b : b + 1])
        np.testing.assert_array_equal(empty_batches.state(model)[0], before[b])
        model(inputs[b : b + 1])
        got = empty_batches.state(model)[0]
        np.testing.assert_allclose(after[b], got, atol=ATOL)


@pytest.mark.parametrize("name", ["no_rows", "no_rows_with_steps"])
def test_stateful_call_of_no_rows_changes_nothing(found, name):
    # ORDINARY twice in a row, without the empty batch between them.
    model = empty_batches.bilm(
        stateful=True, max_batch_size=empty_batches.MAX_BATCH_SIZE
    )
    model(ids(empty_batches.ORDINARY))
    twice, _ = empty_batches.layers(model(ids(empty_batches.ORDINARY)))
    got = found[f"{name}/stateful/layers_2"]
    np.testing.assert_allclose(got, twice, atol=ATOL)
