"""Run exported biLMs and models without TensorFlow: ONNX Runtime and
LiteRT.

`ONNXBiLM` runs a biLM's file from `keras_elmo.export.export_onnx` (or
`keras-elmo export-onnx`), `LiteRTBiLM` one from `export_litert`
(`keras-elmo export-litert`). Both take token lists (or character ids from
`batch_to_ids`) and return the dict of `keras_elmo.layers.BiLM`, as NumPy
arrays. `ONNXModel` and `LiteRTModel` run the file of a whole Keras model
holding ELMo (a tagger: `export_onnx(model, ...)`, `keras-elmo export-onnx
--model tagger.keras`): they take the model's inputs by name, token lists
where the model took string tokens, and return its outputs. This package
imports neither TensorFlow nor Keras: it needs NumPy and the runtime (`pip
install "keras-elmo[onnx]"` or `"keras-elmo[litert]"`).

Example (with a file exported earlier):

    from elmo_core.runtime import ONNXBiLM
    bilm = ONNXBiLM("elmo-int8.onnx")
    out = bilm([["The", "cat", "sat"], ["Hello"]])
    out["layer_outputs"][2].shape   # (2, 3, 2 * projection_dim)
"""

from elmo_core.characters import batch_to_ids
from elmo_core.runtime.litert import LiteRTBiLM
from elmo_core.runtime.litert_model import LiteRTModel
from elmo_core.runtime.onnx import ONNXBiLM
from elmo_core.runtime.onnx_model import ONNXModel

__all__ = ["LiteRTBiLM", "LiteRTModel", "ONNXBiLM", "ONNXModel", "batch_to_ids"]
