"""The trainable ELMo language model, and the student of a distillation
(their training runs on TensorFlow: the sampled softmax, `tf.data`)."""

from keras_elmo.models.distilled_language_model import DistilledLanguageModel
from keras_elmo.models.elmo_language_model import ELMoLanguageModel

__all__ = ["DistilledLanguageModel", "ELMoLanguageModel"]
