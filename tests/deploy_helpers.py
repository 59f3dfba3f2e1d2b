"""What the export and runtime tests share: the bilm-tf fixture batches
(with empty sentences and padding), the reference outputs of the Keras
biLM, the comparisons, and the checks of the files themselves (int8
bounds in ONNX, builtin ops in LiteRT, a run without TensorFlow)."""

import json
import os
import re
import subprocess
import sys

import h5py
import numpy as np
import pytest

import keras_elmo
from elmo_core.errors import KerasElmoError
from tests.helpers import MODEL_DIR
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.helpers import subprocess_env

# The scalar mix weights that the export tests write into their files.
SCALAR_MIX = [0.5, -0.25, 1.0]


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


def tagger_word_ids(sentences, num_words):
    """A test tagger's own word ids of the tokens: 1 + a hash of each
    token below `num_words`, 0 padding."""
    length = max((len(s) for s in sentences), default=0)
    ids = np.zeros((len(sentences), length), np.int32)
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            ids[i, j] = 1 + sum(map(ord, token)) % (num_words - 1)
    return ids


def padded_tokens(sentences):
    """The sentences as one array of tokens, padded with ""."""
    length = max((len(s) for s in sentences), default=0)
    return np.array([s + [""] * (length - len(s)) for s in sentences], object)


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


def named_outputs(values, token_dim):
    """An exported biLM file's outputs by name (`layer_0`, `layer_1`, ...,
    `mask`, and `elmo` where the file has it) as a BiLM dict; the token
    embeddings are the first `token_dim` features of layer 0."""
    layers = sorted(name for name in values if name.startswith("layer_"))
    outputs = {
        "layer_outputs": [values[name] for name in layers],
        "token_embeddings": values["layer_0"][..., :token_dim],
        "mask": values["mask"],
    }
    if "elmo" in values:
        outputs["elmo"] = values["elmo"]
    return outputs


def export_precisions(export, bilm, folder, suffix, precisions):
    """The fixture `bilm` written by `export` (`to_onnx`, `to_litert`)
    once per precision into `folder`, named by precision and `suffix`,
    with the scalar mix `SCALAR_MIX`: {precision: path}."""
    return {
        precision: export(
            bilm,
            os.path.join(folder, precision + suffix),
            precision=precision,
            scalar_mix=SCALAR_MIX,
        )
        for precision in precisions
    }


def assert_float32_file_matches_keras(run, bilm):
    """`run(ids)` (a float32 file of the fixture `bilm`, `named_outputs`)
    on every padded batch: the Keras outputs within 1e-5, and its `elmo`
    the Keras `ScalarMix` of `SCALAR_MIX`."""
    for sentences in batches():
        ids = keras_elmo.batch_to_ids(sentences)
        got = run(ids)
        want = bilm(ids)
        assert_bilm_outputs_close(got, want, atol=1e-5)
        mix = keras_elmo.layers.ScalarMix(initial_scalar_weights=SCALAR_MIX)
        np.testing.assert_allclose(
            got["elmo"],
            np.asarray(mix(want["layer_outputs"], mask=want["mask"])),
            atol=1e-5,
            rtol=0,
        )


def assert_original_size_matches_keras(export, path, open_file):
    """A biLM of the original size (random weights), written to `path` by
    `export(bilm, path)` and read by `open_file(path)` (a function of
    character ids to `named_outputs`): the Keras outputs within 1e-5 on
    two padded batches."""
    bilm = keras_elmo.BiLM()
    bilm.build()
    run = open_file(export(bilm, path))
    for sentences in batches()[:2]:
        ids = keras_elmo.batch_to_ids(sentences)
        assert_bilm_outputs_close(run(ids), bilm(ids), atol=1e-5)


def assert_top_layers_match_bilm_tf(top_layers):
    """The top layer (3, time, 32) of the fixture's first batch
    (`fixture_sentences`) is bilm-tf's within 1e-5: forward and backward
    halves (projection_dim 16) of each sentence's real tokens."""
    for k in range(3):
        target = fixture_top_layer(k)
        top = top_layers[k, : target.shape[1]]
        np.testing.assert_allclose(
            np.stack([top[:, :16], top[:, 16:]]), target, atol=1e-5, rtol=0
        )


