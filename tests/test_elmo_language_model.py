import os
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from elmo_core.ids.vocabulary import Vocabulary
from elmo_core.settings.training_config import TrainingConfig
from keras_elmo.data import lm_dataset
from keras_elmo.data import scan_corpus
from keras_elmo.layers import BiLM
from keras_elmo.models import ELMoLanguageModel
from keras_elmo.models import softmax_losses
from keras_elmo.models.softmax_losses import full_softmax_loss
from keras_elmo.models.softmax_losses import sampled_softmax_loss
from keras_elmo.optimizers import SparseAdagrad
from keras_elmo.training.compiled_model import build_model
from keras_elmo.training.run_directory import RunDirectory
from tests.helpers import FIXTURES
from tests.helpers import HALF_POLICIES
from tests.helpers import TestCase
from tests.helpers import tiny_bilm_kwargs

TRAIN_DATA = os.path.join(FIXTURES, "train", "data.txt")
TRAIN_VOCAB = os.path.join(FIXTURES, "train", "vocab.txt")


def _log_softmax_loss(hidden, labels, kernel, bias):
    logits = hidden @ kernel.T + bias
    logits -= logits.max(axis=1, keepdims=True)
    log_z = np.log(np.exp(logits).sum(axis=1))
    return log_z - logits[np.arange(len(labels)), labels]


def _fixture_data(tokens_per_batch=64):
    vocab = Vocabulary.from_file(TRAIN_VOCAB)
    scan = scan_corpus(
        [TRAIN_DATA], max_length=30, tokens_per_batch=tokens_per_batch
    )
    return vocab, scan


def _config(vocab, **overrides):
    kwargs = dict(
        train_files=[TRAIN_DATA],
        bilm=tiny_bilm_kwargs(units=16, projection_dim=8),
        vocabulary_size=len(vocab),
        tokens_per_batch=64,
        max_length=30,
        num_sampled=8,
        seed=1,
    )
    kwargs.update(overrides)
    return TrainingConfig(**kwargs)


class SoftmaxLossTest(TestCase):
    def setUp(self):
        super().setUp()
        rng = np.random.RandomState(0)
        self.hidden = rng.randn(7, 4).astype("float32")
        self.labels = rng.randint(0, 11, size=7).astype("int32")
        self.kernel = rng.randn(11, 4).astype("float32")
        self.bias = rng.randn(11).astype("float32")
        self.expected = _log_softmax_loss(
            self.hidden, self.labels, self.kernel, self.bias
        )

    def test_full_softmax_matches_numpy(self):
        got = full_softmax_loss(
            self.hidden, self.labels, self.kernel, self.bias
        )
        np.testing.assert_allclose(got, self.expected, rtol=1e-5)

    def test_full_softmax_in_chunks_of_large_logits(self):
        # Three rows a chunk (the last one padded), and logits in the
        # hundreds, where exp overflows float32 unless shifted.
        hidden = 60.0 * self.hidden
        expected = _log_softmax_loss(
            hidden, self.labels, self.kernel, self.bias
        )
        self.assertGreater(np.abs(hidden @ self.kernel.T).max(), 100.0)
        with mock.patch.object(softmax_losses, "_LOGITS_PER_CHUNK", 33):
            got = full_softmax_loss(hidden, self.labels, self.kernel, self.bias)
        self.assertTrue(np.all(np.isfinite(got)))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)

    def test_all_classes_sampled_equals_full_softmax(self):
        # Every class sampled once with q = 1: the true class is removed
        # from the sample as an accidental hit and counted once.
        got = sampled_softmax_loss(
            self.hidden,
            self.labels,
            self.kernel,
            self.bias,
            sampled=np.arange(11, dtype="int32"),
            sampled_log_q=np.zeros(11, "float32"),
            labels_log_q=np.zeros(7, "float32"),
        )
        np.testing.assert_allclose(got, self.expected, rtol=1e-5)

    def test_sampled_softmax_corrects_by_log_q(self):
        sampled = np.array([0, 3, 3, 5], "int32")
        log_q = np.log(np.array([0.5, 0.2, 0.2, 0.1], "float32"))
        labels_log_q = np.full(7, np.log(0.3), "float32")
        got = sampled_softmax_loss(
            self.hidden,
            self.labels,
            self.kernel,
            self.bias,
            sampled,
            log_q,
            labels_log_q,
        )
        true = (self.hidden * self.kernel[self.labels]).sum(1)
        true += self.bias[self.labels] - np.log(0.3)
        neg = self.hidden @ self.kernel[sampled].T + self.bias[sampled] - log_q
        neg[self.labels[:, None] == sampled[None, :]] = -np.inf
        logits = np.concatenate([true[:, None], neg], axis=1)
        expected = np.log(np.exp(logits).sum(1)) - true
        np.testing.assert_allclose(got, expected, rtol=1e-5)


