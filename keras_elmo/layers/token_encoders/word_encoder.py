"""The word token encoder (bilm-tf's word-input biLM)."""

import keras
import numpy as np
from keras import ops

from elmo_core.errors import KerasElmoError
from elmo_core.errors import WeightFileError
from elmo_core.errors import tensor
from elmo_core.ids.vocabulary import check_vocabulary
from keras_elmo.layers import backends
from keras_elmo.layers.token_encoders.token_encoder import TokenEncoder
from keras_elmo.layers.token_encoders.token_encoder import (
    register_token_encoder,
)


@register_token_encoder
class WordEncoder(TokenEncoder):
    """`token_encoder="words"`: one id a token, looked up in a table of
    `vocabulary_size x projection_dim` (bilm-tf's word-input biLM).

    Ids are vocabulary line + 1: 0 is the padding token (a zero vector and
    a False mask; the table has no row for it), `<S>` is 1 and `</S>` is 2
    (the first two lines of every biLM vocabulary). Inputs `"token_ids"`
    int `(batch, time)`; a token is present if its id is non-zero.
    """

    name = "words"
    input_name = "token_ids"
    needs_vocabulary = True

    def __init__(self, projection_dim, dtype, vocabulary_size=None):
        if vocabulary_size is None or int(vocabulary_size) < 3:
            raise KerasElmoError(
                "A word-input BiLM (token_encoder='words') needs "
                "`vocabulary_size`, the number of vocabulary lines (>= 3: "
                "<S>, </S>, <UNK>, ...).",
                "vocabulary_size",
                received=vocabulary_size,
            )
        super().__init__(projection_dim, dtype)
        self.vocabulary_size = int(vocabulary_size)
        # bilm-tf creates the table with TensorFlow's default initializer.
        self.word_embedding = keras.layers.Embedding(
            self.vocabulary_size,
            projection_dim,
            embeddings_initializer="glorot_uniform",
            dtype=dtype,
            name="word_embedding",
        )

    def layers(self):
        return {"word_embedding": self.word_embedding}

    def config(self):
        return {"vocabulary_size": self.vocabulary_size}

    def build(self):
        self.word_embedding.build((None, None))

    def check(self, ids):
        """`ids`, checked: integers `(batch, time)` in
        `0..vocabulary_size` (eagerly with NumPy, in a graph by assertions
        that the returned tensor depends on)."""
        try:
            dtype = keras.backend.standardize_dtype(ids.dtype)
        except (AttributeError, ValueError):
            dtype = type(ids).__name__
        shape = tuple(getattr(ids, "shape", ()))
        if "int" not in dtype or len(shape) != 2:
            raise KerasElmoError(
                "A word-input BiLM takes token ids: an integer tensor (batch, "
                "time). Build them with elmo_core.ids.Vocabulary(...)."
                "batch_to_ids(sentences), or pass token strings to "
                "ELMoEmbedding with its vocabulary.",
                received=tensor(dtype, shape),
            )
        message = (
            f"token ids must lie in 0..{self.vocabulary_size} (vocabulary "
            "line + 1; 0 is the padding token); found a value outside that "
            "range. Is the vocabulary the one of this biLM?"
        )
        return backends.checked_range(ids, self.vocabulary_size, message)

    def mask(self, ids):
        return ops.not_equal(ids, 0)

    def boundaries(self):
        return np.int32(1), np.int32(2)

    def encode(self, ids):
        """Rows `id - 1` of the table, zeros for id 0: `(..., P)`."""
        ids = ops.cast(ids, "int32")
        x = self.word_embedding(ops.maximum(ids - 1, 0))
        # expand_dims, not [..., None]: a strided slice with a new axis is
        # no builtin LiteRT op (the export of a model holding this biLM).
        present = ops.cast(ops.not_equal(ids, 0), x.dtype)
        return x * ops.expand_dims(present, -1)

    def batch_to_inputs(self, sentences, vocabulary=None):
        return check_vocabulary(vocabulary, self).batch_to_ids(sentences)

    def tokens_to_inputs(self, tokens, table=None, sequence_length=None):
        from keras_elmo.data.word_ids import tokens_to_word_ids

        return tokens_to_word_ids(tokens, table, sequence_length)


def check_bilm_vocabulary(encoder, vocabulary, where):
    """`check_vocabulary` of the `vocabulary=` given with a loaded biLM:
    refused for a biLM that reads any token; errors name `where` (its
    files) as `WeightFileError`s."""
    if not encoder.needs_vocabulary:
        raise WeightFileError(
            f"`vocabulary` is for word-input biLMs; the biLM of {where} "
            f"reads {encoder.name} and takes any word. Drop it.",
            "vocabulary",
        )
    try:
        return check_vocabulary(vocabulary, encoder)
    except KerasElmoError as e:
        raise e.within(where, WeightFileError) from None
