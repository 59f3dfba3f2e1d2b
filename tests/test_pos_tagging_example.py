"""The downstream POS-tagging example: the quick run end to end, and
padding that counts neither in the loss nor in the accuracy."""

import importlib.util
import math
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.helpers import run_example_quick

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "pos_tagging.py")

_spec = importlib.util.spec_from_file_location("pos_tagging", EXAMPLE)
pos_tagging = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pos_tagging)

SENTENCES = [
    (["The", "bank", "closed", "."], ["DET", "NOUN", "VERB", "PUNCT"]),
    (["I", "saw", "her"], ["PRON", "VERB", "PRON"]),
    (["Hello", "!"], ["INTJ", "PUNCT"]),
]


# ~50-60 s on 2 AMD EPYC cores: the example's whole quick run (the
# padding tests below run its parts by default).
@pytest.mark.large
def test_quick_run_reports_five_models_and_mix_weights(tmp_path):
    results, out = run_example_quick("pos_tagging.py", tmp_path, 420)
    assert results["quick"] is True
    assert (
        os.path.join("tests", "fixtures", "bilm-tf", "model")
        in (results["bilm"]["source"])
    )
    assert results["bilm"]["layers"] == ["token", "LSTM 1", "LSTM 2"]
    models = results["models"]
    assert [m["name"] for m in models] == ["a", "b", "c", "d", "e"]
    assert results["bilms"]["word"]["source"] == os.path.join(
        "tests", "fixtures", "bilm-tf-words", "model", "options.json"
    )
    assert results["bilms"]["word"]["token_encoder"] == "words"
    for model in models:
        assert 0.0 <= model["dev_accuracy"] <= 1.0
        assert model["dev_tokens"] == results["data"]["dev_words"]
        assert model["iv_tokens"] + model["oov_tokens"] == model["dev_tokens"]
        assert model["dev_correct"] == round(
            model["iv_accuracy"] * model["iv_tokens"]
            + model["oov_accuracy"] * model["oov_tokens"]
        )
        assert model["train_seconds"] > 0
    oov_rate = models[0]["oov_tokens"] / models[0]["dev_tokens"]
    assert math.isclose(oov_rate, results["data"]["dev_oov_rate"])
    assert [[x["name"] for x in m["mixes"]] for m in models] == [
        [],
        ["input"],
        ["input", "output"],
        ["input"],
        ["input"],
    ]
    for model in models[1:]:
        for mix in model["mixes"]:
            assert len(mix["weights"]) == 3
            assert math.isclose(sum(mix["weights"]), 1.0, rel_tol=1e-5)
            assert math.isfinite(mix["gamma"])
    assert sorted(results["summary"]) == ["a", "b", "c", "d", "e"]
    for model in models:
        assert model["description"] in out
    assert "mix weights: softmax(s) per biLM layer, and gamma" in out
    for label in ("(b) input", "(c) input", "(c) output", "(d) input"):
        assert label in out
    assert "(e) input" in out


def _padded(sentences, vocabulary, extra):
    """`pad_batch` with `extra` more padding columns, whose tags are set to
    every tag in turn (so counting them would change the accuracy)."""
    x, tags = pos_tagging.pad_batch(sentences, vocabulary)
    batch = len(sentences)
    x = {
        "tokens": np.concatenate(
            [x["tokens"], np.full((batch, extra), "", dtype=object)], axis=1
        ),
        "word_ids": np.pad(x["word_ids"], ((0, 0), (0, extra))),
    }
    tags = np.pad(tags, ((0, 0), (0, extra)))
    real = x["word_ids"] != pos_tagging.PAD_ID
    fill = np.arange(tags.size).reshape(tags.shape) % len(pos_tagging.UPOS)
    return x, np.where(real, tags, fill).astype("int32")


@pytest.mark.parametrize("name", ["c", "d"])
def test_padding_counts_in_neither_loss_nor_accuracy(name):
    vocabulary = pos_tagging.build_vocabulary(SENTENCES, min_count=1)
    settings = dict(pos_tagging.QUICK, word_dim=8, units=4)
    bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    keras.utils.set_random_seed(0)
    model = pos_tagging.build_tagger(name, len(vocabulary) + 2, bilm, settings)
    predict = pos_tagging.predict_function(model)

    numbers = []
    for extra in (0, 7):
        x, tags = _padded(SENTENCES, vocabulary, extra)
        inputs = {k: tf.constant(x[k]) for k in model.input}
        keras_metrics = model.test_on_batch(inputs, tags, return_dict=True)
        correct, total = pos_tagging.masked_accuracy(predict, [(x, tags)])
        assert total == 9
        numbers.append(
            (keras_metrics["loss"], keras_metrics["accuracy"], correct / total)
        )
    (loss, accuracy, ours), (padded_loss, padded_accuracy, _) = numbers
    np.testing.assert_allclose(padded_loss, loss, rtol=1e-5)
    np.testing.assert_allclose(padded_accuracy, accuracy, rtol=1e-6)
    # Keras's accuracy metric counts the real tokens only, as ours does.
    np.testing.assert_allclose(accuracy, ours, rtol=1e-6)

    # The loss is the mean over real tokens (plus the mix-weight penalty).
    x, tags = _padded(SENTENCES, vocabulary, 7)
    probs = np.asarray(predict({k: x[k] for k in model.input}))
    real = x["word_ids"] != pos_tagging.PAD_ID
    picked = np.take_along_axis(probs, tags[..., None], axis=-1)[..., 0]
    penalty = sum(float(loss) for loss in model.losses)
    np.testing.assert_allclose(
        padded_loss, -np.log(picked[real]).mean() + penalty, rtol=1e-4
    )


def test_full_run_without_a_biLM_says_to_run_the_main_job(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(pos_tagging, "MAIN_JOB_EXPORT", str(tmp_path))
    with pytest.raises(SystemExit) as raised:
        pos_tagging.main([])
    assert "python examples/pretrain_gutenberg.py" in str(raised.value)


def test_models_flag_picks_models_in_table_order():
    assert pos_tagging.parse_models("e, b") == ["b", "e"]
    assert pos_tagging.parse_models("b") == ["b"]
    for text in ("", "x", "b,z", " , "):
        with pytest.raises(SystemExit, match="--models takes letters of"):
            pos_tagging.parse_models(text)
