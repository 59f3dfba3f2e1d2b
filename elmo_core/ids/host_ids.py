"""Tokens to biLM inputs on the host, with NumPy: for the JAX and PyTorch
backends, and for input pipelines of any framework.

On TensorFlow, `ELMoEmbedding` turns `tf.string` tokens into ids inside the
graph. JAX and PyTorch have no string tensors, so there the layers take
tokens as Python lists of token lists (or NumPy string arrays `(batch,
time)`, `""` for padding) and convert them here, before the backend sees
them, with each kind's NumPy rules: `elmo_core.characters` for character
biLMs, `Vocabulary.batch_to_ids` for word biLMs and the ELMoForManyLangs
encoder's `batch_to_inputs`. The ids are the same as the in-graph ones.

`TokenBatcher` is the same conversion as a plain callable, for a
`torch.utils.data.DataLoader` (`collate_fn=`), a `grain` map or a
`tf.data` `py_function`.
"""

import numpy as np

from elmo_core.errors import Described
from elmo_core.errors import KerasElmoError

# What host tokens are, for messages.
_EXPECTED = (
    "tokenised sentences: a list of token lists such as "
    "[['Hello', 'world'], ['Hi']], or a NumPy string array (batch, time) "
    "with '' for padding"
)


def is_host_tokens(inputs):
    """True for what `host_inputs` reads (or refuses clearly): token
    lists, sentence strings, NumPy string, bytes or object arrays; False
    for numbers (ids), which go to the layer as they are."""
    if isinstance(inputs, np.ndarray):
        return inputs.dtype.kind in "USO"
    if not isinstance(inputs, (list, tuple)) or not inputs:
        return False
    return any(
        isinstance(s, (str, bytes))
        or (
            isinstance(s, (list, tuple, np.ndarray))
            and any(isinstance(t, (str, bytes, np.str_)) for t in s)
        )
        for s in inputs
    )


def host_inputs(encoder, tokens, vocabulary=None):
    """The int32 NumPy inputs of `tokens` for a biLM's token encoder.

    Bytes (a NumPy `S` array, or bytes in lists and object arrays) are
    UTF-8 and give the same ids as the same text as str.

    Args:
        encoder: the biLM's `encoder` (any kind).
        tokens: a list of sentences, each a list of token strings; or a
            NumPy string array `(batch, time)` with `""` for padding.
        vocabulary: a `elmo_core.ids.Vocabulary`, for word biLMs only.

    Returns:
        `(batch, time, *encoder.input_shape)` int32, zero at padding.

    Raises:
        KerasElmoError: `tokens` is not tokenised sentences (None, numbers,
            sentence strings not split into tokens, a token that is not a
            string, bytes that are not UTF-8), naming where.
    """
    if encoder.needs_vocabulary and vocabulary is None:
        raise KerasElmoError(
            "This biLM reads word ids; to take string tokens it needs its "
            "vocabulary: ELMoEmbedding(bilm, vocabulary='vocab.txt'), or "
            "elmo_core.ids.Vocabulary(...).batch_to_ids(sentences)."
        )
    if not isinstance(tokens, np.ndarray):
        sentences = _sentences(tokens)
        return np.asarray(
            encoder.batch_to_inputs(sentences, vocabulary), "int32"
        )
    rows = _array_rows(tokens)
    ids = np.asarray(encoder.batch_to_inputs(rows, vocabulary), "int32")
    ids = ids.reshape((*tokens.shape, *encoder.input_shape))
    present = np.array([[t != "" for t in row] for row in rows], bool)
    present = present.reshape((*tokens.shape,) + (1,) * (ids.ndim - 2))
    return ids * present


