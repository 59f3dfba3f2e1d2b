"""Input checks shared by the layers: their arguments, the shapes they
are built for, and the character ids they take.

User mistakes must surface as a message that says what is expected and
what was received, not as an error from deep inside a gather or a matmul.
"""

import keras
import numpy as np

from elmo_core.characters import MAX_CHARACTER_ID
from elmo_core.errors import KerasElmoError
from elmo_core.errors import tensor
from keras_elmo.layers import backends


def keras_initializer(value, argument):
    """`keras.initializers.get(value)`, or `KerasElmoError` naming
    `argument` for what is no initializer."""
    try:
        return keras.initializers.get(value)
    except (ValueError, TypeError) as error:
        raise KerasElmoError(
            f"`{argument}` must be a Keras initializer (an object, its name "
            f"or its config): {error}",
            argument,
            received=value,
        ) from None


def keras_layer_config(value, argument):
    """The layer a serialized config `value` describes, or
    `KerasElmoError` naming `argument` for a config Keras cannot read."""
    try:
        return keras.saving.deserialize_keras_object(value)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise KerasElmoError(
            f"`{argument}` is a dict but not the config of a layer Keras "
            f"can rebuild ({error}).",
            argument,
            received=value,
        ) from None


def known_last_dimension(input_shape, message):
    """The last dimension of `input_shape`, which a layer's weights are
    sized by; `KerasElmoError` with `message` when it is unknown."""
    dim = input_shape[-1]
    if dim is None:
        raise KerasElmoError(
            message, "input_shape", received=tuple(input_shape)
        )
    return dim


def _range_message(argument, max_id=MAX_CHARACTER_ID):
    return (
        f"`{argument}`: character ids must lie in 0..{max_id} (0 is "
        "the padding token); found a value outside that range. Build the ids "
        "with keras_elmo.batch_to_ids or keras_elmo.data.tokens_to_char_ids."
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
    range is checked by `backends.checked_range`: at once where the values
    are known, else by an in-graph assertion the returned tensor depends
    on. Use the returned tensor, not `ids`.
    """
    try:
        dtype = keras.backend.standardize_dtype(ids.dtype)
    except (AttributeError, ValueError):
        dtype = type(ids).__name__
    shape = tuple(getattr(ids, "shape", ()))
    if "int" not in dtype:
        raise KerasElmoError(
            f"`{argument}`: character ids must be an integer tensor (int32 "
            "or int64). Build them with keras_elmo.batch_to_ids or "
            "keras_elmo.data.tokens_to_char_ids, or pass token strings to "
            "ELMoEmbedding.",
            argument,
            received=tensor(dtype, shape),
        )
    wrong_rank = len(shape) < 2 if rank is None else len(shape) != rank
    if wrong_rank or shape[-1] != max_characters_per_token:
        raise KerasElmoError(
            f"`{argument}`: character ids must have shape (batch, time, "
            f"{max_characters_per_token}). Each token is "
            f"{max_characters_per_token} character ids; "
            "keras_elmo.batch_to_ids(list_of_token_lists) builds them.",
            argument,
            received=tensor(dtype, shape),
        )
    return backends.checked_range(ids, max_id, _range_message(argument, max_id))


def check_batch_structure(inputs, layer_name, argument="inputs"):
    """Rejects None and nested Python lists (ragged batches) clearly."""
    if inputs is None:
        raise KerasElmoError(
            f"{layer_name} takes as `{argument}` token strings (batch, time) "
            "or character ids (batch, time, 50).",
            argument,
            received=inputs,
        )
    if isinstance(inputs, (list, tuple)):
        try:
            array = np.asarray(inputs)
        except ValueError:
            array = None  # ragged
        if array is not None and array.dtype.kind in "US":
            raise KerasElmoError(
                f"{layer_name} takes token strings as a tf.string tensor "
                f"(batch, time), '' for padding, not a Python list as "
                f"`{argument}`. Wrap it: tf.constant({argument}).",
                argument,
                received=inputs,
            )
        if array is not None and array.dtype.kind in "iu":
            # Keras takes tensors and arrays only, and would blame the
            # first number of the list.
            raise KerasElmoError(
                f"{layer_name} takes character ids as a tensor or NumPy "
                f"array (batch, time, 50), not a Python list as `{argument}`. "
                f"Wrap it: np.asarray({argument}, 'int32'), or build the ids "
                "with keras_elmo.batch_to_ids(list_of_token_lists).",
                argument,
                received=inputs,
            )
        raise KerasElmoError(
            f"{layer_name} takes no Python list as `{argument}` that is not a "
            "rectangular array of integers (a ragged batch?). Pad it first: "
            "keras_elmo.batch_to_ids(list_of_token_lists) returns a "
            "zero-padded (batch, time, 50) array, or pass a tf.RaggedTensor.",
            argument,
            received=inputs,
        )
