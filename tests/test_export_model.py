"""Whole Keras models holding ELMo exported: a tagger around
`ELMoEmbedding` (the bilm-tf fixture; string tokens and word ids in) and
one around a word-input biLM (string tokens in), to ONNX (float32, int8)
and LiteRT (float32, float16, int8), run by plain ONNX Runtime and the
LiteRT interpreter and by `elmo_core.runtime.ONNXModel` / `LiteRTModel`
(words in, no TensorFlow), compared with the Keras model: float32 to
1e-5, the reduced precisions by the tags they agree on. Keras's own
`model.export` refused clearly; the command line; models the export
cannot take refused by name. The word-input biLM's tagger in every
precision is a `large` test (its five exports take about 35 s); the
default tests read its float32 ONNX file only."""

import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tf2onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("ai_edge_litert")

import keras  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import tensorflow as tf  # noqa: E402
from ai_edge_litert import schema_py_generated as schema  # noqa: E402
from ai_edge_litert.interpreter import Interpreter  # noqa: E402

import elmo_core
import keras_elmo  # noqa: E402
from elmo_core.errors import KerasElmoError  # noqa: E402
from elmo_core.runtime import LiteRTModel  # noqa: E402
from elmo_core.runtime import ONNXBiLM  # noqa: E402
from elmo_core.runtime import ONNXModel  # noqa: E402
from keras_elmo.export import to_litert  # noqa: E402
from keras_elmo.export import to_onnx  # noqa: E402
from keras_elmo.export.keras_rnns import portable_rnns  # noqa: E402
from keras_elmo_cli import main  # noqa: E402
from tests.deploy_helpers import assert_int8_pair_sums_fit_int16  # noqa: E402
from tests.deploy_helpers import batches  # noqa: E402
from tests.deploy_helpers import fixture_bilm  # noqa: E402
from tests.deploy_helpers import litert_operator_codes  # noqa: E402
from tests.deploy_helpers import padded_tokens  # noqa: E402
from tests.deploy_helpers import run_without_tensorflow  # noqa: E402
from tests.deploy_helpers import small_tagger  # noqa: E402
from tests.deploy_helpers import tagger_word_ids  # noqa: E402
from tests.helpers import subprocess_env  # noqa: E402

WORDS = os.path.join(
    os.path.dirname(__file__), "fixtures", "bilm-tf-words", "model"
)
NUM_TAGS = 17
NUM_WORDS = 40
FILES = (
    "onnx-float32",
    "onnx-int8",
    "litert-float32",
    "litert-float16",
    "litert-int8",
)
RUNTIMES = {"onnx": ONNXModel, "litert": LiteRTModel}
# Tag layers with large random weights: most tags are then decided by
# more than rounding (the word tagger's scores move more per unit of
# error, its biLM being smaller).
SHARP = keras.initializers.RandomNormal(stddev=30.0, seed=3)
WORD_SHARP = keras.initializers.RandomNormal(stddev=8.0, seed=3)
# A tag is decided when it leads the next by this much (of probability).
DECIDED = 0.2


def _word_tagger():
    """A Sequential tagger around the word-input fixture biLM (its
    vocabulary held by ELMoEmbedding), a GRU this time."""
    keras.utils.set_random_seed(8)
    vocabulary = elmo_core.ids.Vocabulary.from_file(
        os.path.join(WORDS, "vocab.txt")
    )
    bilm = keras_elmo.load_bilm(
        os.path.join(WORDS, "options.json"),
        os.path.join(WORDS, "lm_weights.hdf5"),
        vocabulary=vocabulary,
    )
    return keras.Sequential(
        [
            keras.Input((None,), dtype="string", name="tokens"),
            keras_elmo.ELMoEmbedding(bilm, vocabulary=vocabulary),
            keras.layers.Bidirectional(
                keras.layers.GRU(8, return_sequences=True)
            ),
            keras.layers.Dense(
                5, activation="softmax", kernel_initializer=WORD_SHARP
            ),
        ]
    )


def _word_ids(sentences):
    """The char tagger's own word ids of the tokens (0 pads)."""
    return tagger_word_ids(sentences, NUM_WORDS)


