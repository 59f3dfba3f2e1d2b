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

    def test_characters_cut_rows_whose_tail_is_constant(self):
        # Tails of the padding character, of id 0 and of another id start
        # at positions 3, 6 and 0; a cut at tail start + widest filter (3)
        # keeps every window value, so the written-out reference of the
        # whole rows holds; a cut one position shorter does not.
        ids = np.full((1, 3, 50), 261, "int32")
        ids[0, 0, :3] = [259, 66, 260]
        ids[0, 1] = 0
        ids[0, 1, :6] = [259, 120, 3, 99, 7, 260]
        ids[0, 2] = 42
        layer = CharCNN(**self.init_kwargs, activation="tanh")
        layer.build((None, None, 50))
        # Every window of the widest filter is negative but the one of
        # id 0 alone (zero embeddings): it holds the maximum.
        layer.embeddings.assign(np.ones((261, 4), "float32"))
        layer.kernels[1].assign(-np.ones((3, 4, 4), "float32"))
        reference = _reference(layer, ids)
        got = layer(ids, characters=9).numpy()
        np.testing.assert_allclose(got, reference, atol=1e-5, rtol=0)
        short = layer(ids, characters=8).numpy()
        self.assertGreater(np.abs(short - reference).max(), 1e-3)

    def test_tensorflow_reads_distinct_tokens_to_their_latest_tail(self):
        # TensorFlow's distinct tokens are read up to the batch's latest
        # tail start plus the widest filter (3): "hello" is <bow> h e l l o
        # <eow>, tail at 7, so 10 positions; a 50-character token has no
        # tail, so all 50. The written-out reference of the whole rows
        # holds either way, eager, in a tf.function, and under XLA (which
        # reads every position: its shapes are static).
        import tensorflow as tf

        from keras_elmo.layers.backends import tensorflow_backend

        layer = CharCNN(**self.init_kwargs, activation="tanh")
        layer.build((None, None, 50))
        for sentences, cut in (
            ([["ab", "cat", "x"], ["hello", "ab"]], 10),
            ([["ab", "y" * 60], ["hello"]], 50),
        ):
            rows = keras_elmo.batch_to_ids(sentences).reshape(-1, 50)
            reference = _reference(layer, rows)
            seen = []

            def encode(r, characters):
                seen.append(characters)
                return layer(r, characters=characters)

            def run(r):
                return tensorflow_backend.encode_distinct(
                    r, encode, slack=layer.widest_filter
                )

            got = run(tf.constant(rows))
            self.assertEqual(int(seen[-1]), cut)
            np.testing.assert_allclose(got, reference, atol=1e-5, rtol=0)
            for jit_compile in (False, True):
                got = tf.function(run, jit_compile=jit_compile)(rows)
                np.testing.assert_allclose(got, reference, atol=1e-5, rtol=0)
            self.assertIsNone(seen[-1])  # the XLA trace's

    def test_characters_out_of_range(self):
        layer = CharCNN(**self.init_kwargs)
        for characters in (2, 51):
            with pytest.raises(ValueError, match="`characters` must lie in 3"):
                layer(self.ids, characters=characters)

    def test_invalid_arguments(self):
        with pytest.raises(ValueError, match="`activation` must be one of"):
            CharCNN(activation="gelu")
        with pytest.raises(ValueError, match=r"width <= 50"):
            CharCNN(filters=[[51, 2]])
        with pytest.raises(ValueError, match="at least one"):
            CharCNN(filters=[])