class ELMoLanguageModelTest(TestCase):
    def test_uniform_model_perplexity_is_vocabulary_size(self):
        vocab, scan = _fixture_data()
        model = build_model(_config(vocab))
        model.softmax_kernel.assign(np.zeros(model.softmax_kernel.shape))
        model.softmax_bias.assign(np.zeros(model.softmax_bias.shape))
        results = model.evaluate(
            lm_dataset(scan, vocab, shuffle=False, repeat=False),
            verbose=0,
            return_dict=True,
        )
        for name in ("perplexity", "forward_perplexity", "backward_perplexity"):
            self.assertAllClose(results[name], len(vocab), rtol=1e-5)

    def test_a_fresh_model_predicts_the_zipf_unigram(self):
        # With the kernel at zero, only the fresh bias speaks: each target's
        # probability is P(rank) = log((k + 2) / (k + 1)) / log(V + 1),
        # computed here from the text itself (sentences that fit a row).
        with open(TRAIN_DATA, encoding="utf-8") as f:
            sentences = [line.split() for line in f if len(line.split()) < 28]
        text = os.path.join(self.get_temp_dir(), "short.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.writelines(" ".join(s) + "\n" for s in sentences)
        vocab, _ = _fixture_data()
        scan = scan_corpus([text], max_length=30, tokens_per_batch=64)
        model = build_model(_config(vocab))
        model.softmax_kernel.assign(np.zeros(model.softmax_kernel.shape))
        results = model.evaluate(
            lm_dataset(scan, vocab, shuffle=False, repeat=False),
            verbose=0,
            return_dict=True,
        )
        size = len(vocab)
        for name, edge in (("forward", "</S>"), ("backward", "<S>")):
            ids = [vocab.id(t) for s in sentences for t in s + [edge]]
            k = np.array(ids, "float64")
            log_p = np.log(np.log((k + 2) / (k + 1)) / np.log(size + 1))
            expected = np.exp(-log_p.mean())
            got = results[f"{name}_perplexity"]
            self.assertAllClose(got, expected, rtol=1e-4)

    def test_padding_contributes_nothing(self):
        vocab, _ = _fixture_data()
        model = build_model(_config(vocab))
        sentences = [["neural", "networks", "."], ["the", "net"]]
        ids = keras_elmo.batch_to_ids(sentences)
        y = np.zeros((2, 2, 5), "int32")
        w = np.zeros((2, 2, 5), "float32")
        for row, sentence in enumerate(sentences):
            wrapped = [0] + [vocab.id(t) for t in sentence] + [1]
            n = len(sentence)
            y[row, 0, : n + 1], w[row, 0, : n + 1] = wrapped[1:], 1
            y[row, 1, 1 : n + 2], w[row, 1, 1 : n + 2] = wrapped[:-1], 1
        x = {"character_ids": ids}

        def loss(x, y, w):
            pred = model(x)
            return float(model.compute_loss(x, y, pred, w, training=False))

        base = loss(x, y, w)
        # More padding positions, with garbage targets of weight 0.
        x2 = {"character_ids": np.pad(ids, [[0, 0], [0, 4], [0, 0]])}
        y2 = np.pad(y, [[0, 0], [0, 0], [0, 4]], constant_values=7)
        w2 = np.pad(w, [[0, 0], [0, 0], [0, 4]])
        self.assertAllClose(loss(x2, y2, w2), base, atol=1e-6)

    def test_softmax_gradient_stays_sparse(self):
        vocab, scan = _fixture_data()
        model = build_model(_config(vocab))
        x, y, w = next(iter(lm_dataset(scan, vocab)))
        with tf.GradientTape() as tape:
            loss = model.compute_loss(x, y, model(x, training=True), w)
        grads = tape.gradient(
            loss, [model.softmax_kernel, model.bilm.char_cnn.embeddings]
        )
        for grad in grads:
            self.assertIsInstance(grad, tf.IndexedSlices)

    def test_short_fit_lowers_the_loss(self):
        vocab, scan = _fixture_data()
        model = build_model(_config(vocab, dropout=0.0))
        # From bilm-tf's uniform start (the fresh Zipf bias is checked
        # above): what the bounds below were measured from.
        model.softmax_bias.assign(np.zeros(model.softmax_bias.shape))
        evaluation = lm_dataset(scan, vocab, shuffle=False, repeat=False)
        before = model.evaluate(evaluation, verbose=0, return_dict=True)
        model.fit(
            lm_dataset(scan, vocab, seed=2),
            steps_per_epoch=30,
            epochs=1,
            verbose=0,
            shuffle=False,
        )
        after = model.evaluate(evaluation, verbose=0, return_dict=True)
        self.assertLess(after["loss"], before["loss"] - 0.5)
        self.assertLess(after["perplexity"], 0.6 * before["perplexity"])

    @pytest.mark.large
    def test_trains_under_a_global_mixed_policy(self):
        # A policy set with keras.config (not through TrainingConfig) must
        # not reach the softmax: the loss stays float32.
        vocab, scan = _fixture_data()
        for policy in HALF_POLICIES:
            dtype = policy.split("_")[1]
            keras.config.set_dtype_policy(policy)
            model = ELMoLanguageModel(
                BiLM(**tiny_bilm_kwargs(units=16, projection_dim=8)),
                vocabulary_size=len(vocab),
                num_sampled=8,
                dropout=0.1,
                seed=0,
            )
            model.compile(optimizer=SparseAdagrad())
            x, y, weights = next(iter(lm_dataset(scan, vocab, seed=0)))
            outputs = model(x, training=True)
            self.assertEqual(outputs["forward"].dtype, dtype)
            loss = model.compute_loss(x, y, outputs, weights)
            self.assertEqual(loss.dtype, "float32")
            logs = model.train_on_batch(x, y, sample_weight=weights)
            self.assertTrue(np.all(np.isfinite(logs)), logs)
        keras.config.set_dtype_policy("float32")

    # ~80 s; XLA training also runs in test_training.test_jit_compile_training.
    @pytest.mark.large
    def test_xla_step_equals_the_default_step(self):
        # jit_compile=True takes the static-shape loss (every position,
        # weighted) on batches padded to their bucket; the default gathers
        # the real targets. Same losses, updates and perplexity.
        vocab, scan = _fixture_data()
        results = {}
        for jit in (False, True):
            keras.utils.set_random_seed(0)
            model = build_model(
                _config(vocab, dropout=0.0, num_sampled=len(vocab)),
                jit_compile=jit,
            )
            self.assertEqual(model.jit_compile, jit)
            initial = [w.numpy() for w in model.trainable_weights]
            batches = lm_dataset(scan, vocab, seed=3, pad_to_bucket=jit)
            losses = [
                model.train_on_batch(*batch, return_dict=True)["loss"]
                for batch in batches.take(3)
            ]
            held_out = lm_dataset(
                scan, vocab, shuffle=False, repeat=False, pad_to_bucket=jit
            )
            evaluation = model.evaluate(held_out, verbose=0, return_dict=True)
            weights = [w.numpy() for w in model.trainable_weights]
            results[jit] = losses, evaluation, weights
        (losses, evaluation, weights), xla = results[False], results[True]
        change = max(np.abs(a - b).max() for a, b in zip(weights, initial))
        self.assertAllClose(losses, xla[0], atol=1e-5)
        for key in ("perplexity", "forward_perplexity", "backward_perplexity"):
            self.assertAllClose(evaluation[key], xla[1][key], rtol=1e-5)
        for a, b in zip(weights, xla[2]):
            self.assertAllClose(a, b, atol=1e-5)
        self.assertGreater(change, 1e-3)  # the steps did something

        # Sampled softmax under XLA: a few steps lower the loss.
        model = build_model(_config(vocab, dropout=0.1), jit_compile=True)
        batch = next(iter(lm_dataset(scan, vocab, seed=0, pad_to_bucket=True)))
        first = model.train_on_batch(*batch, return_dict=True)["loss"]
        for _ in range(5):
            last = model.train_on_batch(*batch, return_dict=True)["loss"]
        self.assertLess(last, first)

    def test_checkpoint_mid_training_gives_the_same_next_step(self):
        vocab, scan = _fixture_data(tokens_per_batch=40)
        config = _config(vocab, dropout=0.2)
        directory = self.get_temp_dir()

        def next_losses(model, start_step, steps=2):
            history = model.fit(
                lm_dataset(scan, vocab, seed=4, start_step=start_step),
                steps_per_epoch=steps,
                epochs=1,
                verbose=0,
                shuffle=False,
            )
            return history.history["loss"]

        model = build_model(config)
        next_losses(model, 0, steps=3)
        RunDirectory(directory).save_checkpoint(model, step=3)
        uninterrupted = next_losses(model, 3)
        restored = build_model(config)
        self.assertEqual(
            RunDirectory(directory).restore_checkpoint(restored), 3
        )
        resumed = next_losses(restored, 3)
        # Same weights, optimizer state, data position, dropout and
        # sampler seeds: the same losses.
        self.assertAllClose(resumed, uninterrupted, atol=1e-6)

    def test_keras_save_and_load(self):
        vocab, scan = _fixture_data()
        model = build_model(_config(vocab))
        model.fit(
            lm_dataset(scan, vocab), steps_per_epoch=2, verbose=0, shuffle=False
        )
        path = os.path.join(self.get_temp_dir(), "lm.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
        evaluation = lm_dataset(scan, vocab, shuffle=False, repeat=False)
        a = model.evaluate(evaluation, verbose=0, return_dict=True)
        b = restored.evaluate(evaluation, verbose=0, return_dict=True)
        self.assertAllClose(a["perplexity"], b["perplexity"], rtol=1e-6)

    def test_invalid_arguments(self):
        with self.assertRaisesRegex(ValueError, "stateless BiLM"):
            ELMoLanguageModel(
                BiLM(**tiny_bilm_kwargs(), stateful=True), vocabulary_size=10
            )
        with self.assertRaisesRegex(
            ValueError, "`vocabulary_size` must be an integer >= 4"
        ):
            ELMoLanguageModel(BiLM(**tiny_bilm_kwargs()), vocabulary_size=2)
        model = ELMoLanguageModel(BiLM(**tiny_bilm_kwargs()), 10)
        model.compile(optimizer=SparseAdagrad())
        with self.assertRaisesRegex(ValueError, "needs targets"):
            model.fit(
                {"character_ids": np.ones((1, 2, 50), "int32")}, verbose=0
            )