def _char_inputs(sentences):
    return {
        "word_ids": _word_ids(sentences),
        "tokens": padded_tokens(sentences),
    }


def _word_batches():
    return [
        [["the", "neural", "words"], ["of", "zzz-unknown"], []],
        [["in"]],
        [["of", "the"] * 6],
    ]


def _export(model, root, name, keras_file=None):
    """`name` is `runtime-precision`; with `keras_file`, written by the
    command line from that file."""
    runtime, precision = name.split("-")
    path = str(root / f"{name}.{'onnx' if runtime == 'onnx' else 'tflite'}")
    if keras_file is not None:
        argv = [f"export-{runtime}", "--model", keras_file, "--output", path]
        assert main([*argv, "--precision", precision]) == 0
        return path
    write = to_onnx if runtime == "onnx" else to_litert
    return write(model, path, precision=precision)


@pytest.fixture(scope="module")
def char_tagger():
    return small_tagger(
        fixture_bilm(), NUM_WORDS, NUM_TAGS, 7, kernel_initializer=SHARP
    )


@pytest.fixture(scope="module")
def char_files(char_tagger, tmp_path_factory):
    """The five files of the char tagger; two written by the command line
    from its .keras file."""
    root = tmp_path_factory.mktemp("char_tagger")
    keras_file = str(root / "tagger.keras")
    char_tagger.save(keras_file)
    by_command = ("onnx-int8", "litert-float16")
    return {
        name: _export(
            char_tagger,
            root,
            name,
            keras_file if name in by_command else None,
        )
        for name in FILES
    }


@pytest.fixture(scope="module")
def word_tagger():
    return _word_tagger()


@pytest.fixture(scope="module")
def word_onnx(word_tagger, tmp_path_factory):
    """The word tagger's float32 ONNX file, which the default tests read."""
    root = tmp_path_factory.mktemp("word_tagger")
    return _export(word_tagger, root, "onnx-float32")


@pytest.fixture(scope="module")
def word_files(word_tagger, word_onnx):
    """The word tagger's five files (the `large` test's)."""
    root = pathlib.Path(word_onnx).parent
    return {
        name: word_onnx
        if name == "onnx-float32"
        else _export(word_tagger, root, name)
        for name in FILES
    }


def _char_keras(tagger, sentences):
    inputs = _char_inputs(sentences)
    return np.asarray(tagger(inputs, training=False))


def _char_batches():
    # The batch of empty sentences only through the runtime classes (the
    # plain runtimes fail on it, Keras's LSTM too).
    return [b for b in batches() if any(b)]


