"""Exports for serving: a biLM as a TensorFlow SavedModel that takes raw
text (`export_savedmodel`); a biLM as ONNX and LiteRT models over
character ids, or a whole Keras model holding ELMo (a tagger around
`ELMoEmbedding`) as ONNX and LiteRT models of its inputs (`to_onnx`,
`to_litert`; run them with `elmo_core.runtime`, which takes the words).
Keras's own `model.export(format="onnx" | "litert")` refuses such a model
and names these (`keras_elmo.layers.keras_export`).
TensorFlow programs all: importing this package imports TensorFlow
(`import keras_elmo` does not).
"""

from elmo_core.formats.savedmodel_limits import DEFAULT_MAX_BATCH_TOKENS
from keras_elmo.export.litert import to_litert
from keras_elmo.export.onnx import to_onnx
from keras_elmo.export.savedmodel import ELMoServing
from keras_elmo.export.savedmodel import export_savedmodel
from keras_elmo.export.savedmodel import keras_layer
from keras_elmo.layers.saved_model_layer import SavedModelLayer

__all__ = [
    "DEFAULT_MAX_BATCH_TOKENS",
    "ELMoServing",
    "SavedModelLayer",
    "export_savedmodel",
    "keras_layer",
    "to_litert",
    "to_onnx",
]