def _sentences(tokens):
    """Token lists as lists of str, checked (see `host_inputs`)."""
    if not isinstance(tokens, (list, tuple)):
        raise KerasElmoError(
            f"`tokens` must be {_EXPECTED}.",
            "tokens",
            received=tokens,
            expected=_EXPECTED,
        )
    sentences = []
    for i, sentence in enumerate(tokens):
        if isinstance(sentence, (str, bytes)):
            raise KerasElmoError(
                f"`tokens`[{i}] is a string, not a list of tokens; `tokens` "
                f"must be {_EXPECTED}. Split each sentence first, e.g. "
                "[s.split() for s in sentences].",
                received=sentence,
                expected=_EXPECTED,
            )
        if not isinstance(sentence, (list, tuple, np.ndarray)):
            raise KerasElmoError(
                f"`tokens`[{i}] is not a list of tokens; `tokens` must be "
                f"{_EXPECTED}.",
                received=sentence,
                expected=_EXPECTED,
            )
        sentences.append(
            [_token(t, f"`tokens`[{i}][{j}]") for j, t in enumerate(sentence)]
        )
    return sentences


def _array_rows(tokens):
    """A NumPy token array's rows as lists of str, checked."""
    if tokens.dtype.kind not in "USO":
        raise KerasElmoError(
            f"`tokens` must be {_EXPECTED}. (Ids need no conversion: pass "
            "them to the layer as they are.)",
            "tokens",
            received=Described(
                f"NumPy {tokens.dtype} array of shape {tokens.shape}"
            ),
            expected=_EXPECTED,
        )
    if tokens.ndim != 2:
        raise KerasElmoError(
            "String `tokens` must have shape (batch, time), '' for padding.",
            "tokens",
            received=Described(f"NumPy array of shape {tokens.shape}"),
        )
    return [
        [_token(t, f"`tokens`[{i}, {j}]") for j, t in enumerate(row)]
        for i, row in enumerate(tokens)
    ]


def _token(token, where):
    """One token as str: str as is, bytes decoded as UTF-8."""
    if isinstance(token, str):
        return str(token)
    if isinstance(token, bytes):
        try:
            return token.decode("utf-8")
        except UnicodeDecodeError as e:
            raise KerasElmoError(
                f"{where} is not UTF-8 text: byte {token[e.start]:#04x} at "
                f"offset {e.start}. Decode the tokens with their encoding "
                "first, or pass str.",
                received=token,
            ) from None
    raise KerasElmoError(
        f"{where} must be a string (str, or UTF-8 bytes); pad with ''.",
        received=token,
    )


class TokenBatcher:
    """Batches of token lists -> the NumPy inputs of one biLM.

    A callable for input pipelines: `torch.utils.data.DataLoader(
    sentences, batch_size=32, collate_fn=TokenBatcher(bilm))`, a `grain`
    map over batches, or `tf.numpy_function`. Same ids as `ELMoEmbedding`
    computes from strings.

    Args:
        bilm: a `keras_elmo.layers.BiLM`.
        vocabulary: for a word-input biLM, its vocabulary (a
            `elmo_core.ids.Vocabulary`, a list of tokens or a file path).

    Example:

    >>> bilm = keras_elmo.layers.BiLM(
    ...     filters=[[1, 4]], char_embedding_dim=4, num_highway_layers=0,
    ...     units=8, projection_dim=4)
    >>> TokenBatcher(bilm)([["Hello", "world"], ["Hi"]]).shape
    (2, 2, 50)
    """

    def __init__(self, bilm, vocabulary=None):
        self.encoder = getattr(bilm, "encoder", None)
        if self.encoder is None or isinstance(bilm, type):
            raise KerasElmoError(
                "`bilm` must be a keras_elmo.layers.BiLM (or a biLM of "
                "elmo_core.runtime).",
                "bilm",
                received=bilm,
            )
        self.vocabulary = None
        if vocabulary is not None:
            from elmo_core.ids.vocabulary import check_vocabulary

            self.vocabulary = check_vocabulary(vocabulary, self.encoder)

    def __call__(self, sentences):
        return host_inputs(self.encoder, sentences, self.vocabulary)
