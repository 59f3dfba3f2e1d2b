"""Exports for serving: a biLM as a TensorFlow SavedModel that takes raw
text (`export_savedmodel`); a biLM as ONNX and LiteRT models over
character ids, or a whole Keras model holding ELMo (a tagger around
`ELMoEmbedding`) as ONNX and LiteRT models of its inputs (`to_onnx`,
`to_litert`; run them with `keras_elmo.runtime`, which takes the words).
Keras's own `model.export(format="onnx" | "litert")` refuses such a model
and names these (`keras_elmo.layers.keras_export`).

The names load on first use, so that `keras_elmo.export.choices` (the
precisions and limits that `--help` shows) imports without TensorFlow.
"""

from keras_elmo.utils.lazy import lazy_exports

# Public name -> the module that defines it.
_EXPORTS = {
    "DEFAULT_MAX_BATCH_TOKENS": "keras_elmo.export.choices",
    "ELMoServing": "keras_elmo.export.savedmodel",
    "SavedModelLayer": "keras_elmo.export.saved_model_layer",
    "export_savedmodel": "keras_elmo.export.savedmodel",
    "keras_layer": "keras_elmo.export.savedmodel",
    "to_litert": "keras_elmo.export.litert",
    "to_onnx": "keras_elmo.export.onnx",
}


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

__all__ = sorted(_EXPORTS)
