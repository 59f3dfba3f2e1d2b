"""The trainable ELMo language model."""

from keras_elmo.models.elmo_language_model import ELMoLanguageModel

__all__ = ["ELMoLanguageModel"]
