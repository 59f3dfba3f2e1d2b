"""Keras's own `model.export(format="onnx" | "litert")` refused, clearly,
for a model holding ELMo: the files it writes would not run.

Tried with the bilm-tf fixture (Keras 3.15, TensorFlow 2.21): the ONNX
file is written with a log line only (tf2onnx converts neither the string
ops that turn tokens into ids nor the distinct-token deduplication,
`UniqueV2`), and ONNX Runtime refuses it; the LiteRT file needs
TensorFlow Select ops (strings, `TensorList*`, `UniqueV2`) that the
`ai-edge-litert` runtime does not have. `keras_elmo.export.export_onnx(
model, ...)` and `export_litert(model, ...)` export such a model so that
it runs.

Keras traces a model's layers from inside its exporter, and no layer hook
says which format it writes, so `ELMoEmbedding` and `BiLM` call
`refuse_keras_export` at each call: it looks up the Python call stack for
the Keras module of either exporter and raises before any file is
written. `format="tf_saved_model"` works and is not refused.
"""

import sys

from elmo_core.errors import KerasElmoError

# The modules of Keras's exporters that write unrunnable files with ELMo
# inside -> the format name (`model.export(format=...)`).
_KERAS_EXPORTERS = {
    "keras.src.export.onnx": "onnx",
    "keras.src.export.litert": "litert",
}
_WHY = {
    "onnx": "tf2onnx converts neither its string-to-id ops nor its "
    "distinct-token deduplication (UniqueV2), so ONNX Runtime refuses the "
    "file",
    "litert": "it would need TensorFlow Select ops (strings, TensorList, "
    "UniqueV2) that the LiteRT runtime does not have",
}


def keras_export_format(frame):
    """The format of the Keras exporter that `frame` (a Python frame)
    runs inside, or None."""
    while frame is not None:
        found = _KERAS_EXPORTERS.get(frame.f_globals.get("__name__"))
        if found is not None:
            return found
        frame = frame.f_back
    return None


def refuse_keras_export(layer):
    """Raises `KerasElmoError` when `layer` is being called by Keras's own
    ONNX or LiteRT export; does nothing otherwise."""
    fmt = keras_export_format(sys._getframe(1))
    if fmt is None:
        return
    raise KerasElmoError(
        f"Keras's model.export(format={fmt!r}) cannot export a model "
        f"holding {type(layer).__name__} {layer.name!r}: {_WHY[fmt]}. Export "
        f"it with keras_elmo.export.export_{fmt}(model, path), which writes "
        "a file that runs (builtin ops, int8 too), and run it with "
        "elmo_core.runtime."
    )
