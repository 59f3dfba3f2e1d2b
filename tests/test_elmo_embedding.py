import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.layers import BiLM
from keras_elmo.layers import ELMoEmbedding
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.helpers import TestCase
from tests.helpers import tiny_bilm_kwargs

SENTENCES = [["The", "cat", "sat", "down"], ["A", "dog"]]


def _padded_tokens(sentences):
    width = max(len(s) for s in sentences)
    return tf.constant([s + [""] * (width - len(s)) for s in sentences])


class ELMoEmbeddingTest(TestCase):
    def setUp(self):
        super().setUp()
        self.tokens = _padded_tokens(SENTENCES)
        self.ids = keras_elmo.batch_to_ids(SENTENCES)

    def test_layer_behaviors(self):
        self.run_layer_test(
            ELMoEmbedding,
            {"bilm": BiLM(**tiny_bilm_kwargs()), "dropout": 0.1},
            self.ids,
            expected_output_shape=(2, 4, 8),
            expected_num_trainable_weights=2,
            # The frozen biLM: char CNN 5, highway 4, projection 2, LSTMs 16.
            expected_num_non_trainable_weights=27,
            expected_mask_shape=(2, 4),
        )

    def test_strings_and_ids_give_the_same_output(self):
        layer = ELMoEmbedding(BiLM(**tiny_bilm_kwargs()))
        np.testing.assert_array_equal(layer(self.tokens), layer(self.ids))
        np.testing.assert_array_equal(
            layer.compute_mask(self.tokens), layer.compute_mask(self.ids)
        )

    def test_mixes_the_bilm_layers(self):
        bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
        layer = ELMoEmbedding(bilm, scalar_mix_weights=[1.0, 0.0, -1.0])
        layers = bilm(self.ids)["layer_outputs"]
        w = np.exp([1.0, 0.0, -1.0]) / np.exp([1.0, 0.0, -1.0]).sum()
        expected = sum(wk * np.asarray(x) for wk, x in zip(w, layers))
        np.testing.assert_allclose(layer(self.tokens), expected, atol=1e-6)
        self.assertEmpty(layer.trainable_weights)

    def test_bilm_frozen_by_default_and_fine_tune_option(self):
        frozen = ELMoEmbedding(BiLM(**tiny_bilm_kwargs()))
        frozen(self.ids)
        names = {w.path.split("/")[-1] for w in frozen.trainable_weights}
        self.assertEqual(names, {"scalar_weights", "gamma"})
        tuned = ELMoEmbedding(BiLM(**tiny_bilm_kwargs()), fine_tune=True)
        tuned(self.ids)
        self.assertGreater(len(tuned.trainable_weights), 20)

    def test_several_independent_mixes(self):
        layer = ELMoEmbedding(
            BiLM(**tiny_bilm_kwargs()),
            num_output_representations=2,
            l2_coef=0.001,
        )
        first, second = layer(self.tokens)
        self.assertEqual(tuple(first.shape), (2, 4, 8))
        masks = layer.compute_mask(self.tokens)
        self.assertLen(masks, 2)
        self.assertLen(layer.trainable_weights, 4)
        self.assertLen(layer.losses, 2)

    def test_mask_is_honoured_by_a_downstream_bidirectional_lstm(self):
        tokens = keras.Input(shape=(None,), dtype="string")
        x = ELMoEmbedding(BiLM(**tiny_bilm_kwargs()))(tokens)
        x = keras.layers.Bidirectional(keras.layers.LSTM(3))(x)
        model = keras.Model(tokens, x)
        alone = model(_padded_tokens([SENTENCES[1]]))
        padded = model(_padded_tokens([SENTENCES[1] + [""] * 5]))
        in_batch = model(self.tokens)[1:]
        np.testing.assert_allclose(alone, padded, atol=1e-6)
        np.testing.assert_allclose(alone, in_batch, atol=1e-6)

    def test_dropout_only_in_training(self):
        layer = ELMoEmbedding(BiLM(**tiny_bilm_kwargs()), dropout=0.5)
        inference = layer(self.ids)
        np.testing.assert_array_equal(inference, layer(self.ids))
        trained = np.asarray(layer(self.ids, training=True))
        self.assertTrue(
            (trained == 0).sum() > (np.asarray(inference) == 0).sum()
        )

    def test_saving_model_with_official_weights(self):
        bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
        tokens = keras.Input(shape=(None,), dtype="string")
        x = ELMoEmbedding(bilm, num_output_representations=2)(tokens)
        x = keras.layers.Concatenate()(x)
        outputs = keras.layers.Dense(3)(x)
        model = keras.Model(tokens, outputs)
        restored = self.run_model_saving_test(model, self.tokens)
        self.assertIsInstance(restored.layers[1], ELMoEmbedding)

    def test_bad_inputs(self):
        layer = ELMoEmbedding(BiLM(**tiny_bilm_kwargs()))
        with pytest.raises(ValueError, match="expects tf.string tokens"):
            layer(np.ones((2, 3), "float32"))
        with pytest.raises(ValueError, match=r"shape \(batch, time\)"):
            layer(tf.constant(["a b", "c"]))
        with pytest.raises(ValueError, match="ragged batch"):
            layer([[[1] * 50], [[1] * 50, [1] * 50]])
        with pytest.raises(
            ValueError, match="must be a keras_elmo.layers.BiLM"
        ):
            ELMoEmbedding("elmo.hdf5")
        empty = layer(tf.zeros((0, 3), tf.string))
        self.assertEqual(tuple(empty.shape), (0, 3, 8))
