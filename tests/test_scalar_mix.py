import keras
import numpy as np
import pytest

from keras_elmo.layers import ScalarMix
from tests.helpers import HALF_POLICIES
from tests.helpers import TestCase


class ScalarMixTest(TestCase):
    def setUp(self):
        super().setUp()
        rng = np.random.RandomState(0)
        self.layers = [rng.randn(2, 4, 3).astype("float32") for _ in range(3)]
        self.mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], bool)

    def test_layer_behaviors(self):
        layer = ScalarMix()
        self.run_serialization_test(layer)
        out = layer(self.layers)
        self.assertEqual(tuple(out.shape), (2, 4, 3))
        self.assertLen(layer.trainable_weights, 2)
        for policy in HALF_POLICIES:
            out = ScalarMix(dtype=policy)(self.layers)
            self.assertEqual(out.dtype.name, policy.split("_")[1])

    def test_weighted_sum_gamma_and_mask(self):
        layer = ScalarMix(initial_scalar_weights=[0.0, 1.0, 2.0])
        out = layer(self.layers, mask=self.mask).numpy()
        w = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
        expected = sum(wk * x for wk, x in zip(w, self.layers))
        expected *= self.mask[..., None]
        np.testing.assert_allclose(out, expected, atol=1e-6)
        layer.gamma.assign(2.0)
        np.testing.assert_allclose(
            layer(self.layers, mask=self.mask), 2 * expected, atol=1e-6
        )

    def test_masked_layer_norm(self):
        layer = ScalarMix(do_layer_norm=True)
        out = layer(self.layers, mask=self.mask).numpy()
        keep = self.mask[..., None]
        expected = 0
        for x in self.layers:
            values = x[np.broadcast_to(keep, x.shape)]
            mean, var = values.mean(), values.var()
            expected = expected + (x - mean) / np.sqrt(var + 1e-12) / 3
        np.testing.assert_allclose(out, expected * keep, atol=1e-5)

    def test_top_layer_only(self):
        layer = ScalarMix(top_layer_only=True)
        np.testing.assert_allclose(layer(self.layers), self.layers[-1])

    def test_l2_penalty_and_fixed_weights(self):
        layer = ScalarMix(initial_scalar_weights=[1.0, 2.0, 3.0], l2_coef=0.5)
        layer(self.layers)
        self.assertAllClose(sum(layer.losses), 0.5 * (1 + 4 + 9))
        fixed = ScalarMix(
            initial_scalar_weights=[1.0, 2.0, 3.0], trainable=False
        )
        fixed(self.layers)
        self.assertEmpty(fixed.trainable_weights)

    def test_trains_with_fit(self):
        inputs = [keras.Input((4, 3)) for _ in range(3)]
        model = keras.Model(inputs, ScalarMix(l2_coef=0.001)(inputs))
        model.compile(keras.optimizers.SGD(0.5), loss="mse")
        model.fit(self.layers, self.layers[2], epochs=20, verbose=0)
        weights = model.layers[-1].scalar_weights.numpy()
        # It learns to pick the layer that equals the target.
        self.assertEqual(int(np.argmax(weights)), 2)

    def test_invalid_arguments(self):
        with pytest.raises(ValueError, match="one per layer"):
            ScalarMix(initial_scalar_weights=[0.0, 0.0])(self.layers)
        with pytest.raises(ValueError, match="list of layer tensors"):
            ScalarMix()(self.layers[0])
        with pytest.raises(ValueError, match="l2_coef"):
            ScalarMix(l2_coef=-1)
