"""The TensorFlow LSTM loop on the rows still running
(`keras_elmo/layers/backends/tensorflow_rows.py`, `tensorflow_recurrence.py`):
the row plan by hand, padding never read, rows of any length and order
against each row alone, batches with nothing to run."""

import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.layers import ProjectedLSTM
from keras_elmo.layers.backends.tensorflow_rows import Rows
from tests.helpers import assert_gradients_close

LENGTHS = (3, 0, 5, 1, 5)


def _mask(lengths, steps):
    return np.arange(steps)[None, :] < np.array(lengths)[:, None]


def _layer(go_backwards=False, depth=6):
    layer = ProjectedLSTM(
        units=8,
        projection_dim=5,
        cell_clip=1.0,
        proj_clip=0.5,
        go_backwards=go_backwards,
        return_state=True,
    )
    layer.build((None, None, depth))
    return layer


def _inputs(lengths, steps, depth=6, padding=0.0, seed=0):
    rng = np.random.default_rng(seed)
    x = (2 * rng.standard_normal((len(lengths), steps, depth))).astype("f")
    x[~_mask(lengths, steps)] = padding
    return x


def _state(batch, seed=1):
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((batch, 8)).astype("float32"),
        (0.3 * rng.standard_normal((batch, 5))).astype("float32"),
    ]


def _run(layer, x, mask, state, training):
    """Outputs, final states and the gradients of a weighted sum of all
    three with respect to the inputs, the initial state and the weights."""
    x, state = tf.constant(x), [tf.constant(s) for s in state]
    with tf.GradientTape() as tape:
        tape.watch([x, *state])
        outputs = layer(x, mask=mask, initial_state=state, training=training)
        loss = sum(
            tf.reduce_sum(o * (k + 1.0) * tf.cos(tf.cast(o, tf.float32)))
            for k, o in enumerate(outputs)
        )
    sources = [x, *state, *layer.trainable_variables]
    grads = tape.gradient(loss, sources)
    # (An eager loop of no steps leaves the inputs unconnected: zeros.)
    return [o.numpy() for o in outputs], [
        np.zeros(s.shape, "float32")
        if g is None
        else tf.convert_to_tensor(g).numpy()
        for s, g in zip(sources, grads)
    ]


def test_rows_longest_first_and_packed():
    rows = Rows(tf.constant(_mask(LENGTHS, 6).T[:, :, None]))
    # Longest first, ties in batch order; the empty row last.
    assert rows.order.numpy().tolist() == [2, 4, 0, 3, 1]
    assert rows.inverse.numpy().tolist() == [2, 4, 0, 3, 1]
    assert int(rows.steps) == 5
    assert rows.sizes.numpy().tolist() == [4, 3, 3, 2, 2]
    assert rows.offsets.numpy().tolist() == [0, 4, 7, 10, 12]
    index = rows.index.numpy().tolist()
    assert index[:4] == [[0, 2], [0, 4], [0, 0], [0, 3]]
    assert index[4:7] == [[1, 2], [1, 4], [1, 0]]
    assert len(index) == sum(LENGTHS)
    # Packed position 4 (step 1, row 2) follows position 0 (step 0, row
    # 2), stored after the 5 initial states; step 0 reads them.
    assert rows.previous.numpy().tolist()[:5] == [0, 1, 2, 3, 5]


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_padding_is_never_read(training, go_backwards):
    # NaN at every padding position: neither the outputs nor any gradient
    # may see it (the loop computes input products, steps and weight
    # gradients at real tokens only).
    layer = _layer(go_backwards)
    mask = _mask(LENGTHS, 7)
    state = _state(len(LENGTHS))
    clean = _run(layer, _inputs(LENGTHS, 7), mask, state, training)
    poisoned = _run(
        layer, _inputs(LENGTHS, 7, padding=np.nan), mask, state, training
    )
    for want, got in zip(clean[0] + clean[1], poisoned[0] + poisoned[1]):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("training", [True, False])
def test_rows_of_any_length_match_each_row_alone(training):
    layer = _layer()
    x, state = _inputs(LENGTHS, 6), _state(len(LENGTHS))
    outputs, grads = _run(layer, x, _mask(LENGTHS, 6), state, training)
    total = [np.zeros_like(g) for g in grads]
    for b, n in enumerate(LENGTHS):
        alone = _run(
            layer,
            x[b : b + 1, : max(n, 1)],
            _mask([n], max(n, 1)),
            [s[b : b + 1] for s in state],
            training,
        )
        np.testing.assert_allclose(
            outputs[0][b, :n], alone[0][0][0, :n], atol=1e-6
        )
        assert not outputs[0][b, n:].any()
        for k in (1, 2):  # final c and h
            np.testing.assert_allclose(outputs[k][b], alone[0][k][0], atol=1e-6)
        assert_gradients_close(grads[0][b, :n], alone[1][0][0, :n], "x")
        assert not grads[0][b, n:].any()
        for k in (1, 2):  # initial c and h
            assert_gradients_close(grads[k][b], alone[1][k][0], f"state {k}")
        for k in range(3, len(grads)):  # weights: summed over the rows
            total[k] += alone[1][k]
    for k in range(3, len(grads)):
        np.testing.assert_allclose(grads[k], total[k], atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("steps", [0, 4])
def test_nothing_to_run(training, steps):
    # Every row empty (or no time axis): zero outputs, the initial state
    # as the final one, and its gradient passed straight back.
    layer = _layer()
    state = _state(3)
    outputs, grads = _run(
        layer,
        _inputs([0, 0, 0], steps),
        _mask([0, 0, 0], steps),
        state,
        training,
    )
    assert outputs[0].shape == (3, steps, 5) and not outputs[0].any()
    np.testing.assert_array_equal(outputs[1], state[0])
    np.testing.assert_array_equal(outputs[2], state[1])
    assert not grads[0].any()
    assert all(not g.any() for g in grads[3:])


def test_one_trace_serves_every_shape():
    layer = _layer()
    traces = []

    @tf.function(
        input_signature=[
            tf.TensorSpec((None, None, 6), tf.float32),
            tf.TensorSpec((None, None), tf.bool),
        ]
    )
    def run(x, mask):
        traces.append(1)
        return layer(x, mask=mask)[0]

    for lengths, steps in (((3, 1), 4), ((5, 0, 2), 9), ((1,), 1)):
        x = _inputs(lengths, steps)
        want = layer(x, mask=_mask(lengths, steps))[0]
        got = run(x, _mask(lengths, steps))
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert len(traces) == 1


@pytest.mark.parametrize("go_backwards", [False, True])
def test_the_masked_loop_xla_runs_equals_the_packed_one(
    monkeypatch, go_backwards
):
    # Under XLA every row runs at every step, masked, and TensorFlow
    # differentiates the loop (`masked_recurrence`); run eagerly here, it
    # must give the packed loop's outputs, final states and hand-written
    # gradients, with clips binding and a row of no tokens.
    from keras_elmo.layers.backends import tensorflow_backend

    layer = _layer(go_backwards)
    x, mask, state = _inputs(LENGTHS, 6), _mask(LENGTHS, 6), _state(5)
    packed = _run(layer, x, mask, state, training=True)
    monkeypatch.setattr(tensorflow_backend, "_in_xla", lambda: True)
    masked = _run(layer, x, mask, state, training=True)
    for want, got in zip(packed[0], masked[0]):
        np.testing.assert_allclose(got, want, atol=1e-6)
    for k, (want, got) in enumerate(zip(packed[1], masked[1])):
        assert_gradients_close(got, want, f"gradient {k}")
