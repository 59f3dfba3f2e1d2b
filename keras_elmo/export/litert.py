"""LiteRT (TensorFlow Lite) export of a biLM: character ids in, every layer
out, float32, float16 or int8, builtin ops only.

The model is the function of `keras_elmo.export.portable`, converted by
TensorFlow's TFLite converter to builtin ops only (the `ai-edge-litert`
interpreter has no Flex/TF ops), with dynamic batch and time. Two things
in the biLM graph would need Flex ops, and are traced differently here:

- the inference recurrence collects its outputs in a TensorArray whose
  element shape (batch, units) is not static, which the converter cannot
  lower to builtins; it is traced inside
  `tensorflow_recurrence.concatenated_outputs()`, which collects them by
  concatenation (exact);
- distinct-token deduplication (`UniqueV2`) has no builtin equivalent, so
  the export encodes every token.

With `fused_lstm` (by default for a biLM of plain LSTMs), plain LSTMs
are traced as the tagged function the converter turns into its fused
`UNIDIRECTIONAL_SEQUENCE_LSTM` (`keras_elmo.export.fused_lstm`), at a
batch of 1 (the converter fuses only at a static batch), and the fused
ops' cell clip, which the converter sets to 10, is removed.

Precisions (the converter's own optimizations):

- `"float32"`: exact to ~1e-6;
- `"float16"`: float16 weights, dequantized to float32 at load (half the
  file, float32 arithmetic);
- `"int8"`: dynamic-range quantization: weights of the fully connected
  and convolution ops int8 (per-channel where the converter supports it),
  activations quantized per call; the embedding, the gates, the cell
  state and the clips stay float32.

The converter reads the function from a SavedModel written to a
temporary directory, with the frozen copy of the biLM freed first:
converting the live function froze a second in-memory copy of the graph
(peak 4.1 GB at the original size; from disk 3.2 GB, and half the time).

The JSON metadata is stored in the flatbuffer's `metadata` table under
the name `exported_file.METADATA_KEY` (read by
`elmo_core.runtime.LiteRTBiLM`).
"""

import contextlib
import gc
import tempfile

import keras

from elmo_core.errors import KerasElmoError
from elmo_core.errors.backends import require_tensorflow
from elmo_core.files import atomic_output
from elmo_core.files import check_output_file
from elmo_core.files.paths import check_path
from elmo_core.formats.exported_file import LITERT
from elmo_core.formats.exported_file import METADATA_KEY
from elmo_core.formats.exported_file import check_precision
from elmo_core.formats.exported_file import metadata_json
from keras_elmo.export import model_function
from keras_elmo.export import portable
from keras_elmo.export.fused_lstm import fused_choice
from keras_elmo.export.fused_lstm import fused_lstms
from keras_elmo.export.keras_rnns import portable_rnns

# The batch size of a file whose LSTMs are fused: one sentence a call.
FUSED_BATCH = 1


def _import_litert():
    try:
        import flatbuffers
        from ai_edge_litert import schema_py_generated as schema
    except ImportError as error:
        raise KerasElmoError(
            f"LiteRT export needs ai-edge-litert ({error}); install it with: "
            'pip install "keras-elmo[litert]"'
        ) from None
    return flatbuffers, schema


