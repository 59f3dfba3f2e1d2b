"""Tokens to ELMo character ids in the graph (SPEC §2-3).

`tokens_to_char_ids` follows the rules of `elmo_core.characters` (where the
NumPy `batch_to_ids` and every character-id fact live) and is tested
against it.
"""

import tensorflow as tf

from elmo_core.characters import BOS_CHARACTER_IDS
from elmo_core.characters import BOS_TOKEN
from elmo_core.characters import BOW_CHAR
from elmo_core.characters import EOS_CHARACTER_IDS
from elmo_core.characters import EOS_TOKEN
from elmo_core.characters import EOW_CHAR
from elmo_core.characters import MAX_CHARACTERS_PER_TOKEN
from elmo_core.characters import MAX_TOKEN_BYTES
from elmo_core.characters import NUM_CHARACTER_IDS
from elmo_core.characters import PAD_CHAR
from elmo_core.characters import batch_to_ids
from elmo_core.errors import KerasElmoError
from elmo_core.errors import tensor
from keras_elmo.data.token_positions import token_positions

__all__ = [
    "BOS_CHARACTER_IDS",
    "EOS_CHARACTER_IDS",
    "MAX_CHARACTERS_PER_TOKEN",
    "NUM_CHARACTER_IDS",
    "batch_to_ids",
    "tokens_to_char_ids",
]


def tokens_to_char_ids(tokens, sequence_length=None):
    """Converts a string tensor of tokens to character ids, in the graph.

    Usable in `tf.data.Dataset.map`, in a `tf.function` and in a SavedModel.
    Gives the same ids as `keras_elmo.batch_to_ids`.

    Args:
        tokens: `tf.string` tensor of any rank (typically `(batch, time)`),
            or a `tf.RaggedTensor` of strings. In a dense tensor the empty
            string marks a padding position unless `sequence_length` is
            given; in a ragged tensor every element is a real token, the
            empty string included.
        sequence_length: optional int tensor `(batch,)` for a dense
            `(batch, time)` input: positions `>= sequence_length` are padding,
            positions before it are real tokens even when empty.

    Returns:
        int32 tensor `tokens.shape + (50,)`. For ragged input, a dense tensor
        padded with rows of zeros.

    Example:

    >>> ids = keras_elmo.data.tokens_to_char_ids(tf.constant([["Hi", ""]]))
    >>> ids.shape, ids[0, 0, :4].numpy().tolist(), int(tf.reduce_max(ids[0, 1]))
    (TensorShape([1, 2, 50]), [259, 73, 106, 260], 0)
    >>> bool((ids.numpy()[:, :1] == keras_elmo.batch_to_ids([["Hi"]])).all())
    True
    """
    if isinstance(tokens, tf.RaggedTensor):
        ids = tf.ragged.map_flat_values(_real_tokens_to_ids, tokens)
        return ids.to_tensor(default_value=0)
    tokens = as_tensor(tokens, "tokens")
    if tokens.dtype != tf.string:
        raise KerasElmoError(
            "tokens_to_char_ids expects a tf.string tensor. Pass the tokens "
            "themselves, or pass character ids directly to the biLM.",
            "tokens",
            received=tensor(tokens.dtype.name, tokens.shape),
        )
    ids = _real_tokens_to_ids(tokens)
    if sequence_length is not None:
        sequence_length = _check_sequence_length(tokens, sequence_length)
    is_token = token_positions(tokens, sequence_length)
    return ids * tf.cast(is_token, "int32")[..., None]


def as_tensor(value, argument, dtype=None):
    """`value` as a tensor (of `dtype`: an integer one for int dtypes),
    or `KerasElmoError` naming `argument` for what is none."""
    try:
        tensor = tf.convert_to_tensor(value)
        if dtype is not None:
            if not (tensor.dtype.is_integer or tensor.dtype.is_bool):
                raise TypeError(f"{tensor.dtype.name} is not an integer type")
            tensor = tf.cast(tensor, dtype)
    except (TypeError, ValueError, tf.errors.InvalidArgumentError) as error:
        expected = "a tensor" if dtype is None else f"{dtype} values"
        raise KerasElmoError(
            f"`{argument}` must be {expected} ({error}).",
            argument,
            received=value,
        ) from None
    return tensor


