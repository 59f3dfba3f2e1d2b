"""Files saved by an earlier keras_elmo still load, with the same outputs.

`tests/fixtures/compat/` was written by `make_compat_fixture.py` there with
the code of commit bba6eec, before the package was reorganised: three `.keras`
models (character, word-input and ELMoForManyLangs biLMs) and a training
run directory, with the outputs they gave then.
"""

import json
import os

import keras
import numpy as np
import pytest

import elmo_core
import keras_elmo
from keras_elmo.training.run_directory import load_run

COMPAT = os.path.join(os.path.dirname(__file__), "fixtures", "compat")
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


@pytest.fixture(scope="module")
def expected():
    with np.load(os.path.join(COMPAT, "expected.npz")) as f:
        return dict(f)


@pytest.fixture(scope="module")
def sentences():
    with open(os.path.join(COMPAT, "sentences.json")) as f:
        return json.load(f)


def _word_ids(sentences):
    path = os.path.join(FIXTURES, "bilm-tf-words", "model", "vocab.txt")
    return elmo_core.ids.Vocabulary.from_file(path).batch_to_ids(sentences)


def _many_langs_ids(model, sentences):
    bilm = next(
        layer
        for layer in model.layers
        if isinstance(layer, keras_elmo.layers.BiLM)
    )
    return bilm.encoder.batch_to_inputs(sentences)


@pytest.mark.parametrize("name", ["characters", "words", "elmo_for_many_langs"])
def test_keras_file_loads_with_the_same_outputs(name, expected, sentences):
    model = keras.saving.load_model(os.path.join(COMPAT, f"{name}.keras"))
    inputs = {
        "characters": lambda: keras_elmo.batch_to_ids(sentences),
        "words": lambda: _word_ids(sentences),
        "elmo_for_many_langs": lambda: _many_langs_ids(model, sentences),
    }[name]()
    np.testing.assert_allclose(
        np.asarray(model(inputs)), expected[name], atol=1e-6
    )


def test_run_directory_loads_with_the_same_outputs(expected, sentences):
    model, vocabulary, _ = load_run(os.path.join(COMPAT, "run"))
    out = model.bilm(keras_elmo.batch_to_ids(sentences))["layer_outputs"]
    np.testing.assert_allclose(
        np.stack([np.asarray(x) for x in out]), expected["run"], atol=1e-6
    )
    assert vocabulary.tokens[:3] == ["<S>", "</S>", "<UNK>"]
