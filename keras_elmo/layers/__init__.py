"""The ELMo Keras layers."""

from keras_elmo.layers.bilm import BiLM
from keras_elmo.layers.char_cnn import CharCNN
from keras_elmo.layers.elmo_embedding import ELMoEmbedding
from keras_elmo.layers.highway import Highway
from keras_elmo.layers.projected_lstm import ProjectedLSTM
from keras_elmo.layers.scalar_mix import ScalarMix

__all__ = [
    "BiLM",
    "CharCNN",
    "ELMoEmbedding",
    "Highway",
    "ProjectedLSTM",
    "ScalarMix",
]