def test_float32_files_match_keras_in_plain_runtimes(char_tagger, char_files):
    session = onnxruntime.InferenceSession(
        char_files["onnx-float32"], providers=["CPUExecutionProvider"]
    )
    interpreter = Interpreter(model_path=char_files["litert-float32"])
    runner = interpreter.get_signature_runner()
    for sentences in _char_batches():
        feeds = {
            "word_ids": _word_ids(sentences),
            "tokens": keras_elmo.batch_to_ids(sentences),
        }
        want = _char_keras(char_tagger, sentences)
        (onnx_tags,) = session.run(None, feeds)
        litert_tags = runner(**feeds)["tags"]
        np.testing.assert_allclose(onnx_tags, want, atol=1e-5, rtol=0)
        np.testing.assert_allclose(litert_tags, want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_runtime_classes_take_words(char_tagger, char_files, runtime):
    model = RUNTIMES[runtime](char_files[f"{runtime}-float32"], num_threads=1)
    assert model.input_names == ["word_ids", "tokens"]
    assert model.output_names == ["tags"]
    for sentences in _char_batches():
        inputs = {"tokens": sentences, "word_ids": _word_ids(sentences)}
        want = _char_keras(char_tagger, sentences)
        np.testing.assert_allclose(model(inputs), want, atol=1e-5, rtol=0)
        # Character ids and NumPy string arrays give the same.
        inputs["tokens"] = keras_elmo.batch_to_ids(sentences)
        np.testing.assert_allclose(model(inputs), want, atol=1e-5, rtol=0)
        inputs["tokens"] = padded_tokens(sentences).astype(str)
        np.testing.assert_allclose(model(inputs), want, atol=1e-5, rtol=0)
    # Batches without tokens are answered without the file (which would
    # fail on them).
    empty = model({"tokens": [[], []], "word_ids": np.zeros((2, 0), "int32")})
    assert empty.shape == (2, 0, NUM_TAGS)
    none = model({"tokens": [], "word_ids": np.zeros((0, 0), "int32")})
    assert none.shape == (0, 0, NUM_TAGS)


def _tags_agreed(got, want, real):
    """`(tags agreed, tokens, tags agreed where Keras's best tag leads by
    at least `DECIDED`, such tokens)` over the `real` positions."""
    same = (np.argmax(got, -1) == np.argmax(want, -1))[real]
    ranked = np.sort(want, -1)
    decided = (ranked[..., -1] - ranked[..., -2])[real] >= DECIDED
    return np.array([same.sum(), same.size, same[decided].sum(), decided.sum()])


@pytest.mark.parametrize("name", ["onnx-int8", "litert-float16", "litert-int8"])
def test_reduced_precisions_agree_on_the_tags(char_tagger, char_files, name):
    runtime = name.split("-")[0]
    model = RUNTIMES[runtime](char_files[name])
    assert model.precision == name.split("-")[1]
    counts = np.zeros(4, int)
    worst = 0.0
    for sentences in _char_batches():
        inputs = {"tokens": sentences, "word_ids": _word_ids(sentences)}
        got, want = model(inputs), _char_keras(char_tagger, sentences)
        counts += _tags_agreed(got, want, _word_ids(sentences) != 0)
        worst = max(worst, float(np.abs(got - want).max()))
    agreed, total, agreed_decided, decided = counts
    # Measured on an AMD EPYC (AVX-512 VNNI), of 132 tokens: ONNX int8
    # 126 tags agreed, LiteRT int8 130, float16 all; every disagreement on
    # a token whose two best tags lie within 0.12 in Keras (this random
    # tagger's scores move by up to 0.09 in int8, 0.0007 in float16). The
    # integer arithmetic is the same on every x86-64 CPU (ONNX: 7-bit
    # weights; LiteRT: int8 x int8 added in int32), so only float rounding
    # differs there.
    assert agreed >= 0.9 * total, counts
    assert agreed_decided == decided >= total // 2, counts
    assert 0 < worst < 0.2, worst


@pytest.mark.large  # ~35 s of exports; the char tagger's twin runs by default
def test_word_tagger_in_every_precision(word_tagger, word_files):
    for name, path in word_files.items():
        runtime, precision = name.split("-")
        model = RUNTIMES[runtime](path, num_threads=1)
        counts = np.zeros(4, int)
        for sentences in _word_batches():
            got = model(sentences)
            want = np.asarray(
                word_tagger(padded_tokens(sentences), training=False)
            )
            if precision == "float32":
                np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
            real = padded_tokens(sentences) != ""
            counts += _tags_agreed(got, want, real)
            assert np.abs(got - want).max() < 0.2, name
        agreed, total, agreed_decided, decided = counts
        # Measured as for the char tagger, of 18 tokens: ONNX int8 17
        # tags agreed (scores within 0.11), LiteRT float16 and int8 all
        # (this tiny biLM's matrices are below the size LiteRT quantizes).
        assert agreed >= 0.85 * total, (name, counts)
        assert agreed_decided == decided >= total // 2, (name, counts)
    _assert_litert_builtin_ops_only(word_files)


def test_int8_onnx_is_exact_integer_arithmetic_on_every_cpu(char_files):
    model = onnx.load(char_files["onnx-int8"])
    # The biLM's LSTMs (12, as its own export), the tagger's BiLSTM and
    # Dense; every one within the int16 pair bound.
    assert assert_int8_pair_sums_fit_int16(model) > 12
    # The biLM's token encoder stays float32 arithmetic, its weights
    # stored int8 (one scale a column) and dequantized before the MatMul.
    dequantized = {
        n.output[0] for n in model.graph.node if n.op_type == "DequantizeLinear"
    }
    token_encoder = [
        n
        for n in model.graph.node
        if n.op_type == "MatMul"
        and ("highway" in n.name or "token_projection" in n.name)
    ]
    assert len(token_encoder) == 5
    assert all(n.input[1] in dequantized for n in token_encoder)


def _assert_litert_builtin_ops_only(files):
    for name, path in files.items():
        if name.startswith("litert"):
            codes = litert_operator_codes(path)
            # The biLM's and the tagger's recurrences (dynamic time).
            assert schema.BuiltinOperator.WHILE in codes


def test_litert_files_hold_builtin_ops_only(char_files):
    _assert_litert_builtin_ops_only(char_files)


def test_reduced_precision_files_are_smaller(char_files):
    sizes = {name: os.path.getsize(path) for name, path in char_files.items()}
    assert sizes["onnx-int8"] < 0.75 * sizes["onnx-float32"]
    assert sizes["litert-float16"] < 0.75 * sizes["litert-float32"]
    assert sizes["litert-int8"] < 0.75 * sizes["litert-float32"]


def _metadata(path):
    if path.endswith(".onnx"):
        props = onnx.load(path).metadata_props
        return json.loads({p.key: p.value for p in props}["keras_elmo"])
    from elmo_core.runtime.litert import read_file_metadata

    return json.loads(read_file_metadata(path))


def test_metadata_describes_inputs_and_outputs(char_files, word_onnx):
    info = _metadata(char_files["litert-int8"])
    assert info["contents"] == "model" and info["precision"] == "int8"
    assert info["inputs"] == [
        {"name": "word_ids", "kind": "array", "dtype": "int32",
         "shape": [None, None]},
        {"name": "tokens", "kind": "characters", "dtype": "int32",
         "shape": [None, None, 50]},
    ]  # fmt: skip
    assert info["outputs"] == [
        {"name": "tags", "dtype": "float32", "shape": [None, None, NUM_TAGS]}
    ]
    assert info["structure"] == {"inputs": "dict", "outputs": "single"}
    assert len(info["bilm_options"]) == 1
    words = _metadata(word_onnx)
    (tokens,) = words["inputs"]
    assert tokens["kind"] == "words" and tokens["shape"] == [None, None]
    with open(os.path.join(WORDS, "vocab.txt"), encoding="utf-8") as f:
        assert tokens["vocabulary"] == f.read().split()
    assert words["structure"]["inputs"] == "single"


@pytest.mark.parametrize("fmt", ["onnx", "litert"])
def test_keras_model_export_is_refused_clearly(char_tagger, tmp_path, fmt):
    path = tmp_path / f"tagger.{'onnx' if fmt == 'onnx' else 'tflite'}"
    _char_keras(char_tagger, batches()[1])  # Keras exports called models
    with pytest.raises(KerasElmoError) as raised:
        char_tagger.export(str(path), format=fmt, verbose=False)
    message = str(raised.value)
    assert f"keras_elmo.export.export_{fmt}(model, path)" in message
    assert f"format={fmt!r}" in message and "'elmo'" in message
    assert not os.path.exists(path)


def test_keras_savedmodel_export_still_works(char_tagger, tmp_path):
    char_tagger.export(str(tmp_path / "saved"), verbose=False)
    served = tf.saved_model.load(str(tmp_path / "saved"))
    sentences = batches()[1]
    inputs = _char_inputs(sentences)
    np.testing.assert_allclose(
        served.serve(inputs), _char_keras(char_tagger, sentences), atol=1e-6
    )


class _Subclassed(keras.Model):
    def __init__(self, bilm):
        super().__init__()
        self.elmo = keras_elmo.ELMoEmbedding(bilm)

    def call(self, tokens):
        return self.elmo(tokens)


def _refusals(bilm):
    """`(model, words the error must hold)` for models the export
    cannot take."""
    tokens = keras.Input((None,), dtype="string", name="tokens")
    elmo = keras_elmo.ELMoEmbedding(bilm)(tokens)
    lookup = keras.layers.StringLookup(vocabulary=["a"], name="lookup")(tokens)
    looked_up = keras.Model(tokens, [elmo, lookup])
    inner = keras.Model(tokens, elmo, name="inner")
    outer_tokens = keras.Input((None,), dtype="string")
    nested = keras.Model(outer_tokens, inner(outer_tokens))
    plain_input = keras.Input((3,))
    plain = keras.Model(plain_input, keras.layers.Dense(2)(plain_input))
    return [
        (_Subclassed(bilm), ["subclassed _Subclassed", "functional model"]),
        (looked_up, ["StringLookup 'lookup'", "string input 'tokens'"]),
        (nested, ["'inner'", "top level"]),
        (plain, ["holds no ELMoEmbedding", "model.export"]),
        ("tagger.keras", ["needs a keras_elmo.layers.BiLM, or a keras.Model"]),
    ]


@pytest.mark.parametrize("write", [to_onnx, to_litert])
def test_models_the_export_cannot_take_are_refused_by_name(
    char_tagger, tmp_path, write
):
    bilm = char_tagger.get_layer("elmo").bilm
    for model, words in _refusals(bilm):
        with pytest.raises(KerasElmoError) as raised:
            write(model, str(tmp_path / "m"))
        for word in words:
            assert word in str(raised.value), (word, str(raised.value))
    with pytest.raises(KerasElmoError, match="`scalar_mix`"):
        write(char_tagger, str(tmp_path / "m"), scalar_mix=[0, 0, 0])
    assert not list(tmp_path.iterdir())


def test_a_stateful_rnn_is_refused_for_litert(tmp_path):
    bilm = fixture_bilm()
    tokens = keras.Input((None,), dtype="string", batch_size=2)
    x = keras_elmo.ELMoEmbedding(bilm)(tokens)
    x = keras.layers.LSTM(4, stateful=True, name="carried")(x)
    with pytest.raises(KerasElmoError, match="'carried' is stateful"):
        to_litert(keras.Model(tokens, x), str(tmp_path / "m.tflite"))
    assert not list(tmp_path.iterdir())


def test_runtime_refuses_bad_inputs_clearly(char_files):
    for runtime in RUNTIMES:
        model = RUNTIMES[runtime](char_files[f"{runtime}-float32"])
        sentences = batches()[0]
        ids = _word_ids(sentences)
        cases = [
            ({"tokens": sentences}, "missing ['word_ids']"),
            ({"tokens": sentences, "word_ids": ids[:2]}, "same batch size"),
            ({"tokens": "a b", "word_ids": ids}, "tokenised sentences"),
            ({"tokens": sentences, "word_ids": ids * 1.0}, "takes int32"),
            ({"tokens": sentences, "word_ids": ids[0]}, "takes shape"),
            ({"tokens": sentences, "word_ids": ids[:, :1]}, "belong together"),
            (sentences, "pass a dict"),
        ]
        for inputs, words in cases:
            with pytest.raises(KerasElmoError, match=re.escape(words)):
                model(inputs)
        # A failed call leaves the model usable.
        assert model({"tokens": sentences, "word_ids": ids}).shape[0] == 5


def _with_metadata(path, tmp_path, change):
    model = onnx.load(path)
    props = {p.key: p.value for p in model.metadata_props}
    info = json.loads(props["keras_elmo"])
    change(info)
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, {"keras_elmo": json.dumps(info)})
    target = str(tmp_path / "changed.onnx")
    onnx.save(model, target)
    return target


