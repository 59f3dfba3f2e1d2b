"""The two layer-norm rules of the scalar mix against NumPy.

bilm-tf normalises each biLM layer with one mean and variance over the
token positions; AllenNLP's `Elmo` over the tokens and the `<S>`/`</S>`
positions of each sentence (and with a variance floor of 1e-13), and drops
the boundary positions after mixing. Each formula is written out here in
NumPy, sentence by sentence, independently of the layers.
"""

import keras
import numpy as np
import pytest

import keras_elmo
from elmo_core.errors import KerasElmoError
from keras_elmo.layers import ELMoEmbedding
from keras_elmo.layers import ScalarMix
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.helpers import TestCase

WEIGHTS_S = [0.3, -0.2, 0.5]
GAMMA = 1.7


def _softmax(s):
    e = np.exp(np.asarray(s, "float64") - np.max(s))
    return e / e.sum()


def _normalise(layer, positions, epsilon):
    """(x - mean) / sqrt(var + eps), mean and var over `positions`, a list
    of (row, index) pairs, and every feature."""
    values = np.concatenate([layer[b, t] for b, t in positions])
    return (layer - values.mean()) / np.sqrt(values.var() + epsilon)


def _bilm_tf_mix(layers, lengths):
    """layers: (batch, time, dim) token positions; sentence b has
    lengths[b] tokens."""
    positions = [(b, t) for b, n in enumerate(lengths) for t in range(n)]
    w = _softmax(WEIGHTS_S)
    mixed = GAMMA * sum(
        wk * _normalise(x, positions, 1e-12) for wk, x in zip(w, layers)
    )
    out = np.zeros_like(mixed)
    for b, n in enumerate(lengths):
        out[b, :n] = mixed[b, :n]
    return out


def _allennlp_mix(layers, lengths):
    """layers: (batch, time + 2, dim) with <S> at 0 and </S> at n + 1."""
    positions = [(b, t) for b, n in enumerate(lengths) for t in range(n + 2)]
    w = _softmax(WEIGHTS_S)
    mixed = GAMMA * sum(
        wk * _normalise(x, positions, 1e-13) for wk, x in zip(w, layers)
    )
    out = np.zeros((mixed.shape[0], mixed.shape[1] - 2, mixed.shape[2]))
    for b, n in enumerate(lengths):
        out[b, :n] = mixed[b, 1 : n + 1]
    return out


def _mask(lengths, time):
    return np.arange(time)[None, :] < np.asarray(lengths)[:, None]


