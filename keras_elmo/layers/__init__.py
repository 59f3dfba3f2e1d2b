"""The ELMo Keras layers: `BiLM` (a char CNN or word table, highway
layers and projected LSTMs in both directions), its parts `CharCNN`,
`Highway` and `ProjectedLSTM`, `ScalarMix`, `ELMoEmbedding` (a biLM and
its mixes in one layer) and `SavedModelLayer` (an exported SavedModel as
a layer). They run on TensorFlow, JAX and PyTorch; what differs per
backend is `backends/`, the token encoders of a `BiLM` are
`token_encoders/`."""

from keras_elmo.layers.bilm import BiLM
from keras_elmo.layers.char_cnn import CharCNN
from keras_elmo.layers.elmo_embedding import ELMoEmbedding
from keras_elmo.layers.highway import Highway
from keras_elmo.layers.projected_lstm import ProjectedLSTM
from keras_elmo.layers.saved_model_layer import SavedModelLayer
from keras_elmo.layers.scalar_mix import ScalarMix

__all__ = [
    "BiLM",
    "CharCNN",
    "ELMoEmbedding",
    "Highway",
    "ProjectedLSTM",
    "SavedModelLayer",
    "ScalarMix",
]