def assert_export_metadata(info, file_format, precision):
    """What an exported file of the fixture biLM says of itself
    (`info`): its format, precision, package version and biLM size."""
    assert info["format"] == file_format
    assert info["keras_elmo_version"] == keras_elmo.__version__
    assert info["precision"] == precision
    assert info["num_layers"] == 2 and info["projection_dim"] == 16


def assert_missing_extra_named(monkeypatch, module, extra, export, path):
    """`export(path)` where the optional `module` is not installed: an
    error that names the extra to install (`keras-elmo[extra]`), and
    nothing written in `path`'s folder."""
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(KerasElmoError, match=re.escape(f"keras-elmo[{extra}]")):
        export(path)
    assert not os.listdir(os.path.dirname(path))


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


def _onnx_graphs(graph):
    import onnx

    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _onnx_graphs(attribute.g)


def assert_int8_pair_sums_fit_int16(model):
    """Every integer MatMul of the ONNX `model` multiplies uint8
    activations (0..255, any zero point) by int8 weights of zero point 0
    with |w| <= 64, so that a pair of products is at most 2 * 255 * 64 =
    32640 <= 32767 whatever the inputs: ONNX Runtime's u8 x s8 kernels
    on AVX2 / AVX-512 without VNNI add two adjacent products in a
    saturating int16 (vpmaddubsw). Returns the number of such MatMuls."""
    import onnx

    initializers = {}
    for graph in _onnx_graphs(model.graph):
        initializers.update({t.name: t for t in graph.initializer})
    matmuls = [
        node
        for graph in _onnx_graphs(model.graph)
        for node in graph.node
        if node.op_type in ("MatMulInteger", "DynamicQuantizeMatMul")
    ]
    producers = {
        output: node
        for graph in _onnx_graphs(model.graph)
        for node in graph.node
        for output in node.output
    }
    for node in matmuls:
        a, b, a_zero, b_zero = node.input
        assert producers[a].op_type == "DynamicQuantizeLinear", node.name
        weights = onnx.numpy_helper.to_array(initializers[b])
        assert weights.dtype == np.int8, node.name
        zero = onnx.numpy_helper.to_array(initializers[b_zero])
        assert not zero.any(), node.name
        worst = 2 * 255 * int(np.abs(weights.astype(np.int32)).max())
        assert worst <= 2**15 - 1, (node.name, worst)
    return len(matmuls)


def litert_operator_codes(path):
    """The builtin operator codes of a `.tflite` file, after checking it
    has no custom (Flex, TensorFlow) operator: the `ai-edge-litert`
    interpreter runs builtin ops only."""
    from ai_edge_litert import schema_py_generated as schema

    with open(path, "rb") as f:
        model = schema.ModelT.InitFromPackedBuf(f.read(), 0)
    codes = [
        max(code.builtinCode, code.deprecatedBuiltinCode)
        for code in model.operatorCodes
    ]
    assert schema.BuiltinOperator.CUSTOM not in codes
    assert not any(code.customCode for code in model.operatorCodes)
    return codes


def run_without_tensorflow(code):
    """Runs `code` in a child Python and checks it succeeded without
    importing TensorFlow or Keras."""
    code += (
        "import sys\n"
        "loaded = [m for m in ('tensorflow', 'keras') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    # Without TF_CPP_MIN_LOG_LEVEL, as a user runs it (the command line
    # reads it to decide how to import TensorFlow).
    env = subprocess_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]


def small_tagger(bilm, num_words, num_tags, seed, **dense):
    """Tagger (b) of examples/pos_tagging.py in small: task word
    embeddings and ELMo, a BiLSTM, a softmax over the tags (`dense`: more
    arguments of its Dense layer)."""
    import keras

    keras.utils.set_random_seed(seed)
    word_ids = keras.Input((None,), dtype="int32", name="word_ids")
    tokens = keras.Input((None,), dtype="string", name="tokens")
    words = keras.layers.Embedding(num_words, 8, mask_zero=True)(word_ids)
    elmo = keras_elmo.ELMoEmbedding(bilm, name="elmo")(tokens)
    x = keras.layers.Concatenate()([words, elmo])
    lstm = keras.layers.LSTM(8, return_sequences=True)
    x = keras.layers.Bidirectional(lstm)(x)
    tags = keras.layers.Dense(
        num_tags, activation="softmax", name="tags", **dense
    )(x)
    return keras.Model({"word_ids": word_ids, "tokens": tokens}, tags)
