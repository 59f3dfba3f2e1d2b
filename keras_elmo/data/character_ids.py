"""Tokens to ELMo character ids, in NumPy and in-graph (SPEC §2-3).

Both implementations below follow the same rules and are tested against each
other:

- a token is its UTF-8 bytes, invalid sequences dropped (Python's
  `encode("utf-8", "ignore")`), cut to 48 bytes (a multi-byte character may be
  cut in two);
- the row is `[begin-of-word] + bytes + [end-of-word] + [padding char]...`,
  50 ids long; `<S>` and `</S>` map to the sentence boundary characters;
- every id is shifted by +1 so that id 0 is free for padding *tokens*, whole
  rows of zeros.
"""

import numpy as np
import tensorflow as tf

MAX_CHARACTERS_PER_TOKEN = 50
MAX_TOKEN_BYTES = MAX_CHARACTERS_PER_TOKEN - 2
NUM_CHARACTER_IDS = 262

# Raw ids of the special characters, before the +1 shift.
_BOS_CHAR = 256
_EOS_CHAR = 257
_BOW_CHAR = 258
_EOW_CHAR = 259
_PAD_CHAR = 260

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


def _special_row(char):
    row = [_BOW_CHAR, char, _EOW_CHAR]
    row += [_PAD_CHAR] * (MAX_CHARACTERS_PER_TOKEN - len(row))
    return np.asarray(row, dtype="int32") + 1


# The character ids of the sentence boundary tokens, shifted (+1).
BOS_CHARACTER_IDS = _special_row(_BOS_CHAR)
EOS_CHARACTER_IDS = _special_row(_EOS_CHAR)


def _token_to_ids(token):
    if token == BOS_TOKEN:
        return BOS_CHARACTER_IDS
    if token == EOS_TOKEN:
        return EOS_CHARACTER_IDS
    raw = token.encode("utf-8", "ignore")[:MAX_TOKEN_BYTES]
    row = np.full((MAX_CHARACTERS_PER_TOKEN,), _PAD_CHAR + 1, dtype="int32")
    row[0] = _BOW_CHAR + 1
    row[1 : len(raw) + 1] = (
        np.frombuffer(raw, dtype="uint8").astype("int32") + 1
    )
    row[len(raw) + 1] = _EOW_CHAR + 1
    return row


def _check_sentences(sentences):
    if isinstance(sentences, (str, bytes)) or not hasattr(sentences, "__len__"):
        raise TypeError(
            "batch_to_ids expects a list of sentences, each a list of token "
            f"strings; received {type(sentences).__name__}. Split each "
            'sentence first, e.g. [["Hello", "world"], ["Hi"]].'
        )
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, (str, bytes)) or not hasattr(
            sentence, "__len__"
        ):
            raise TypeError(
                f"Sentence {i} is a {type(sentence).__name__}, not a list of "
                "token strings. Split it into tokens first, e.g. "
                '"Hello world".split().'
            )
        for j, token in enumerate(sentence):
            if not isinstance(token, str):
                raise TypeError(
                    f"Token {j} of sentence {i} is {token!r} of type "
                    f"{type(token).__name__}; tokens must be str. Convert it "
                    "with str() (or .decode('utf-8') for bytes)."
                )


def batch_to_ids(sentences):
    """Converts tokenised sentences to ELMo character ids (NumPy).

    Args:
        sentences: list of lists of str. One list of tokens per sentence,
            without `<S>`/`</S>` (the biLM adds them).

    Returns:
        int32 NumPy array `(num_sentences, max_length, 50)`; padding tokens
        are rows of zeros.

    Example:

    >>> ids = keras_elmo.batch_to_ids([["Hi", "there"], ["Hi"]])
    >>> ids.shape
    (2, 2, 50)
    >>> ids[0, 0, :5].tolist()
    [259, 73, 106, 260, 261]
    >>> int(ids[1, 1].max())
    0
    """
    _check_sentences(sentences)
    max_length = max((len(s) for s in sentences), default=0)
    ids = np.zeros(
        (len(sentences), max_length, MAX_CHARACTERS_PER_TOKEN), dtype="int32"
    )
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            ids[i, j] = _token_to_ids(token)
    return ids


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
    """
    if isinstance(tokens, tf.RaggedTensor):
        ids = tf.ragged.map_flat_values(_real_tokens_to_ids, tokens)
        return ids.to_tensor(default_value=0)
    tokens = tf.convert_to_tensor(tokens)
    if tokens.dtype != tf.string:
        raise TypeError(
            f"tokens_to_char_ids expects a tf.string tensor; received dtype "
            f"{tokens.dtype.name}. Pass the tokens themselves, or pass "
            "character ids directly to the biLM."
        )
    ids = _real_tokens_to_ids(tokens)
    if sequence_length is None:
        is_token = tf.not_equal(tokens, "")
    else:
        positions = tf.range(tf.shape(tokens)[1])
        sequence_length = tf.cast(sequence_length, "int32")
        is_token = positions[None, :] < sequence_length[:, None]
    return ids * tf.cast(is_token, "int32")[..., None]


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
        tf.where(byte_index == num_bytes, _EOW_CHAR, _PAD_CHAR),
    )
    bow = tf.fill(tf.shape(body[..., :1]), _BOW_CHAR)
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