def test_runtime_refuses_the_wrong_file_clearly(char_files, tmp_path):
    path = char_files["onnx-float32"]
    with pytest.raises(KerasElmoError, match="runtime.ONNXModel"):
        ONNXBiLM(path)
    bilm_like = _with_metadata(path, tmp_path, lambda i: i.pop("contents"))
    with pytest.raises(KerasElmoError, match="holds a biLM; open it with"):
        ONNXModel(bilm_like)
    damages = [
        lambda i: i["inputs"][1].update(kind="pictures"),
        lambda i: i["inputs"][1].update(shape=[None, None, 49]),
        lambda i: i["inputs"][0].update(name="word ids"),
        lambda i: i["outputs"].clear(),
        lambda i: i["structure"].update(outputs="tree"),
        lambda i: i["inputs"][1].update(kind="words", shape=[None, None]),
    ]
    for damage in damages:
        with pytest.raises(KerasElmoError, match="metadata is damaged"):
            ONNXModel(_with_metadata(path, tmp_path, damage))
    # Metadata that says otherwise than the graph: refused when opened.
    renamed = _with_metadata(
        path, tmp_path, lambda i: i["outputs"][0].update(name="labels")
    )
    with pytest.raises(KerasElmoError, match="does not match its keras_elmo"):
        ONNXModel(renamed)


