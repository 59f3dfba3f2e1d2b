import keras
import numpy as np
import pytest
from absl.testing import parameterized

from keras_elmo.layers import ProjectedLSTM
from tests.helpers import TestCase
from tests.helpers import assert_gradients_close


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _reference(layer, x, lengths, state=None):
    """SPEC §7-8 step by step in NumPy, per sentence."""
    w = np.concatenate([layer.kernel.numpy(), layer.recurrent_kernel.numpy()])
    b = layer.bias.numpy()
    p = layer.projection_kernel
    outputs = np.zeros((*x.shape[:2], layer.output_dim))
    finals = []
    for row, n in enumerate(lengths):
        if state is None:
            c, h = np.zeros(layer.units), np.zeros(layer.output_dim)
        else:
            c, h = state[0][row], state[1][row]
        steps = range(n - 1, -1, -1) if layer.go_backwards else range(n)
        for t in steps:
            z = np.concatenate([x[row, t], h]) @ w + b
            i, j, f, o = np.split(z, 4)
            c = _sigmoid(f + 1.0) * c + _sigmoid(i) * np.tanh(j)
            if layer.cell_clip:
                c = np.clip(c, -layer.cell_clip, layer.cell_clip)
            h = _sigmoid(o) * np.tanh(c)
            if p is not None:
                h = h @ p.numpy()
            if layer.proj_clip:
                h = np.clip(h, -layer.proj_clip, layer.proj_clip)
            outputs[row, t] = h
        finals.append((c, h))
    return outputs, finals


class ProjectedLSTMTest(TestCase):
    def setUp(self):
        super().setUp()
        self.init_kwargs = {
            "units": 4,
            "projection_dim": 3,
            "cell_clip": 0.5,
            "proj_clip": 0.2,
        }
        rng = np.random.RandomState(0)
        # Large inputs so that both clips are active.
        self.x = (3 * rng.randn(2, 5, 6)).astype("float32")
        self.mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)

    def test_layer_behaviors(self):
        self.run_layer_test(
            ProjectedLSTM,
            self.init_kwargs,
            self.x,
            expected_output_shape=(2, 5, 3),
            expected_num_trainable_weights=4,
            supports_masking=True,
        )

    def test_matches_reference_both_directions_with_clipping(self):
        for go_backwards in (False, True):
            layer = ProjectedLSTM(
                **self.init_kwargs,
                go_backwards=go_backwards,
                return_state=True,
            )
            out, c, h = layer(self.x, mask=self.mask)
            expected, finals = _reference(layer, self.x, [5, 3])
            np.testing.assert_allclose(out, expected, atol=1e-6)
            np.testing.assert_allclose(c, [f[0] for f in finals], atol=1e-6)
            np.testing.assert_allclose(h, [f[1] for f in finals], atol=1e-6)
            # The clips were active.
            self.assertAlmostEqual(np.abs(np.asarray(c)).max(), 0.5, 6)
            self.assertAlmostEqual(np.abs(np.asarray(out)).max(), 0.2, 6)

    def test_backwards_reverses_within_valid_length(self):
        layer = ProjectedLSTM(**self.init_kwargs, go_backwards=True)
        out = layer(self.x, mask=self.mask).numpy()
        # Row 1 has 3 valid steps: its output equals running the first three
        # steps alone, and the padding stays zero.
        alone = layer(self.x[1:, :3]).numpy()
        np.testing.assert_allclose(out[1, :3], alone[0], atol=1e-6)
        self.assertFalse(out[1, 3:].any())

    def test_initial_state_and_no_projection(self):
        layer = ProjectedLSTM(units=3, cell_clip=None, proj_clip=None)
        rng = np.random.RandomState(2)
        state = [rng.randn(2, 3).astype("float32") for _ in range(2)]
        out = layer(self.x, mask=self.mask, initial_state=state)
        self.assertIsNone(layer.projection_kernel)
        expected, _ = _reference(layer, self.x, [5, 3], state=state)
        np.testing.assert_allclose(out, expected, atol=1e-5)

    def test_mask_propagates_to_keras_layers(self):
        inputs = keras.Input((None, 6))
        x = keras.layers.Masking()(inputs)
        x = ProjectedLSTM(**self.init_kwargs)(x)
        self.assertEqual(tuple(x._keras_mask.shape), (None, None))

    def test_invalid_arguments(self):
        with pytest.raises(ValueError, match="units"):
            ProjectedLSTM(units=0)
        with pytest.raises(ValueError, match="cell_clip"):
            ProjectedLSTM(units=2, cell_clip=-1)


