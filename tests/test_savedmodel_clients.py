"""The SavedModel export with the clients people use: `tensorflow_hub`
(with `tf_keras`, in a process without keras_elmo), `saved_model_cli`, and
Keras 3 layers trained with Adam."""

import importlib.util
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.export import SavedModelLayer
from keras_elmo.export import export_savedmodel
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.helpers import subprocess_env

SENTENCES = ["the cat sat", "a dog barks loudly", "hello", ""]


@pytest.fixture(scope="module")
def saved(fixture_savedmodel):
    """The shared SavedModel of the fixture biLM (conftest.py)."""
    return fixture_savedmodel


# Runs where keras_elmo cannot be imported: TensorFlow, tensorflow_hub and
# tf_keras only, as a TF Hub user's process.
HUB_CLIENT = r"""
import sys
sys.modules["keras_elmo"] = None  # importing it would fail
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras

path = sys.argv[1]
sentences = tf.constant(["the cat sat", "a dog barks loudly", "hello", ""])

# hub.load(p) is callable, on sentences or on tokens (int64 lengths too).
module = hub.load(path)
print("call", module(sentences)["default"].shape)
tokens = {"tokens": tf.constant([["the", "cat", ""]]),
          "sequence_len": tf.constant([2], tf.int64)}
print("tokens", module(tokens)["elmo"].shape)
print("int64", module.embed_tokens(tokens["tokens"],
                                   tokens["sequence_len"])["sequence_len"])

# hub.KerasLayer with no signature; frozen unless trainable=True.
frozen = hub.KerasLayer(path)
print("frozen", frozen(sentences)["elmo"].shape, len(frozen.trainable_weights))

# trainable=True: the mix (and only the mix) trains with fit and Adam.
layer = hub.KerasLayer(path, trainable=True)
inputs = tf_keras.Input(shape=(), dtype=tf.string)
outputs = tf_keras.layers.Dense(1)(layer(inputs)["default"])
model = tf_keras.Model(inputs, outputs)
model.compile(tf_keras.optimizers.Adam(0.1), loss="mse")
mix = [w.numpy().copy() for w in layer.trainable_weights]
frozen_weights = [w.numpy().copy() for w in layer.non_trainable_weights]
model.fit(sentences, np.array([1.0, -1.0, 2.0, 0.0]), epochs=3, verbose=0)
print("trainable", sorted(w.name for w in layer.trainable_weights))
print("mix_moved", all(not np.allclose(a, w.numpy())
                       for a, w in zip(mix, layer.trainable_weights)))
print("bilm_kept", len(frozen_weights) > 20 and all(
    np.array_equal(a, w.numpy())
    for a, w in zip(frozen_weights, layer.non_trainable_weights)))
print("regularization", len(module.regularization_losses))
"""


# Large: ~18 s; the same SavedModel's Keras-layer client runs by default
@pytest.mark.large
def test_tensorflow_hub_client(saved, tmp_path):
    # Imported in the child only (tf_keras beside Keras 3 in one process
    # is not what a user runs); skipped like the other extras when absent.
    for name in ("tensorflow_hub", "tf_keras", "pkg_resources"):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed: pip install -e '.[test]'")
    script = tmp_path / "client.py"
    script.write_text(HUB_CLIENT, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, str(script), saved],
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(),
        cwd=str(tmp_path),
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in ran.stdout.splitlines())
    assert lines["call"] == "(4, 32)"
    assert lines["tokens"] == "(1, 3, 32)"
    assert "[2]" in lines["int64"] and "int32" in lines["int64"]
    assert lines["frozen"] == "(4, 4, 32) 0"
    trainable = lines["trainable"]
    assert "gamma" in trainable and "scalar_weights" in trainable
    assert lines["mix_moved"] == "True"
    assert lines["bilm_kept"] == "True"
    assert lines["regularization"] == "0"


