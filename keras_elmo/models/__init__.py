"""The trainable ELMo language model, and the student of a distillation.

The names load on first use, so that the TensorFlow-free module here
(`keras_elmo.models.layer_losses`, which `keras-elmo distill --help`
reads) imports without TensorFlow.
"""

from keras_elmo.utils.lazy import lazy_exports

# Public name -> the module that defines it.
_EXPORTS = {
    "DistilledLanguageModel": "keras_elmo.models.distilled_language_model",
    "ELMoLanguageModel": "keras_elmo.models.elmo_language_model",
}

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

__all__ = sorted(_EXPORTS)