def test_a_saved_tagger_exports_from_a_fresh_process(char_files):
    # The command line loads the .keras file in a process that has not
    # built the layers (they register with Keras when first imported).
    keras_file = os.path.join(
        os.path.dirname(char_files["onnx-float32"]), "tagger.keras"
    )
    code = (
        "from keras_elmo.sources import KerasFile\n"
        f"model = KerasFile({keras_file!r}).load_model()\n"
        "assert model.get_layer('elmo').bilm.num_layers == 2\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_runtime_runs_without_tensorflow(char_files, word_onnx):
    code = (
        "import numpy as np\n"
        "from elmo_core.runtime import LiteRTModel, ONNXModel\n"
        f"a = ONNXModel({char_files['onnx-int8']!r})\n"
        f"b = LiteRTModel({char_files['litert-int8']!r})\n"
        "x = {'tokens': [['a', 'b'], []], 'word_ids': [[1, 2], [0, 0]]}\n"
        "x['word_ids'] = np.array(x['word_ids'])\n"
        "assert a(x).shape == b(x).shape == (2, 2, 17)\n"
        f"c = ONNXModel({word_onnx!r})\n"
        "assert c([['the', 'cat']]).shape == (1, 2, 5)\n"
    )
    run_without_tensorflow(code)


def test_a_model_over_character_ids_exports_as_it_is(tmp_path):
    bilm = fixture_bilm()
    ids = keras.Input((None, 50), dtype="int32", name="character_ids")
    x = keras_elmo.ELMoEmbedding(bilm, scalar_mix_weights=[0.0, 1.0, 0.0])(ids)
    model = keras.Model(ids, keras.layers.Dense(3, name="scores")(x))
    path = to_litert(model, str(tmp_path / "ids.tflite"))
    exported = LiteRTModel(path)
    assert exported.inputs[0].kind == "array"
    for sentences in _char_batches():
        ids = keras_elmo.batch_to_ids(sentences)
        want = np.asarray(model(ids))
        np.testing.assert_allclose(exported(ids), want, atol=1e-5, rtol=0)
    # Ids without positions are answered without the interpreter (which
    # would crash on them).
    assert exported(np.zeros((2, 0, 50), "int32")).shape == (2, 0, 3)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "SimpleRNN"])
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_keras_rnns_traced_without_tensor_arrays_equal_keras(
    kind, go_backwards, return_sequences
):
    keras.utils.set_random_seed(5)
    inputs = keras.Input((None, 3))
    masked = keras.layers.Masking()(inputs)
    layer = getattr(keras.layers, kind)(
        4,
        go_backwards=go_backwards,
        return_sequences=return_sequences,
        return_state=True,
    )
    outputs = layer(masked)
    both = keras.layers.Bidirectional(
        getattr(keras.layers, kind)(2, return_sequences=return_sequences)
    )(masked)
    model = keras.Model(inputs, [*outputs, both])
    x = np.random.default_rng(0).normal(size=(3, 6, 3)).astype("float32")
    x[1, 4:] = 0.0  # padding, masked
    x[2, :] = 0.0  # all padding
    function = tf.function(lambda a: model(a, training=False))
    with portable_rnns(model, "test"):
        traced = function.get_concrete_function(
            tf.TensorSpec((None, None, 3), tf.float32)
        )
    graph = traced.graph.as_graph_def()
    ops = {n.op for f in graph.library.function for n in f.node_def}
    assert not any(op.startswith("TensorList") for op in ops), ops
    for got, want in zip(traced(tf.constant(x)), model(x)):
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
