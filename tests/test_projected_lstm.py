import keras
import numpy as np
import pytest

from keras_elmo.layers import ProjectedLSTM
from tests.helpers import TestCase


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
