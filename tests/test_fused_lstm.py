"""Plain LSTMs exported as the runtimes' fused kernels (issue 64): a biLM
of the `lstm` student kind and the Keras LSTMs of a whole tagger become
LiteRT `UNIDIRECTIONAL_SEQUENCE_LSTM` and ONNX `LSTM` ops (int8:
`DynamicQuantizeLSTM`), no loop left; the files equal the Keras models
(float32, 1e-5) on odd input; LiteRT's kernel clips no cell and starts
every call from zeros; what does not fuse keeps its loop; `fused_lstm`
is refused where nothing would fuse."""

import json

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert")
pytest.importorskip("onnxruntime")

import keras  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import tensorflow as tf  # noqa: E402
from ai_edge_litert import schema_py_generated as schema  # noqa: E402
from ai_edge_litert.interpreter import Interpreter  # noqa: E402

import keras_elmo  # noqa: E402
from elmo_core.errors import KerasElmoError  # noqa: E402
from elmo_core.runtime import LiteRTBiLM  # noqa: E402
from elmo_core.runtime import LiteRTModel  # noqa: E402
from elmo_core.runtime import ONNXBiLM  # noqa: E402
from elmo_core.runtime import ONNXModel  # noqa: E402
from elmo_core.runtime.litert import read_file_metadata  # noqa: E402
from keras_elmo.export import to_litert  # noqa: E402
from keras_elmo.export import to_onnx  # noqa: E402
from tests.deploy_helpers import batches  # noqa: E402
from tests.deploy_helpers import fixture_bilm  # noqa: E402
from tests.deploy_helpers import litert_operator_codes  # noqa: E402
from tests.deploy_helpers import padded_tokens  # noqa: E402
from tests.deploy_helpers import small_tagger  # noqa: E402
from tests.deploy_helpers import tagger_word_ids  # noqa: E402

FUSED = schema.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM
WHILE = schema.BuiltinOperator.WHILE
NUM_LAYERS = 2
# 32 units: each gate's weights reach the 1,024 values from which the
# TFLite converter quantizes a tensor.
UNITS = 32
NUM_WORDS = 50
WRITERS = {"litert": to_litert, "onnx": to_onnx}
SUFFIX = {"litert": ".tflite", "onnx": ".onnx"}


def _student():
    """A biLM of plain LSTMs (the `lstm` student kind), random weights."""
    keras.utils.set_random_seed(11)
    bilm = keras_elmo.layers.BiLM(
        filters=[[1, 4], [2, 8]],
        char_embedding_dim=4,
        num_highway_layers=1,
        units=UNITS,
        projection_dim=UNITS,
        num_layers=NUM_LAYERS,
        cell_clip=None,
        proj_clip=None,
    )
    bilm.build()
    return bilm


def _odd_batches():
    """Empty sentences, one token, padding, and a row of 70 tokens."""
    long = [f"w{k % 9}" for k in range(70)]
    return [b for b in batches() if any(b)] + [[long, ["one"], []]]


def _tagger_inputs(sentences):
    return {
        "word_ids": tagger_word_ids(sentences, NUM_WORDS),
        "tokens": padded_tokens(sentences),
    }


def _write(model, root, fmt, precision, **options):
    path = str(root / f"{fmt}-{precision}{SUFFIX[fmt]}")
    return WRITERS[fmt](model, path, precision=precision, **options)


@pytest.fixture(scope="module")
def student():
    return _student()


def _files(model, root):
    """`model` in every format, float32 and int8, in the folder `root`."""
    return {
        (fmt, precision): _write(model, root, fmt, precision)
        for fmt in WRITERS
        for precision in ("float32", "int8")
    }


@pytest.fixture(scope="module")
def student_files(student, tmp_path_factory):
    return _files(student, tmp_path_factory.mktemp("student"))


@pytest.fixture(scope="module")
def tagger(student):
    return small_tagger(student, NUM_WORDS, 5, 12)


@pytest.fixture(scope="module")
def tagger_files(tagger, tmp_path_factory):
    return _files(tagger, tmp_path_factory.mktemp("tagger"))