def _check_sequence_length(tokens, sequence_length):
    """`sequence_length` as int32 `(batch,)`, checked against `tokens`
    (statically where shapes are known, else in the graph)."""
    sequence_length = as_tensor(sequence_length, "sequence_length", "int32")
    tokens_shape, lengths_shape = (
        tuple(tokens.shape),
        tuple(sequence_length.shape),
    )
    if len(tokens_shape) != 2 or len(lengths_shape) != 1:
        raise KerasElmoError(
            "tokens_to_char_ids with `sequence_length` needs tokens of shape "
            "(batch, time) and `sequence_length` of shape (batch,) (the "
            f"tokens have shape {tokens_shape}).",
            "sequence_length",
            received=tensor(sequence_length.dtype.name, lengths_shape),
        )
    batch, count = tokens_shape[0], lengths_shape[0]
    if batch is not None and count is not None and batch != count:
        raise KerasElmoError(
            f"sequence_length has {count} entries but tokens has {batch} "
            f"rows (tokens {tokens_shape}, sequence_length "
            f"{lengths_shape}); give one length per row.",
            "sequence_length",
        )
    if tf.executing_eagerly():
        lengths, time = sequence_length.numpy(), tokens_shape[1]
        if lengths.size and not 0 <= lengths.min() <= lengths.max() <= time:
            raise KerasElmoError(
                f"`sequence_length` must lie in 0..{tokens_shape[1]} (the "
                f"time dimension of tokens {tokens_shape}).",
                "sequence_length",
                received=lengths.tolist(),
            )
        return sequence_length
    shape, count = tf.shape(tokens), tf.shape(sequence_length)[0]
    shapes = [
        "The shape of sequence_length:",
        tf.shape(sequence_length),
        "of tokens:",
        shape,
    ]
    checks = [
        tf.debugging.Assert(
            tf.equal(count, shape[0]),
            [
                "sequence_length must have one entry per row of tokens.",
                *shapes,
            ],
        ),
        tf.debugging.Assert(
            tf.reduce_all(
                (sequence_length >= 0) & (sequence_length <= shape[1])
            ),
            [
                "sequence_length must lie in 0..time (the second dimension "
                "of tokens).",
                *shapes,
                "; values",
                sequence_length,
            ],
        ),
    ]
    with tf.control_dependencies(checks):
        return tf.identity(sequence_length)


def _real_tokens_to_ids(tokens):
    # Drop invalid UTF-8 the way Python's encode("utf-8", "ignore") drops
    # lone surrogates, so both paths agree on odd input.
    tokens = tf.strings.unicode_transcode(
        tokens,
        input_encoding="UTF-8",
        output_encoding="UTF-8",
        errors="ignore",
        replace_control_characters=False,
    )
    num_bytes = tf.minimum(tf.strings.length(tokens), MAX_TOKEN_BYTES)
    raw = tf.io.decode_raw(tokens, tf.uint8, fixed_length=MAX_TOKEN_BYTES)
    raw = tf.cast(raw, "int32")
    # Position k of the 50 ids holds byte k - 1, end-of-word after the last
    # byte, and the padding char after that.
    byte_index = tf.range(MAX_TOKEN_BYTES + 1)
    num_bytes = num_bytes[..., None]
    raw = tf.concat([raw, tf.zeros_like(raw[..., :1])], axis=-1)
    body = tf.where(
        byte_index < num_bytes,
        raw,
        tf.where(byte_index == num_bytes, EOW_CHAR, PAD_CHAR),
    )
    bow = tf.fill(tf.shape(body[..., :1]), BOW_CHAR)
    ids = tf.concat([bow, body], axis=-1) + 1
    shape = tf.shape(ids)
    ids = tf.where(
        tf.equal(tokens, BOS_TOKEN)[..., None],
        tf.broadcast_to(BOS_CHARACTER_IDS, shape),
        ids,
    )
    ids = tf.where(
        tf.equal(tokens, EOS_TOKEN)[..., None],
        tf.broadcast_to(EOS_CHARACTER_IDS, shape),
        ids,
    )
    return ids