def _converter(module, function, tracing, precision, directory):
    """The TFLite converter, reading `function` (a `tf.function` of
    `module`, traced inside the context `tracing`) from a SavedModel in
    `directory` (written here) rather than from the live function."""
    import tensorflow as tf

    from keras_elmo.layers.backends.tensorflow_recurrence import (
        concatenated_outputs,
    )

    with concatenated_outputs(), tracing:
        function = function.get_concrete_function()
    tf.saved_model.save(
        module, directory, signatures={"serving_default": function}
    )
    converter = tf.lite.TFLiteConverter.from_saved_model(directory)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if precision in ("float16", "int8"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if precision == "float16":
        converter.target_spec.supported_types = [tf.float16]
    return converter


def _packed(flatbuffers, model, size):
    """The bytes of the flatbuffer object `model` (`schema.ModelT`)."""
    builder = flatbuffers.Builder(size)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def unclipped_lstms(flatbuffers, schema, model_bytes):
    """The model with no cell clip on its fused LSTMs: the converter
    writes 10 (`lstm_utils.cc`), which the Keras LSTM and the biLM's plain
    LSTMs it replaces do not have (0 is no clip to the kernel)."""
    model = schema.ModelT.InitFromPackedBuf(model_bytes, 0)
    fused = schema.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM
    codes = [
        max(code.builtinCode, code.deprecatedBuiltinCode)
        for code in model.operatorCodes
    ]
    for subgraph in model.subgraphs:
        for op in subgraph.operators:
            if codes[op.opcodeIndex] == fused:
                op.builtinOptions.cellClip = 0.0
    return _packed(flatbuffers, model, len(model_bytes) + 1024)


def add_metadata(flatbuffers, schema, model_bytes, name, value):
    """The model with `value` (bytes) stored as metadata `name`."""
    import numpy as np

    model = schema.ModelT.InitFromPackedBuf(model_bytes, 0)
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(value, np.uint8)
    model.buffers.append(buffer)
    key = name.encode("utf-8")
    entry = schema.MetadataT()
    entry.name = key
    entry.buffer = len(model.buffers) - 1
    model.metadata = [m for m in model.metadata or [] if m.name != key]
    model.metadata.append(entry)
    return _packed(flatbuffers, model, len(model_bytes) + len(value) + 1024)


def _fused_options(fused):
    """The export options that say whether the LSTMs are fused, and the
    batch size that takes (LiteRT fuses only at a static batch)."""
    return {"fused_lstm": fused, "batch_size": FUSED_BATCH if fused else None}


def _bilm_module(bilm, scalar_mix, fused):
    """The traceable module of a biLM, its function, and its metadata as
    a function of the precision."""
    # No builtin op deduplicates rows (see the module docstring).
    module = portable.CharacterIdModel(
        bilm,
        deduplicate_tokens=False,
        scalar_mix=scalar_mix,
        fmt=LITERT.title,
        batch_size=FUSED_BATCH if fused else None,
    )
    has_mix = module.scalar_mix is not None
    outputs = module.output_names()

    def describe(precision):
        return portable.metadata(
            bilm,
            LITERT,
            precision,
            deduplicate_tokens=False,
            scalar_mix=has_mix,
            outputs=outputs,
            **_fused_options(fused),
        )

    tracing = fused_lstms() if fused else contextlib.nullcontext()
    return module, module.embed, tracing, describe


def _model_module(keras_model, fused):
    """The traceable module of a whole Keras model holding ELMo, its
    function, and its metadata as a function of the precision."""
    module = model_function.ModelFunction(
        keras_model,
        LITERT.title,
        deduplicate_tokens=False,
        batch_size=FUSED_BATCH if fused else None,
    )
    summary = module.summary

    def describe(precision):
        return model_function.metadata(
            summary,
            LITERT,
            precision,
            deduplicate_tokens=False,
            **_fused_options(fused),
        )

    if fused:
        tracing = fused_lstms(module.model, portable_loops=LITERT.title)
    else:
        tracing = portable_rnns(module.model, LITERT.title)
    return module, module.serve, tracing, describe


def to_litert(
    model, path, precision="float32", scalar_mix=None, fused_lstm=None
):
    """Writes `model`, a character-input `keras_elmo.layers.BiLM` or a
    `keras.Model` holding ELMo, as LiteRT to `path`; returns `path`.

    The writer behind `keras_elmo.export.export_litert`, which documents
    the file and the arguments and also takes a biLM source (`path` is
    its `output`).
    """
    require_tensorflow("The LiteRT export", keras.backend.backend())
    check_precision(precision, LITERT)
    whole = model_function.is_whole_model(model, scalar_mix, LITERT.title)
    path = check_output_file(check_path(path, "path"))
    fused = fused_choice(model, fused_lstm, whole, LITERT.title)
    flatbuffers, schema = _import_litert()
    if whole:
        module, function, tracing, describe = _model_module(model, fused)
    else:
        module, function, tracing, describe = _bilm_module(
            model, scalar_mix, fused
        )
    with tempfile.TemporaryDirectory() as directory:
        converter = _converter(module, function, tracing, precision, directory)
        del module, function
        gc.collect()
        flatbuffer = converter.convert()
    if fused:
        flatbuffer = unclipped_lstms(flatbuffers, schema, flatbuffer)
    flatbuffer = add_metadata(
        flatbuffers,
        schema,
        flatbuffer,
        METADATA_KEY,
        metadata_json(describe(precision)).encode("utf-8"),
    )
    with atomic_output(path) as temporary:
        with open(temporary, "wb") as f:
            f.write(flatbuffer)
    return path