class LayerNormRulesTest(TestCase):
    def setUp(self):
        super().setUp()
        rng = np.random.RandomState(1)
        self.lengths = [3, 1, 0]
        # Token layers (time 3) and, for AllenNLP's rule, layers with the
        # boundaries (time 5); positions past each sentence hold zeros, as
        # the biLM returns them.
        self.with_boundaries = [
            rng.randn(3, 5, 4).astype("float32")
            * _mask([n + 2 for n in self.lengths], 5)[..., None]
            for _ in range(3)
        ]
        self.tokens = [
            rng.randn(3, 3, 4).astype("float32")
            * _mask(self.lengths, 3)[..., None]
            for _ in range(3)
        ]

    def _mix(self, rule):
        mix = ScalarMix(
            initial_scalar_weights=WEIGHTS_S,
            do_layer_norm=True,
            layer_norm_rule=rule,
        )
        mix.build([(None, None, 4)] * 3)
        mix.gamma.assign(GAMMA)
        return mix

    def test_scalar_mix_bilm_tf_rule(self):
        mix = self._mix("bilm-tf")
        out = mix(self.tokens, mask=_mask(self.lengths, 3))
        expected = _bilm_tf_mix(self.tokens, self.lengths)
        np.testing.assert_allclose(out, expected, atol=1e-5)

    def test_scalar_mix_allennlp_rule(self):
        mix = self._mix("allennlp")
        mask = _mask([n + 2 for n in self.lengths], 5)
        out = mix(self.with_boundaries, mask=mask)
        expected = _allennlp_mix(self.with_boundaries, self.lengths)
        self.assertEqual(tuple(out.shape), (3, 3, 4))
        np.testing.assert_allclose(out, expected, atol=1e-5)
        np.testing.assert_array_equal(
            mix.compute_mask(self.with_boundaries, mask),
            _mask(self.lengths, 3),
        )
        self.assertEqual(mix.compute_output_shape([(3, 5, 4)] * 3), (3, 3, 4))

    def test_allennlp_rule_without_layer_norm_only_drops_boundaries(self):
        mix = ScalarMix(layer_norm_rule="allennlp")
        out = mix(
            self.with_boundaries,
            mask=_mask([n + 2 for n in self.lengths], 5),
        )
        mean = sum(self.with_boundaries) / 3
        expected = np.zeros((3, 3, 4), "float32")
        for b, n in enumerate(self.lengths):
            expected[b, :n] = mean[b, 1 : n + 1]
        np.testing.assert_allclose(out, expected, atol=1e-6)

    def test_config_round_trip_and_bad_rule(self):
        for rule in ("bilm-tf", "allennlp"):
            layer = ScalarMix(do_layer_norm=True, layer_norm_rule=rule)
            self.run_serialization_test(layer)
            self.assertEqual(layer.get_config()["layer_norm_rule"], rule)
        with pytest.raises(KerasElmoError, match="layer_norm_rule"):
            ScalarMix(layer_norm_rule="AllenNLP")
        with pytest.raises(KerasElmoError, match="layer_norm_rule"):
            ELMoEmbedding(
                keras_elmo.load_bilm(OPTIONS, WEIGHTS), layer_norm_rule="x"
            )


class ELMoEmbeddingLayerNormRuleTest(TestCase):
    """ELMoEmbedding with the fixture biLM, against the NumPy formulas
    applied to the biLM's own layer outputs."""

    def setUp(self):
        super().setUp()
        self.bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
        self.sentences = [["The", "cat", "sat", "."], ["Hi", "!"], ["Ok"]]
        self.lengths = [len(s) for s in self.sentences]
        self.ids = keras_elmo.batch_to_ids(self.sentences)

    def _embedding(self, rule):
        embedding = ELMoEmbedding(
            self.bilm,
            dropout=0.0,
            do_layer_norm=True,
            scalar_mix_weights=WEIGHTS_S,
            layer_norm_rule=rule,
        )
        embedding.build(None)
        embedding.scalar_mixes[0].gamma.assign(GAMMA)
        return embedding

    def test_both_rules_against_numpy(self):
        full = self.bilm(self.ids, keep_boundaries=True)["layer_outputs"]
        full = [np.asarray(x, "float64") for x in full]
        tokens = [np.asarray(x, "float64") for x in self.bilm(self.ids)[
            "layer_outputs"
        ]]  # fmt: skip
        bilm_tf = self._embedding("bilm-tf")(self.ids)
        allennlp = self._embedding("allennlp")(self.ids)
        np.testing.assert_allclose(
            bilm_tf, _bilm_tf_mix(tokens, self.lengths), atol=1e-5
        )
        np.testing.assert_allclose(
            allennlp, _allennlp_mix(full, self.lengths), atol=1e-5
        )
        # The rules differ: the default is not AllenNLP's number.
        difference = np.abs(np.asarray(bilm_tf) - np.asarray(allennlp)).max()
        self.assertGreater(difference, 0.01)

    def test_strings_symbolic_call_and_config(self):
        embedding = self._embedding("allennlp")
        tokens = keras.Input(shape=(None,), dtype="string")
        model = keras.Model(tokens, embedding(tokens))
        padded = [s + [""] * (4 - len(s)) for s in self.sentences]
        np.testing.assert_allclose(
            model(np.array(padded)), embedding(self.ids), atol=1e-6
        )
        config = embedding.get_config()
        self.assertEqual(config["layer_norm_rule"], "allennlp")
        revived = ELMoEmbedding.from_config(config)
        self.assertEqual(revived.get_config(), config)
        self.assertEqual(revived.scalar_mixes[0].layer_norm_rule, "allennlp")
