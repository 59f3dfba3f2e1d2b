"""Exports, each from any biLM source (a path, a name, a URL) or the
object itself: a trained run as the official files (`export_weights`);
a biLM as a TensorFlow SavedModel that takes raw text
(`export_savedmodel`); a biLM as ONNX and LiteRT models over character
ids, or a whole Keras model holding ELMo (a tagger around
`ELMoEmbedding`) as ONNX and LiteRT models of its inputs (`export_onnx`,
`export_litert`; run them with `elmo_core.runtime`, which takes the
words). The `keras-elmo export-*` commands run these functions. Keras's
own `model.export(format="onnx" | "litert")` refuses such a model and
names these (`keras_elmo.layers.keras_export`).
TensorFlow programs all: importing this package imports TensorFlow
(`import keras_elmo` does not).
"""

from elmo_core.formats.savedmodel_limits import DEFAULT_MAX_BATCH_TOKENS
from keras_elmo.export.deploy import export_litert
from keras_elmo.export.deploy import export_onnx
from keras_elmo.export.elmo_serving import ELMoServing

# The writers of an object that `export_litert` and `export_onnx` run, under
# the names they were public by (kept for the code that calls them).
from keras_elmo.export.litert import to_litert as to_litert
from keras_elmo.export.onnx import to_onnx as to_onnx
from keras_elmo.export.run_weights import export_weights
from keras_elmo.export.savedmodel import export_savedmodel
from keras_elmo.export.savedmodel import keras_layer
from keras_elmo.layers.saved_model_layer import SavedModelLayer

__all__ = [
    "DEFAULT_MAX_BATCH_TOKENS",
    "ELMoServing",
    "SavedModelLayer",
    "export_litert",
    "export_onnx",
    "export_savedmodel",
    "export_weights",
    "keras_layer",
]