def read_options(path):
    return json.loads(read_file_metadata(path))["export_options"]


def _op_types(path):
    return [node.op_type for node in onnx.load(path).graph.node]


def _tensor_types(path, op):
    """The types of the weight inputs (1 to 8) of every `op` of a
    `.tflite` file."""
    with open(path, "rb") as f:
        model = schema.ModelT.InitFromPackedBuf(f.read(), 0)
    codes = [
        max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes
    ]
    graph = model.subgraphs[0]
    return [
        [graph.tensors[k].type for k in node.inputs[1:9]]
        for node in graph.operators
        if codes[node.opcodeIndex] == op
    ]


def _fused_ops(path):
    """The fused LSTM operators of a `.tflite` file, of every subgraph
    (after `litert_operator_codes` checks it holds builtin ops only)."""
    litert_operator_codes(path)
    with open(path, "rb") as f:
        model = schema.ModelT.InitFromPackedBuf(f.read(), 0)
    codes = [
        max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes
    ]
    return [
        node
        for graph in model.subgraphs
        for node in graph.operators
        if codes[node.opcodeIndex] == FUSED
    ]


def _cell_clips(path):
    return [node.builtinOptions.cellClip for node in _fused_ops(path)]


# === The converted files hold the fused kernels ===


def test_the_student_files_hold_one_fused_op_a_layer_and_direction(
    student_files,
):
    fused = 2 * NUM_LAYERS
    for precision in ("float32", "int8"):
        path = student_files["litert", precision]
        assert len(_fused_ops(path)) == fused
        assert WHILE not in litert_operator_codes(path)
        ops = _op_types(student_files["onnx", precision])
        assert "Loop" not in ops
        kind = "LSTM" if precision == "float32" else "DynamicQuantizeLSTM"
        assert ops.count(kind) == fused, ops
    # int8: the LiteRT kernel's weights are int8 too (its hybrid kernel).
    weights = _tensor_types(student_files["litert", "int8"], FUSED)
    assert len(weights) == fused
    assert all(t == schema.TensorType.INT8 for w in weights for t in w)


def test_the_onnx_int8_lstm_weights_are_7_bit(student_files):
    """As every int8 weight of the ONNX exports (`onnx._quantize`): no
    pair of u8 x s8 products saturates int16 on any x86-64 CPU."""
    model = onnx.load(student_files["onnx", "int8"])
    initializers = {t.name: t for t in model.graph.initializer}
    lstms = [n for n in model.graph.node if n.op_type == "DynamicQuantizeLSTM"]
    for node in lstms:
        for name in node.input[1:3]:
            weights = onnx.numpy_helper.to_array(initializers[name])
            assert weights.dtype == np.int8
            assert np.abs(weights.astype(np.int32)).max() <= 64


def test_the_tagger_files_fuse_its_bilstm_and_the_biLM(tagger_files):
    fused = 2 * NUM_LAYERS + 2
    for precision in ("float32", "int8"):
        path = tagger_files["litert", precision]
        assert len(_fused_ops(path)) == fused
        assert WHILE not in litert_operator_codes(path)
        ops = _op_types(tagger_files["onnx", precision])
        kind = "LSTM" if precision == "float32" else "DynamicQuantizeLSTM"
        assert ops.count(kind) == fused and "Loop" not in ops


# === The files equal the Keras models ===


@pytest.mark.parametrize("fmt", ["litert", "onnx"])
def test_the_student_files_equal_the_keras_student(student, student_files, fmt):
    runtime = {"litert": LiteRTBiLM, "onnx": ONNXBiLM}[fmt]
    exported = runtime(student_files[fmt, "float32"])
    for sentences in _odd_batches():
        want = student(keras_elmo.batch_to_ids(sentences))
        got = exported(sentences)
        np.testing.assert_array_equal(got["mask"], np.asarray(want["mask"]))
        for g, w in zip(got["layer_outputs"], want["layer_outputs"]):
            np.testing.assert_allclose(g, np.asarray(w), atol=1e-5, rtol=0)


