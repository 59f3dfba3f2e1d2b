"""The ELMo Keras layers.

The names load on first use, so that the TensorFlow-free modules here
(`keras_elmo.layers.bilm_size`, the size arithmetic that the command
line's `--help` and the weight readers use) import without TensorFlow.
"""

from keras_elmo.utils.lazy import lazy_exports

# Public name -> the module that defines it.
_EXPORTS = {
    "BiLM": "keras_elmo.layers.bilm",
    "CharCNN": "keras_elmo.layers.char_cnn",
    "ELMoEmbedding": "keras_elmo.layers.elmo_embedding",
    "Highway": "keras_elmo.layers.highway",
    "ProjectedLSTM": "keras_elmo.layers.projected_lstm",
    "ScalarMix": "keras_elmo.layers.scalar_mix",
}

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

__all__ = sorted(_EXPORTS)