def test_saved_model_cli_shows_ranks(saved):
    shown = subprocess.run(
        [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli",
         "show", "--all", "--dir", saved],
        capture_output=True, text=True, timeout=180, env=subprocess_env(),
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr[-2000:]
    # Every input and output has its rank (only TensorFlow's own
    # __saved_model_init_op entry has none).
    listed = shown.stdout.replace(
        "outputs['__saved_model_init_op'] tensor_info:\n"
        "        dtype: DT_INVALID\n        shape: unknown_rank",
        "",
    )
    assert "unknown_rank" not in listed
    assert "shape: (-1)" in shown.stdout  # sentences, sequence_len
    assert "shape: (-1, -1)" in shown.stdout  # tokens


def test_signature_of_the_wrong_rank_is_refused_naming_it(saved):
    module = tf.saved_model.load(saved)
    # A loaded signature runs a request of another rank anyway (TensorFlow
    # falls back to the raw tensors): the in-graph check names the input.
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        module.signatures["default"](sentences=tf.constant([["a b"]]))
    assert "sentences must have shape [batch] (rank 1)" in str(raised.value)


@pytest.mark.large
def test_keras_layer_trains_the_mix_with_adam(saved):
    layer = keras_elmo.export.keras_layer(saved)
    assert isinstance(layer, SavedModelLayer)
    names = sorted(w.name for w in layer.trainable_weights)
    assert names == ["elmo_scalar_mix_gamma", "elmo_scalar_mix_scalar_weights"]
    sentences = keras.Input(shape=(), dtype="string")
    vector = layer(sentences)["default"]
    model = keras.Model(sentences, keras.layers.Dense(1)(vector))
    model.compile(keras.optimizers.Adam(0.1), loss="mse")
    before = [w.numpy().copy() for w in layer.trainable_weights]
    frozen = [w.numpy().copy() for w in layer.non_trainable_weights]
    model.fit(
        tf.constant(SENTENCES), np.array([1.0, -1.0, 2.0, 0.0]), epochs=3,
        verbose=0,
    )  # fmt: skip
    for a, w in zip(before, layer.trainable_weights):
        assert not np.allclose(a, w.numpy())
    assert len(frozen) > 20
    for a, w in zip(frozen, layer.non_trainable_weights):
        np.testing.assert_array_equal(a, w.numpy())
    # The module's own variables moved: the layer wraps them, not copies.
    module_mix = [v.numpy() for v in layer.module.trainable_variables]
    for a, w in zip(module_mix, layer.trainable_weights):
        np.testing.assert_array_equal(a, w.numpy())


def test_keras_layer_frozen_and_on_tokens(saved):
    layer = SavedModelLayer(saved, trainable=False)
    assert not layer.trainable_weights
    out = layer(
        {
            "tokens": tf.constant([["the", "cat", ""]]),
            "sequence_len": tf.constant([2], tf.int64),
        }
    )
    assert out["elmo"].shape == (1, 3, 32)
    assert os.path.isdir(saved)


@pytest.mark.large
def test_int64_lengths_equal_int32_and_are_checked(tmp_path):
    path = str(tmp_path / "cached")
    bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    export_savedmodel(bilm, path, cache_vocab=["<S>", "</S>", "the", "cat"])
    module = tf.saved_model.load(path)
    tokens = tf.constant([["the", "cat", ""], ["cat", "", ""]])
    ids = tf.constant([[2, 3, 0], [3, 0, 0]])
    for dtype in (tf.int32, tf.int64):
        lengths = tf.constant([2, 1], dtype)
        by_tokens = module.embed_tokens(tokens, lengths)["elmo"]
        by_ids = module.embed_token_ids(ids, lengths)["elmo"]
        by_call = module({"tokens": tokens, "sequence_len": lengths})["elmo"]
        want = module.signatures["tokens"](
            tokens=tokens, sequence_len=tf.constant([2, 1])
        )["elmo"]
        for got in (by_tokens, by_ids, by_call):
            np.testing.assert_allclose(got, want, atol=1e-6)
    # An int64 length too long for the batch is refused in its own dtype
    # (2**32 + 1 would read as 1 once cast to int32).
    too_long = tf.constant([2**32 + 1, 1], tf.int64)
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        module.embed_tokens(tokens, too_long)
    assert "must not exceed the padded length" in str(raised.value)
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        module.embed_token_ids(ids, too_long)
    assert "must not exceed the padded length" in str(raised.value)
