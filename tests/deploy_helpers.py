"""What the export and runtime tests share: the bilm-tf fixture batches
(with empty sentences and padding), the reference outputs of the Keras
biLM, and the comparisons."""

import json
import os

import h5py
import numpy as np

import keras_elmo
from tests.helpers import MODEL_DIR
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS


def fixture_bilm(**kwargs):
    return keras_elmo.load_bilm(OPTIONS, WEIGHTS, **kwargs)


def fixture_sentences():
    """The three sentences of the bilm-tf fixture's first batch (whose
    top-layer outputs the fixture holds, from a zero state)."""
    path = os.path.join(MODEL_DIR, "lm_embeddings_sentences.json")
    with open(path) as f:
        sentences = json.load(f)
    return [sentences[k][0].split() for k in range(3)]


def fixture_top_layer(k):
    """bilm-tf's top layer for fixture sentence k: (2, n, P)."""
    path = os.path.join(MODEL_DIR, f"lm_embeddings_{k}.hdf5")
    with h5py.File(path) as f:
        return f["0"][...]


# Padded batches of several shapes: empty sentences, one token, a long one
# cut from the fixture, non-ASCII and an over-long token.
def batches():
    first, second, third = fixture_sentences()
    return [
        [first, [], second[:5], ["日本語", "x" * 60], third],
        [["Hello"]],
        [[], []],
        [second[:3]] * 7,
    ]


def assert_bilm_outputs_close(got, want, atol, layers=None):
    """Every layer, the token embeddings and the mask of two BiLM dicts."""
    want_layers = [np.asarray(x) for x in want["layer_outputs"]]
    assert len(got["layer_outputs"]) == len(want_layers)
    for k, (g, w) in enumerate(zip(got["layer_outputs"], want_layers)):
        if layers is None or k in layers:
            assert g.shape == w.shape, (k, g.shape, w.shape)
            np.testing.assert_allclose(g, w, atol=atol, rtol=0, err_msg=k)
    np.testing.assert_allclose(
        got["token_embeddings"],
        np.asarray(want["token_embeddings"]),
        atol=atol,
        rtol=0,
    )
    np.testing.assert_array_equal(got["mask"], np.asarray(want["mask"]))


def relative_errors(got, want):
    """Per layer: (max abs error, mean relative error, top-layer cosine)
    over the real tokens."""
    mask = np.asarray(want["mask"])
    result = []
    for g, w in zip(got["layer_outputs"], want["layer_outputs"]):
        g, w = np.asarray(g)[mask], np.asarray(w)[mask]
        norm = np.linalg.norm(w, axis=-1)
        relative = np.linalg.norm(g - w, axis=-1) / np.maximum(norm, 1e-12)
        cosine = np.sum(g * w, -1) / np.maximum(
            norm * np.linalg.norm(g, axis=-1), 1e-12
        )
        result.append((np.abs(g - w).max(), relative.mean(), cosine.min()))
    return result
