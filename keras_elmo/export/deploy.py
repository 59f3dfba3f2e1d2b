"""The exports for devices and servers without TensorFlow, from any biLM
source: `export_onnx` and `export_litert`, what `keras-elmo export-onnx`
and `export-litert` run. Each resolves its `model` (checking the output
against every file it reads) and hands the biLM, or the whole model of a
`.keras` file, to the writer of its format (`onnx.to_onnx`,
`litert.to_litert`)."""

import keras

from elmo_core.errors.backends import require_tensorflow
from elmo_core.files import check_output_file
from elmo_core.formats.exported_file import LITERT
from elmo_core.formats.exported_file import check_precision
from keras_elmo.export import litert
from keras_elmo.export import onnx
from keras_elmo.export.model_source import exported_model


def export_onnx(
    model,
    output,
    *,
    weights=None,
    precision="float32",
    scalar_mix=None,
    deduplicate_tokens=True,
    per_channel=False,
    opset=onnx.DEFAULT_OPSET,
    fused_lstm=None,
):
    """Writes a biLM, or a whole Keras model holding ELMo, as ONNX.

    A biLM: input `character_ids` int32 `(batch, time, 50)` (from
    `elmo_core.runtime.batch_to_ids`), dynamic batch and time; outputs
    `layer_0` ... `layer_L` float32 `(batch, time, 2 * projection_dim)`,
    `mask` bool `(batch, time)` and, with `scalar_mix`, `elmo`. Run it
    with `elmo_core.runtime.ONNXBiLM`.

    A whole model (a `.keras` file, or a functional or Sequential
    `keras.Model` with `ELMoEmbedding` or `BiLM` layers, e.g. a tagger):
    the model's inputs and outputs by name, except that a string input
    read by ELMo takes the ids ELMo computes from the tokens (character
    ids, or a word-input biLM's word ids; see
    `elmo_core.formats.exported_model`). Run it with
    `elmo_core.runtime.ONNXModel`, which takes the tokens.

    The metadata property `keras_elmo` holds the options of the export as
    JSON. What `keras-elmo export-onnx` runs.

    Args:
        model: a biLM source, as `keras_elmo.load_bilm` takes it (a
            pretrained model name, a URL, a training run or export
            directory, an ELMoForManyLangs folder, an official
            options.json with `weights`), a `.keras` file (its whole
            model), a character-input `keras_elmo.layers.BiLM`, or a
            `keras.Model` holding ELMo.
        output: str. The `.onnx` file to write (atomically).
        weights: str or None. The hdf5 weights of an options.json given
            as `model`. Defaults to `None`.
        precision: `"float32"` (matches TensorFlow to ~1e-6) or `"int8"`
            (MatMul weights 7-bit int8, dynamic quantization; as accurate
            on every x86-64 CPU; the biLM's token encoder stays float32).
            Defaults to `"float32"`.
        scalar_mix: None, a built `keras_elmo.layers.ScalarMix` or a list
            of `num_layers + 1` scalar weights: adds the output `elmo`
            (a biLM only: a model's ELMoEmbedding holds its own mixes).
            Defaults to `None`.
        deduplicate_tokens: bool. Encode each distinct token of a batch
            once (ONNX `Unique`). Defaults to `True`.
        per_channel: bool. int8 only: one scale per weight column instead
            of one per matrix. Defaults to `False`.
        opset: int. ONNX opset. Defaults to `17`.
        fused_lstm: bool or None. Each plain LSTM (an `lstm` student's, a
            model's Keras `LSTM`s) as an ONNX `LSTM` node, not a loop
            (`keras_elmo.export.fused_lstm`); None: when there is a biLM
            of plain LSTMs. Defaults to `None`.

    Returns:
        `output`.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "elmo-int8.onnx")
    >>> _ = keras_elmo.export.export_onnx(
    ...     "tests/fixtures/bilm-tf/model", path, precision="int8")
    >>> import onnxruntime  # any ONNX Runtime runs the file
    >>> session = onnxruntime.InferenceSession(path)
    >>> ids = elmo_core.runtime.batch_to_ids([["Hello", "world"]])
    >>> mask, = session.run(["mask"], {"character_ids": ids})
    >>> mask.tolist()
    [[True, True]]
    """
    require_tensorflow("The ONNX export", keras.backend.backend())
    options = onnx.check_options(
        precision, deduplicate_tokens, per_channel, opset
    )
    value, _ = exported_model(model, weights, output, check_output_file)
    return onnx.to_onnx(
        value, output, scalar_mix=scalar_mix, fused_lstm=fused_lstm, **options
    )


def export_litert(
    model,
    output,
    *,
    weights=None,
    precision="float32",
    scalar_mix=None,
    fused_lstm=None,
):
    """Writes a biLM, or a whole Keras model holding ELMo, as LiteRT
    (TensorFlow Lite): builtin ops only, in the signature
    `serving_default`. The file holds what `export_onnx`'s holds (a biLM's
    layers over character ids, or a whole model's inputs and outputs);
    run it with `elmo_core.runtime.LiteRTBiLM`, or `LiteRTModel` for a
    whole model. What `keras-elmo export-litert` runs.

    Args:
        model, output, weights, scalar_mix: as `export_onnx`'s (`output`
            a `.tflite` file).
        precision: `"float32"`, `"float16"` (float16 weights) or `"int8"`
            (dynamic-range quantization). Defaults to `"float32"`.
        fused_lstm: bool or None. Run each plain LSTM (a biLM's of the
            `lstm` student kind; Keras `LSTM` layers of a whole model) as
            LiteRT's fused `UNIDIRECTIONAL_SEQUENCE_LSTM` instead of a
            loop (`keras_elmo.export.fused_lstm`). The file then takes
            one sentence a call (the kernel's state has a static batch:
            `elmo_core.runtime` runs a batch row by row) and keeps the
            kernel's state in variables, which a plain interpreter resets
            before each call (`reset_all_variables`). None: when the
            model is or holds a biLM of plain LSTMs. Defaults to `None`.

    Returns:
        `output`.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "elmo.tflite")
    >>> _ = keras_elmo.export.export_litert(
    ...     "tests/fixtures/bilm-tf/model", path, scalar_mix=[0, 0, 0])
    >>> elmo = elmo_core.runtime.LiteRTBiLM(path)
    >>> elmo([["Hello", "world"]])["elmo"].shape
    (1, 2, 32)
    """
    require_tensorflow("The LiteRT export", keras.backend.backend())
    check_precision(precision, LITERT)
    value, _ = exported_model(model, weights, output, check_output_file)
    return litert.to_litert(
        value,
        output,
        precision=precision,
        scalar_mix=scalar_mix,
        fused_lstm=fused_lstm,
    )