def _autodiff_reference(layer, x, mask, state):
    """The same LSTM written step by step with tf ops, differentiated by
    TensorFlow itself (no custom gradient)."""
    import tensorflow as tf

    kernel, recurrent = layer.kernel, layer.recurrent_kernel
    c, h = state
    lengths = mask.sum(1)
    outputs = []
    x = tf.reverse_sequence(x, lengths, 1, 0) if layer.go_backwards else x
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + layer.bias
        i, j, f, o = tf.split(z, 4, axis=1)
        new_c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
        if layer.cell_clip:
            new_c = tf.clip_by_value(new_c, -layer.cell_clip, layer.cell_clip)
        new_h = tf.sigmoid(o) * tf.tanh(new_c)
        if layer.projection_kernel is not None:
            new_h = new_h @ layer.projection_kernel
        if layer.proj_clip:
            new_h = tf.clip_by_value(new_h, -layer.proj_clip, layer.proj_clip)
        valid = mask[:, t : t + 1]
        c = tf.where(valid, new_c, c)
        h = tf.where(valid, new_h, h)
        outputs.append(tf.where(valid, new_h, tf.zeros_like(new_h)))
    y = tf.stack(outputs, axis=1)
    if layer.go_backwards:
        y = tf.reverse_sequence(y, lengths, 1, 0)
    return y, c, h


class ProjectedLSTMGradientTest(TestCase):
    """The hand-written gradient against TensorFlow's autodiff."""

    @parameterized.named_parameters(
        ("forward_projected", False, 3, 0.5, 0.2),
        ("backward_projected", True, 3, 0.5, 0.2),
        ("forward_unprojected_unclipped", False, None, None, None),
        ("backward_cell_clip_only", True, None, 0.3, None),
    )
    def test_gradients_match_autodiff(
        self, go_backwards, projection_dim, cell_clip, proj_clip
    ):
        import tensorflow as tf

        layer = ProjectedLSTM(
            units=4,
            projection_dim=projection_dim,
            cell_clip=cell_clip,
            proj_clip=proj_clip,
            go_backwards=go_backwards,
            return_state=True,
        )
        rng = np.random.RandomState(3)
        x = tf.constant((2 * rng.randn(3, 6, 5)).astype("float32"))
        mask = np.array([[1] * 6, [1] * 4 + [0] * 2, [1] + [0] * 5], bool)
        dim = layer.output_dim if projection_dim else 4
        state = [
            tf.constant(rng.randn(3, 4).astype("float32")),
            tf.constant(rng.randn(3, dim).astype("float32") * 0.1),
        ]
        layer.build(x.shape)
        # Random cotangents for every output, the final state included.
        weights = [
            tf.constant(rng.randn(3, 6, dim).astype("float32")),
            tf.constant(rng.randn(3, 4).astype("float32")),
            tf.constant(rng.randn(3, dim).astype("float32")),
        ]

        def gradients(fn):
            with tf.GradientTape() as tape:
                tape.watch([x] + state)
                outputs = fn()
                loss = sum(
                    tf.reduce_sum(o * w) for o, w in zip(outputs, weights)
                )
            return outputs, tape.gradient(
                loss, [x] + state + layer.trainable_variables
            )

        # training=True runs the loop with the hand-written gradient.
        got_outputs, got = gradients(
            lambda: layer(x, mask=mask, initial_state=state, training=True)
        )
        want_outputs, want = gradients(
            lambda: _autodiff_reference(layer, x, mask, state)
        )
        for a, b in zip(got_outputs, want_outputs):
            np.testing.assert_allclose(a, b, atol=1e-6)
        # The inference loop gives the same forward results.
        inference = layer(x, mask=mask, initial_state=state, training=False)
        for a, b in zip(inference, want_outputs):
            np.testing.assert_allclose(a, b, atol=1e-6)
        for a, b, name in zip(
            got, want, ["x", "c0", "h0"] + [v.name for v in layer.weights]
        ):
            assert_gradients_close(
                tf.convert_to_tensor(a), tf.convert_to_tensor(b), name
            )
