"""Character ids, vocabularies and tf.data pipelines."""

from keras_elmo.data.character_ids import batch_to_ids
from keras_elmo.data.character_ids import tokens_to_char_ids

__all__ = ["batch_to_ids", "tokens_to_char_ids"]
