"""Word ids in the graph: a vocabulary's lookup table and the ids of a
word-input biLM's string tokens (`elmo_core.ids.vocabulary` holds the
vocabulary itself)."""

import tensorflow as tf

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_instance
from elmo_core.errors import tensor
from elmo_core.ids.vocabulary import Vocabulary
from keras_elmo.data.character_ids import as_tensor
from keras_elmo.data.token_positions import token_positions


def lookup_table(vocabulary):
    """A `tf.lookup.StaticHashTable` from a `Vocabulary`'s tokens to their
    lines (`<UNK>` for any other token).

    Example:

    >>> from keras_elmo import data
    >>> table = data.lookup_table(data.Vocabulary(["<S>", "</S>", "<UNK>"]))
    >>> table.lookup(tf.constant(["</S>", "zebra"])).numpy().tolist()
    [1, 2]
    """
    if not isinstance(vocabulary, Vocabulary):
        raise KerasElmoError(
            "`vocabulary` must be a Vocabulary (elmo_core.ids.Vocabulary).",
            "vocabulary",
            received=vocabulary,
        )
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(vocabulary.tokens),
            tf.range(len(vocabulary.tokens), dtype=tf.int32),
        ),
        default_value=vocabulary.unk_id,
    )


def tokens_to_word_ids(tokens, table, sequence_length=None):
    """In-graph input ids of a word-input biLM (as `Vocabulary.batch_to_ids`).

    Args:
        tokens: `tf.string` tensor `(batch, time)`; `""` marks padding unless
            `sequence_length` is given.
        table: `lookup_table(vocabulary)` (token -> line, `<UNK>` default).
        sequence_length: optional int tensor `(batch,)`: positions at or
            past it are padding, earlier ones real tokens even when empty.

    Returns:
        int32 tensor `(batch, time)`: line + 1, 0 at padding.

    Example:

    >>> from keras_elmo import data
    >>> vocabulary = data.Vocabulary(["<S>", "</S>", "<UNK>", "the"])
    >>> data.tokens_to_word_ids(
    ...     tf.constant([["the", "zebra", ""]]), data.lookup_table(vocabulary)
    ... ).numpy().tolist()
    [[4, 3, 0]]
    """
    tokens = as_tensor(tokens, "tokens")
    if tokens.dtype != tf.string or tokens.shape.rank != 2:
        raise KerasElmoError(
            "`tokens` must be a tf.string tensor (batch, time).",
            "tokens",
            received=tensor(tokens.dtype.name, tokens.shape),
        )
    check_instance(
        table,
        tf.lookup.StaticHashTable,
        "table",
        expected="a vocabulary's lookup table (keras_elmo.data.lookup_table)",
    )
    if sequence_length is not None:
        sequence_length = as_tensor(sequence_length, "sequence_length", "int32")
        if sequence_length.shape.rank != 1:
            raise KerasElmoError(
                "`sequence_length` must be int (batch,).",
                "sequence_length",
                received=tensor(
                    sequence_length.dtype.name, sequence_length.shape
                ),
            )
    is_token = token_positions(tokens, sequence_length)
    ids = tf.cast(table.lookup(tokens), "int32") + 1
    return tf.where(is_token, ids, 0)
