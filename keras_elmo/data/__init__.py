"""Character ids, vocabularies and tf.data pipelines.

The names load on first use, so that the TensorFlow-free modules here
(`keras_elmo.data.text`) import without TensorFlow: the command line's
`--help` reads their facts.
"""

from keras_elmo.utils.lazy import lazy_exports

# Public name -> the module that defines it.
_EXPORTS = {
    "TokenBatcher": "keras_elmo.data.host_ids",
    "Vocabulary": "keras_elmo.data.vocabulary",
    "batch_to_ids": "keras_elmo.data.character_ids",
    "lm_dataset": "keras_elmo.data.datasets",
    "resolve_files": "keras_elmo.data.file_patterns",
    "scan_corpus": "keras_elmo.data.datasets",
    "tokenizer": "keras_elmo.data.tokenizers",
    "tokens_to_char_ids": "keras_elmo.data.character_ids",
    "tokens_to_word_ids": "keras_elmo.data.vocabulary",
}


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

__all__ = sorted(_EXPORTS)
