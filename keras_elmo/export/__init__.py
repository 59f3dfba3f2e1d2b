"""Exports of a biLM for serving: a TensorFlow SavedModel that takes raw
text (`export_savedmodel`), and ONNX and LiteRT models over character ids
(`to_onnx`, `to_litert`; run them with `keras_elmo.runtime`)."""

from keras_elmo.export.litert import to_litert
from keras_elmo.export.onnx import to_onnx
from keras_elmo.export.savedmodel import DEFAULT_MAX_BATCH_TOKENS
from keras_elmo.export.savedmodel import ELMoServing
from keras_elmo.export.savedmodel import export_savedmodel
from keras_elmo.export.savedmodel import keras_layer

__all__ = [
    "DEFAULT_MAX_BATCH_TOKENS",
    "ELMoServing",
    "export_savedmodel",
    "keras_layer",
    "to_litert",
    "to_onnx",
]
