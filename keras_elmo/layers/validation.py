"""Input checks shared by the layers that take character ids.

User mistakes must surface as a message that says what was received and what
was expected, not as an error from deep inside a gather or a matmul.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_elmo.characters import MAX_CHARACTER_ID
from keras_elmo.errors import KerasElmoError


def _range_message(argument, max_id=MAX_CHARACTER_ID):
    return (
        f"{argument}: character ids must lie in 0..{max_id} (0 is "
        "the padding token); found a value outside that range. Build the ids "
        "with keras_elmo.batch_to_ids or keras_elmo.tokens_to_char_ids."
    )


def check_character_ids(
    ids,
    max_characters_per_token,
    argument="inputs",
    rank=3,
    max_id=MAX_CHARACTER_ID,
):
    """Checks character ids and returns them, guarded by the check.

    Static properties (dtype, rank, last dimension) raise `KerasElmoError`
    at once; `rank` None accepts any leading shape `(..., 50)`. The value
    range is checked with NumPy in eager mode; in a graph the returned
    tensor depends on the in-graph assertion (same message), so whatever
    consumes it (the embedding lookup) cannot run before the check has
    passed. Use the returned tensor, not `ids`.
    """
    try:
        dtype = keras.backend.standardize_dtype(ids.dtype)
    except (AttributeError, ValueError):
        dtype = type(ids).__name__
    if "int" not in dtype:
        raise KerasElmoError(
            f"{argument}: character ids must be an integer tensor (int32 or "
            f"int64); received dtype {dtype}. Build them with "
            "keras_elmo.batch_to_ids or keras_elmo.tokens_to_char_ids, or "
            "pass token strings to ELMoEmbedding."
        )
    shape = tuple(ids.shape)
    wrong_rank = len(shape) < 2 if rank is None else len(shape) != rank
    if wrong_rank or shape[-1] != max_characters_per_token:
        raise KerasElmoError(
            f"{argument}: character ids must have shape (batch, time, "
            f"{max_characters_per_token}); received shape {shape} "
            f"(rank {len(shape)}). Each token is {max_characters_per_token} "
            "character ids; keras_elmo.batch_to_ids(list_of_token_lists) "
            "builds them."
        )
    message = _range_message(argument, max_id)
    values = host_values(ids)
    if values is not None:
        if values.size and (values.min() < 0 or values.max() > max_id):
            raise KerasElmoError(
                f"{message} Received min {values.min()}, max {values.max()}."
            )
        return ids
    if keras.backend.backend() != "tensorflow":
        return ids  # traced by jax.jit: no value to check (see host_values)
    return guard_character_range(ids, message, max_id)


def host_values(ids):
    """The values of `ids` as a NumPy array, or None inside a traced graph.

    On TensorFlow that is eager mode (a `tf.function` checks with in-graph
    assertions instead, `guard_character_range`); on PyTorch always; on JAX
    outside `jax.jit`. A jitted JAX program has no values to look at and
    no assertions: there the ids go unchecked (an out-of-range id reads a
    clamped row), so check them before the jitted call.
    """
    name = keras.backend.backend()
    if name == "tensorflow":
        if tf.executing_eagerly() and not isinstance(ids, tf.Variable):
            return np.asarray(ids)
        return None
    if name == "jax":
        import jax

        if isinstance(ids, jax.core.Tracer):
            return None
    if isinstance(ids, keras.Variable):
        ids = ids.value
    return keras.ops.convert_to_numpy(ids)


def guard_character_range(ids, message=None, max_id=MAX_CHARACTER_ID):
    """`ids`, as a tensor that exists only once their range was checked.

    The assertions are control dependencies of the returned identity, so
    every op reading it runs after them (a plain assert beside a gather
    races with it, and on a GPU an out-of-range gather returns zeros).
    """
    ids = tf.convert_to_tensor(ids)
    message = message or _range_message("character ids", max_id)
    checks = [
        tf.debugging.assert_greater_equal(
            ids, tf.constant(0, ids.dtype), message=message
        ),
        tf.debugging.assert_less_equal(
            ids, tf.constant(max_id, ids.dtype), message=message
        ),
    ]
    with tf.control_dependencies(checks):
        return tf.identity(ids)


def check_batch_structure(inputs, layer_name, argument="inputs"):
    """Rejects None and nested Python lists (ragged batches) clearly."""
    if inputs is None:
        raise KerasElmoError(
            f"{layer_name} received None as `{argument}`; expected token "
            "strings (batch, time) or character ids (batch, time, 50)."
        )
    if isinstance(inputs, (list, tuple)):
        try:
            array = np.asarray(inputs)
        except ValueError:
            array = None  # ragged
        if array is not None and array.dtype.kind in "US":
            raise KerasElmoError(
                f"{layer_name} received a Python list of strings as "
                f"`{argument}` (shape {array.shape}); expected a tf.string "
                "tensor (batch, time), '' for padding. Wrap it: "
                f"tf.constant({_preview(inputs)})."
            )
        if array is not None and array.dtype.kind in "iu":
            # Keras takes tensors and arrays only, and would blame the
            # first number of the list.
            raise KerasElmoError(
                f"{layer_name} received a Python list as `{argument}` "
                f"(shape {array.shape}); expected a tensor or NumPy array "
                "of character ids (batch, time, 50). Wrap it: "
                f"np.asarray({argument}, 'int32'), or build the ids with "
                "keras_elmo.batch_to_ids(list_of_token_lists)."
            )
        raise KerasElmoError(
            f"{layer_name} received a Python list as `{argument}` that "
            "is not a rectangular array of integers (a ragged batch?). "
            "Pad it first: keras_elmo.batch_to_ids(list_of_token_lists) "
            "returns a zero-padded (batch, time, 50) array, or pass a "
            "tf.RaggedTensor."
        )


def _preview(inputs):
    text = repr(inputs)
    return text if len(text) <= 60 else text[:57] + "..."
