"""Which positions of a string token tensor hold tokens, in the graph."""

import tensorflow as tf


def token_positions(tokens, sequence_length=None):
    """Boolean `(batch, time)`: the positions of the `tf.string` tensor
    `tokens` `(batch, time)` that hold a token: those before
    `sequence_length` (int `(batch,)`, an empty string there included),
    else the non-empty strings.

    >>> from keras_elmo.data.token_positions import token_positions
    >>> tokens = tf.constant([["a", "", "b"], ["c", "", ""]])
    >>> token_positions(tokens).numpy().tolist()
    [[True, False, True], [True, False, False]]
    >>> token_positions(tokens, tf.constant([2, 1])).numpy().tolist()
    [[True, True, False], [True, False, False]]
    """
    if sequence_length is None:
        return tf.not_equal(tokens, "")
    positions = tf.range(tf.shape(tokens)[1])
    sequence_length = tf.cast(sequence_length, "int32")
    return positions[None, :] < sequence_length[:, None]
