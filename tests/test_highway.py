import numpy as np

from keras_elmo.layers import Highway
from tests.helpers import TestCase


class HighwayTest(TestCase):
    def test_layer_behaviors(self):
        self.run_layer_test(
            Highway,
            {},
            np.random.RandomState(0).randn(2, 4, 3).astype("float32"),
            expected_output_shape=(2, 4, 3),
            expected_num_trainable_weights=4,
            supports_masking=True,
        )

    def test_formula_with_relu_transform(self):
        layer = Highway()
        x = np.random.RandomState(1).randn(2, 3, 5).astype("float32")
        got = layer(x).numpy()
        wc, bc = layer.carry_kernel.numpy(), layer.carry_bias.numpy()
        wt, bt = layer.transform_kernel.numpy(), layer.transform_bias.numpy()
        t = 1 / (1 + np.exp(-(x @ wc + bc)))
        u = np.maximum(x @ wt + bt, 0)
        np.testing.assert_allclose(got, t * u + (1 - t) * x, atol=1e-6)

    def test_gate_starts_mostly_closed(self):
        layer = Highway()
        layer.build((None, 4))
        np.testing.assert_array_equal(layer.carry_bias.numpy(), [-2.0] * 4)
        # Zero kernels: output = sigmoid(-2) * relu(0) + (1 - sigmoid(-2)) x.
        for w in (layer.carry_kernel, layer.transform_kernel):
            w.assign(np.zeros((4, 4), "float32"))
        x = np.arange(8, dtype="float32").reshape(2, 4)
        gate = 1 / (1 + np.exp(2.0))
        np.testing.assert_allclose(layer(x), (1 - gate) * x, rtol=1e-6)