def test_plain_runtimes_run_the_student_files(student, student_files):
    """onnxruntime on whole padded batches; the LiteRT interpreter a row
    at a time (its batch is 1), each call after resetting its variables."""
    session = onnxruntime.InferenceSession(student_files["onnx", "float32"])
    interpreter = Interpreter(model_path=student_files["litert", "float32"])
    interpreter.allocate_tensors()
    runner = interpreter.get_signature_runner()
    for sentences in _odd_batches():
        ids = keras_elmo.batch_to_ids(sentences)
        want = np.asarray(student(ids)["layer_outputs"][-1])
        (got,) = session.run(["layer_2"], {"character_ids": ids})
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
        for row in range(len(sentences)):
            interpreter.reset_all_variables()
            got = runner(character_ids=ids[row : row + 1])["layer_2"]
            np.testing.assert_allclose(got, want[row : row + 1], atol=1e-5)


@pytest.mark.parametrize("fmt", ["litert", "onnx"])
def test_the_tagger_files_equal_the_keras_tagger(tagger, tagger_files, fmt):
    runtime = {"litert": LiteRTModel, "onnx": ONNXModel}[fmt]
    exported = runtime(tagger_files[fmt, "float32"])
    for sentences in _odd_batches():
        inputs = _tagger_inputs(sentences)
        want = tagger(
            {
                "word_ids": tf.constant(inputs["word_ids"]),
                "tokens": tf.constant(inputs["tokens"]),
            }
        )
        got = exported(inputs)
        real = inputs["word_ids"] > 0
        np.testing.assert_allclose(
            got[real], np.asarray(want)[real], atol=1e-5, rtol=0
        )


@pytest.mark.parametrize("fmt", ["litert", "onnx"])
def test_int8_files_stay_near_float32(student, student_files, fmt):
    runtime = {"litert": LiteRTBiLM, "onnx": ONNXBiLM}[fmt]
    sentences = _odd_batches()[0]
    want = student(keras_elmo.batch_to_ids(sentences))["layer_outputs"][-1]
    got = runtime(student_files[fmt, "int8"])(sentences)["layer_outputs"][-1]
    # Quantized weights: about 1 % of the layer's scale (measured 0.2-0.4
    # % on the fixture sizes), far from a wrong result.
    error = np.abs(got - np.asarray(want)).max()
    assert error < 0.05 * np.abs(np.asarray(want)).max()


def test_each_litert_call_starts_from_a_zero_state(student, student_files):
    """The fused kernel keeps its state in variables between calls; the
    runtime resets them, so a call does not depend on the one before."""
    exported = LiteRTBiLM(student_files["litert", "float32"])
    sentences = [["the", "same", "sentence"]]
    first = exported(sentences)["layer_outputs"][-1]
    again = exported(sentences)["layer_outputs"][-1]
    np.testing.assert_array_equal(first, again)


def test_litert_clips_no_cell(tmp_path):
    """The converter writes the fused op with a cell clip of 10; the
    export sets none, as the Keras LSTM has: a cell driven to 30 and back
    down to 15 (to -5, clipped) gives the Keras outputs."""
    bilm = keras_elmo.layers.BiLM(
        filters=[[1, 4]],
        char_embedding_dim=2,
        num_highway_layers=0,
        units=1,
        projection_dim=1,
        num_layers=1,
        cell_clip=None,
        proj_clip=None,
    )
    bilm.build()
    tokens = bilm.encode_tokens(keras_elmo.batch_to_ids([["a", "b"]]))[0]
    up, down = np.asarray(tokens)[:, 0]
    # The candidate gate is +1 for "a", -1 for "b" (saturated tanh); the
    # input, forget and output gates stay open. Gates (i, j, f, o).
    scale = 40.0 / (up - down)
    layer = bilm.forward_layers[0]
    layer.kernel.assign([[0.0, scale, 0.0, 0.0]])
    layer.bias.assign([20.0, -scale * (up + down) / 2, 20.0, 20.0])
    layer.recurrent_kernel.assign(np.zeros((1, 4), np.float32))
    path = to_litert(bilm, str(tmp_path / "clip.tflite"))
    assert _cell_clips(path) == [0.0, 0.0]
    sentence = [["a"] * 30 + ["b"] * 15]
    want = np.asarray(bilm(keras_elmo.batch_to_ids(sentence))["layer_outputs"])
    got = LiteRTBiLM(path)(sentence)["layer_outputs"]
    # The forward cell reaches 30 and ends at 15: h = tanh(15) ~ 1, where
    # a cell clipped at 10 would end at -5 (h ~ -1).
    assert want[1][0, -1, 0] > 0.99
    np.testing.assert_allclose(got[1], want[1], atol=1e-5, rtol=0)


