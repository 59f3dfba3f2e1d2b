import numpy as np
import pytest

import keras_elmo
from keras_elmo.layers import CharCNN
from tests.helpers import TestCase


def _reference(layer, ids):
    """SPEC §4 written out with loops, from the layer's weights."""
    table = np.concatenate(
        [np.zeros((1, layer.char_embedding_dim)), layer.embeddings.numpy()]
    )
    out = []
    for token in ids.reshape(-1, ids.shape[-1]):
        x = table[token]
        features = []
        for kernel, bias in zip(layer.kernels, layer.biases):
            w = kernel.numpy()
            width = w.shape[0]
            conv = [
                bias.numpy() + np.einsum("kc,kco->o", x[t : t + width], w)
                for t in range(len(token) - width + 1)
            ]
            features.append(np.max(conv, axis=0))
        h = np.concatenate(features)
        out.append(
            np.maximum(h, 0) if layer.activation == "relu" else np.tanh(h)
        )
    return np.reshape(out, (*ids.shape[:-1], -1))


class CharCNNTest(TestCase):
    def setUp(self):
        super().setUp()
        self.init_kwargs = {
            "filters": [[1, 2], [3, 4]],
            "char_embedding_dim": 4,
        }
        self.ids = keras_elmo.batch_to_ids([["ab", "cat", "x"], ["hello"]])

    def test_layer_behaviors(self):
        self.run_layer_test(
            CharCNN,
            self.init_kwargs,
            self.ids,
            expected_output_shape=(2, 3, 6),
            expected_num_trainable_weights=5,
            expected_mask_shape=(2, 3),
            supports_masking=True,
        )

    def test_matches_written_out_reference(self):
        for activation in ("relu", "tanh"):
            layer = CharCNN(**self.init_kwargs, activation=activation)
            got = layer(self.ids).numpy()
            np.testing.assert_allclose(
                got, _reference(layer, self.ids), atol=1e-5, rtol=0
            )

    def test_padding_token_embeds_to_zero_but_padding_char_does_not(self):
        layer = CharCNN(filters=[[1, 3]], char_embedding_dim=2)
        layer.build((None, None, 50))
        layer.embeddings.assign(np.full((261, 2), 5.0, "float32"))
        layer.kernels[0].assign(np.ones((1, 2, 3), "float32"))
        layer.biases[0].assign(np.zeros((3,), "float32"))
        # A padding token (all zeros) sees only zero embeddings: relu(0).
        ids = np.zeros((1, 1, 50), "int32")
        np.testing.assert_allclose(layer(ids), np.zeros((1, 1, 3)))
        # A real token's padding chars (261) have learned vectors.
        ids[0, 0, :] = 261
        np.testing.assert_allclose(layer(ids), np.full((1, 1, 3), 10.0))

    def test_invalid_arguments(self):
        with pytest.raises(ValueError, match="Unknown activation 'gelu'"):
            CharCNN(activation="gelu")
        with pytest.raises(ValueError, match=r"width <= 50"):
            CharCNN(filters=[[51, 2]])
        with pytest.raises(ValueError, match="at least one"):
            CharCNN(filters=[])
