"""The ELMo Keras layers.

The names load on first use, so that the TensorFlow-free modules here
(`keras_elmo.layers.bilm_size`, the size arithmetic that the command
line's `--help` and the weight readers use) import without TensorFlow.
"""

import importlib

# Public name -> the module that defines it.
_EXPORTS = {
    "BiLM": "keras_elmo.layers.bilm",
    "CharCNN": "keras_elmo.layers.char_cnn",
    "ELMoEmbedding": "keras_elmo.layers.elmo_embedding",
    "Highway": "keras_elmo.layers.highway",
    "ProjectedLSTM": "keras_elmo.layers.projected_lstm",
    "ScalarMix": "keras_elmo.layers.scalar_mix",
}


def register_serializables():
    """Imports every layer module, so that Keras finds each class by its
    registered name (`keras_elmo>BiLM`) when it loads a `.keras` file."""
    for module in sorted(set(_EXPORTS.values())):
        importlib.import_module(module)


def __getattr__(name):
    if name in _EXPORTS:
        register_serializables()  # one name loads them all, as before
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(
        f"module 'keras_elmo.layers' has no attribute {name!r}"
    )


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = sorted(_EXPORTS)
