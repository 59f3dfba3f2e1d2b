import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.export import export_savedmodel
from keras_elmo_cli import main
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS

SENTENCES = ["The cat sat on the mat .", "", "   ", "Hello world", "日本語 ok"]
VOCAB = ["<S>", "</S>", "The", "cat", "sat", "on", "the", "mat", "."]


@pytest.fixture(scope="module")
def bilm():
    return keras_elmo.load_bilm(OPTIONS, WEIGHTS)


@pytest.fixture(scope="module")
def exported(bilm, tmp_path_factory):
    root = tmp_path_factory.mktemp("savedmodels")
    plain = export_savedmodel(bilm, str(root / "plain"), max_batch_tokens=5000)
    cached = export_savedmodel(bilm, str(root / "cached"), cache_vocab=VOCAB)
    return {
        "plain": plain,
        "cached": cached,
        "plain_model": tf.saved_model.load(plain),
        "cached_model": tf.saved_model.load(cached),
    }


def _expected(bilm, sentences):
    """The in-Python layers' outputs, with the export's equal-weight mix."""
    tokens = [s.split() for s in sentences]
    out = bilm(keras_elmo.batch_to_ids(tokens))
    layers = [np.asarray(x) for x in out["layer_outputs"]]
    elmo = sum(layers) / len(layers)
    lengths = np.array([len(t) for t in tokens])
    return {
        "word_emb": np.asarray(out["token_embeddings"]),
        "lstm_outputs1": layers[1],
        "lstm_outputs2": layers[2],
        "elmo": elmo,
        "default": elmo.sum(1) / np.maximum(lengths, 1)[:, None],
        "sequence_len": lengths,
    }


def _assert_outputs(got, want):
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        np.testing.assert_allclose(
            np.asarray(got[key]), value, atol=1e-5, rtol=0, err_msg=key
        )


def test_default_signature_matches_layers(bilm, exported):
    sign = exported["plain_model"].signatures["default"]
    got = sign(sentences=tf.constant(SENTENCES))
    want = _expected(bilm, SENTENCES)
    _assert_outputs(got, want)
    # Empty and whitespace-only sentences: zero vectors, length 0.
    assert not np.asarray(got["elmo"])[1:3].any()
    assert not np.asarray(got["default"])[1:3].any()


def test_tokens_signature_matches_layers(bilm, exported):
    tokens = [s.split() for s in SENTENCES]
    width = max(len(t) for t in tokens) + 2  # extra padding columns
    padded = [t + [""] * (width - len(t)) for t in tokens]
    lengths = [len(t) for t in tokens]
    for name in ("plain_model", "cached_model"):
        got = exported[name].signatures["tokens"](
            tokens=tf.constant(padded), sequence_len=tf.constant(lengths)
        )
        want = _expected(bilm, SENTENCES)
        for key in want:
            if key not in ("default", "sequence_len"):
                want[key] = np.pad(want[key], [[0, 0], [0, 2], [0, 0]])
        _assert_outputs(got, want)