# === What does not fuse, and what says it is ===


def test_an_elmo_cell_keeps_its_loop_beside_a_fused_tagger_bilstm(tmp_path):
    """The published cell (projection, clips) has no fused kernel: with
    `fused_lstm=True` a tagger around it fuses its own BiLSTM only."""
    tagger = small_tagger(fixture_bilm(), NUM_WORDS, 5, 12)
    path = to_litert(tagger, str(tmp_path / "t.tflite"), fused_lstm=True)
    assert len(_fused_ops(path)) == 2
    assert WHILE in litert_operator_codes(path)
    inputs = _tagger_inputs(_odd_batches()[0])
    want = tagger(
        {
            "word_ids": tf.constant(inputs["word_ids"]),
            "tokens": tf.constant(inputs["tokens"]),
        }
    )
    got = LiteRTModel(path)(inputs)
    real = inputs["word_ids"] > 0
    np.testing.assert_allclose(got[real], np.asarray(want)[real], atol=1e-5)


def test_without_fused_lstm_the_student_keeps_its_loops(student, tmp_path):
    path = to_litert(student, str(tmp_path / "s.tflite"), fused_lstm=False)
    codes = litert_operator_codes(path)
    assert FUSED not in codes and WHILE in codes
    options = read_options(path)
    assert options["fused_lstm"] is False and options["batch_size"] is None


def test_the_files_say_their_lstms_are_fused(student_files, tagger_files):
    for files in (student_files, tagger_files):
        options = read_options(files["litert", "int8"])
        assert options["fused_lstm"] is True and options["batch_size"] == 1
    bilm_options = LiteRTBiLM(student_files["litert", "float32"]).metadata[
        "bilm_options"
    ]["lstm"]
    assert bilm_options["cell_clip"] is None
    assert bilm_options["dim"] == bilm_options["projection_dim"] == UNITS
    onnx_options = ONNXBiLM(student_files["onnx", "int8"]).metadata
    assert onnx_options["export_options"]["fused_lstm"] is True


@pytest.mark.parametrize("fmt", ["litert", "onnx"])
def test_fused_lstm_is_refused_where_nothing_would_fuse(tmp_path, fmt):
    path = tmp_path / f"m{SUFFIX[fmt]}"
    with pytest.raises(KerasElmoError, match="`fused_lstm`") as error:
        WRITERS[fmt](fixture_bilm(), str(path), fused_lstm=True)
    assert error.value.argument == "fused_lstm"
    with pytest.raises(KerasElmoError, match="`fused_lstm`"):
        WRITERS[fmt](fixture_bilm(), str(path), fused_lstm="yes")
    assert not list(tmp_path.iterdir())


def test_a_damaged_batch_size_is_refused(student_files, tmp_path):
    import flatbuffers

    from keras_elmo.export.litert import add_metadata

    path = student_files["litert", "float32"]
    info = LiteRTBiLM(path).metadata
    info["export_options"]["batch_size"] = 7
    with open(path, "rb") as f:
        damaged = add_metadata(
            flatbuffers,
            schema,
            f.read(),
            "keras_elmo",
            json.dumps(info).encode(),
        )
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(damaged)
    with pytest.raises(KerasElmoError, match="batch_size"):
        LiteRTBiLM(str(bad))
