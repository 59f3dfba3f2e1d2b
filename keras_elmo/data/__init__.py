"""Character ids, vocabularies and tf.data pipelines."""

from keras_elmo.data.character_ids import batch_to_ids
from keras_elmo.data.character_ids import tokens_to_char_ids
from keras_elmo.data.datasets import lm_dataset
from keras_elmo.data.datasets import resolve_files
from keras_elmo.data.datasets import scan_corpus
from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.data.vocabulary import tokens_to_word_ids

__all__ = [
    "Vocabulary",
    "batch_to_ids",
    "lm_dataset",
    "resolve_files",
    "scan_corpus",
    "tokens_to_char_ids",
    "tokens_to_word_ids",
]
