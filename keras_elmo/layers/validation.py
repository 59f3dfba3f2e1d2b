"""Input checks shared by the layers that take character ids.

User mistakes must surface as a message that says what was received and what
was expected, not as an error from deep inside a gather or a matmul.
"""

import keras
import numpy as np
import tensorflow as tf

MAX_CHARACTER_ID = 261


def check_character_ids(ids, max_characters_per_token):
    """Checks the dtype, last dimension and value range of character ids.

    Static properties raise `ValueError` at once. The value range is checked
    with NumPy in eager mode and with an in-graph assertion (same message)
    when traced, since `keras.ops` has no runtime assertion.
    """
    try:
        dtype = keras.backend.standardize_dtype(ids.dtype)
    except (AttributeError, ValueError):
        dtype = type(ids).__name__
    if "int" not in dtype:
        raise ValueError(
            "Character ids must be an integer tensor (int32 or int64); "
            f"received dtype {dtype}. Build them with keras_elmo.batch_to_ids "
            "or keras_elmo.tokens_to_char_ids, or pass token strings to "
            "ELMoEmbedding."
        )
    shape = tuple(ids.shape)
    if len(shape) < 2 or shape[-1] != max_characters_per_token:
        raise ValueError(
            "Character ids must have shape (batch, time, "
            f"{max_characters_per_token}); received shape {shape}. Each "
            f"token is {max_characters_per_token} character ids; use "
            "keras_elmo.batch_to_ids to build them."
        )
    message = (
        f"Character ids must lie in 0..{MAX_CHARACTER_ID} (0 is the padding "
        "token); found a value outside that range. Build the ids with "
        "keras_elmo.batch_to_ids or keras_elmo.tokens_to_char_ids."
    )
    if tf.executing_eagerly() and not isinstance(ids, tf.Variable):
        values = np.asarray(ids)
        if values.size and (
            values.min() < 0 or values.max() > MAX_CHARACTER_ID
        ):
            raise ValueError(
                f"{message} Received min {values.min()}, max {values.max()}."
            )
        return
    tf.debugging.assert_greater_equal(
        ids, tf.constant(0, ids.dtype), message=message
    )
    tf.debugging.assert_less_equal(
        ids, tf.constant(MAX_CHARACTER_ID, ids.dtype), message=message
    )


def check_batch_structure(inputs, layer_name):
    """Rejects nested Python lists (ragged batches) with a clear message."""
    if isinstance(inputs, (list, tuple)):
        try:
            np.asarray(inputs, dtype="int64")
        except (ValueError, TypeError):
            raise ValueError(
                f"{layer_name} received a Python list that is not a "
                "rectangular array (a ragged batch?). Pad it first: "
                "keras_elmo.batch_to_ids(list_of_token_lists) returns a "
                "zero-padded (batch, time, 50) array, or pass a "
                "tf.RaggedTensor."
            ) from None
