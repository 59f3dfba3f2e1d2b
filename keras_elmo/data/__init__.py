"""Tokens to ids and batches inside TensorFlow: character ids of string
tokens (`character_ids`), ELMoForManyLangs' ids (`elmo_for_many_langs_ids`),
word ids (`word_ids`), which positions hold tokens (`token_positions`),
and the `tf.data` pipelines of training: sentences (`datasets`) and
windows of continuous text (`windows`). Importing this package imports
TensorFlow (`import keras_elmo` does not).

The same rules on the host, with NumPy (`TokenBatcher`, `Vocabulary`,
`batch_to_ids`), and the readers of text files are `elmo_core`; they are
named here too, where earlier versions had them.
"""

from elmo_core.characters import batch_to_ids
from elmo_core.ids.host_ids import TokenBatcher
from elmo_core.ids.vocabulary import Vocabulary
from elmo_core.text.patterns import resolve_files
from elmo_core.text.tokenizers import tokenizer
from keras_elmo.data.character_ids import tokens_to_char_ids
from keras_elmo.data.datasets import lm_dataset
from keras_elmo.data.datasets import scan_corpus
from keras_elmo.data.word_ids import lookup_table
from keras_elmo.data.word_ids import tokens_to_word_ids

__all__ = [
    "TokenBatcher",
    "Vocabulary",
    "batch_to_ids",
    "lm_dataset",
    "lookup_table",
    "resolve_files",
    "scan_corpus",
    "tokenizer",
    "tokens_to_char_ids",
    "tokens_to_word_ids",
]