def test_cached_mode_with_token_ids_and_fallback(bilm, exported):
    model = exported["cached_model"]
    # "Hello" and "world" are not in the cached vocabulary: they fall back
    # to characters and give the same numbers.
    got = model.signatures["default"](sentences=tf.constant(SENTENCES))
    _assert_outputs(got, _expected(bilm, SENTENCES))
    ids = [[VOCAB.index(t) for t in "The cat sat on the mat .".split()]]
    got = model.signatures["token_ids"](
        token_ids=tf.constant(ids), sequence_len=tf.constant([7])
    )
    _assert_outputs(got, _expected(bilm, SENTENCES[:1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="smaller than"):
        model.signatures["token_ids"](
            token_ids=tf.constant([[3, 99]]), sequence_len=tf.constant([2])
        )
    assert "token_ids" not in exported["plain_model"].signatures


def test_bad_inputs(bilm, exported):
    model = exported["plain_model"]
    sign = model.signatures["default"]
    empty = sign(sentences=tf.zeros([0], tf.string))
    assert empty["elmo"].shape[0] == 0 and empty["default"].shape == (0, 32)
    # Invalid UTF-8 bytes are dropped, as Python's encode("utf-8", "ignore").
    got = sign(sentences=tf.constant([b"na\xffive cat"]))
    _assert_outputs(got, _expected(bilm, ["naive cat"]))
    # A long sentence works; a request over the size limit says so.
    long = " ".join(["word"] * 2000)
    assert sign(sentences=tf.constant([long]))["elmo"].shape == (1, 2000, 32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="5000 token"):
        sign(sentences=tf.constant([long] * 3))
    tokens = model.signatures["tokens"]
    padded = tf.constant([["a", "b"], ["c", ""]])
    for lengths, message in (
        ([3, 1], "must not exceed the padded length"),
        ([-1, 1], "must not be negative"),
        ([1], "one entry per row"),
    ):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            tokens(tokens=padded, sequence_len=tf.constant(lengths))


def test_loads_and_runs_without_keras_elmo(bilm, exported, tmp_path):
    expected = _expected(bilm, SENTENCES)
    script = f"""
import json, sys
sys.modules["keras_elmo"] = None  # make `import keras_elmo` fail
try:
    import keras_elmo
    raise SystemExit("keras_elmo should not be importable here")
except ImportError:
    pass
import tensorflow as tf
model = tf.saved_model.load({exported["plain"]!r})
out = model.signatures["default"](sentences=tf.constant({SENTENCES!r}))
print(json.dumps({{k: v.numpy().tolist() for k, v in out.items()}}))
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout.strip().splitlines()[-1])
    _assert_outputs(got, expected)


@pytest.mark.large
def test_saved_model_cli_show_and_run(exported):
    cli = [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    shown = subprocess.run(
        cli + ["show", "--dir", exported["plain"], "--all"],
        capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    for name in (
        "signature_def['default']",
        "signature_def['tokens']",
        "sentences",
        "sequence_len",
        "lstm_outputs2",
        "word_emb",
    ):
        assert name in shown.stdout
    ran = subprocess.run(
        cli + ["run", "--dir", exported["plain"], "--tag_set", "serve",
               "--signature_def", "default",
               "--input_exprs", "sentences=['the cat sat']"],
        capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "Result for output key default" in ran.stdout


def test_scalar_mix_is_trainable_in_keras(exported):
    layer = keras.layers.TFSMLayer(
        exported["plain"], call_endpoint="embed_sentences", trainable=True
    )
    names = sorted(w.name for w in layer.trainable_weights)
    assert len(names) == 2 and any("gamma" in n for n in names)
    assert len(layer.non_trainable_weights) > 20  # the frozen biLM
    sentences = keras.Input(shape=(), dtype="string")
    vector = layer(sentences)["default"]
    model = keras.Model(sentences, keras.layers.Dense(1)(vector))
    model.compile(keras.optimizers.SGD(0.5), loss="mse")
    frozen_before = [w.numpy().copy() for w in layer.non_trainable_weights]
    mix_before = [w.numpy().copy() for w in layer.trainable_weights]
    data = tf.constant(["the cat", "a dog barks", "hello"])
    model.fit(data, np.array([1.0, -1.0, 2.0]), epochs=3, verbose=0)
    assert any(
        not np.allclose(a, w.numpy())
        for a, w in zip(mix_before, layer.trainable_weights)
    )
    for a, w in zip(frozen_before, layer.non_trainable_weights):
        np.testing.assert_array_equal(a, w.numpy())


def test_cli_export(tmp_path, capsys):
    out = tmp_path / "sm"
    args = ["export-savedmodel", "--options", OPTIONS, "--weights", WEIGHTS,
            "--output", str(out)]  # fmt: skip
    assert main(args) == 0
    assert "wrote the SavedModel" in capsys.readouterr().out
    assert main(args) == 2  # the directory is not empty now
    assert "not empty" in capsys.readouterr().err
    assert main(["export-savedmodel", "--output", str(tmp_path / "x")]) == 2
    assert "--options OPTIONS.json --weights" in capsys.readouterr().err
