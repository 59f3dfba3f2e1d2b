"""Sentences as the corpus embedder takes them, and the lines it cannot take.

A sentence is a raw line (str, or UTF-8 bytes as Arrow, Parquet and pandas
hand text over; read by the one text path of the package, its normal
form split by a tokenisation, `elmo_core.text.tokenizers`) or a list of
tokens (str or UTF-8 bytes, taken as they are). Bytes and str give the
same tokens, so the same ids. A line that cannot be embedded is a *bad
line* with one of `BAD_LINE_REASONS` (the output layout's,
`elmo_core.embedding_files.parquet_layout`); a value of any other type
is a programming mistake and raises `KerasElmoError`.

The embedder's batches are planned by `elmo_core.embedding_files.token_batches`
within the token budget below.

NumPy only: no TensorFlow, no engine.
"""

import numpy as np

from elmo_core.errors import KerasElmoError
from elmo_core.text.bad_lines import EMPTY
from elmo_core.text.bad_lines import NOT_UTF8
from elmo_core.text.bad_lines import TOO_LONG
from elmo_core.text.tokenizers import tokenizer

# What a corpus run stores its arrays in (float16: half the storage; the
# biLM runs in float32 either way), the default first.
DTYPES = ("float32", "float16")
DEFAULT_DTYPE = DTYPES[0]
# A sentence longer than this is a bad line (a protein of UniRef50 rarely
# has more residues; a text line that long is usually not a sentence).
DEFAULT_MAX_SENTENCE_TOKENS = 2048


class BadLine(KerasElmoError):
    """A sentence that cannot be embedded; `reason` is one of
    `BAD_LINE_REASONS`.

    Example:

    >>> embedder = keras_elmo.corpus.SentenceEmbedder(
    ...     "tests/fixtures/bilm-tf/model")
    >>> try:
    ...     embedder.tokens(b"na\\xefve")  # the rules only: no biLM loaded
    ... except keras_elmo.corpus.BadLine as error:
    ...     print(error.reason)
    not_utf8
    """

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason
        self.args = (reason, message)  # rebuilt from these when unpickled


def _text(value, what):
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadLine(
            NOT_UTF8,
            f"{what} is not valid UTF-8 (byte 0x{value[error.start]:02x} at "
            f"byte offset {error.start}).",
        ) from None


def _is_token_list(value):
    if isinstance(value, np.ndarray):
        return value.ndim == 1
    return isinstance(value, (list, tuple))


def to_tokens(
    value, max_sentence_tokens=DEFAULT_MAX_SENTENCE_TOKENS, split=None
):
    """The tokens of one sentence.

    Args:
        value: a line (str or UTF-8 bytes) or a list of tokens (each str or
            UTF-8 bytes, not empty or blank; a 1-D NumPy array of them
            too).
        max_sentence_tokens: int. More tokens than this is a bad line.
        split: callable: a line (str) -> its tokens. Defaults to the
            `whitespace` tokenisation (the line's normal form split at
            whitespace); a token list is taken as it is.

    Returns:
        A list of str tokens.

    Raises:
        BadLine: the sentence is empty, too long or not UTF-8.
        KerasElmoError: `value` is of another type, or a token is empty
            or blank.
    """
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        split = split or tokenizer().tokenize
        tokens = split(_text(value, "The line"))
    elif _is_token_list(value):
        tokens = [_token(token, i) for i, token in enumerate(value)]
    else:
        raise KerasElmoError(
            "A sentence must be a line (str or UTF-8 bytes) or a list of "
            "tokens (str or bytes).",
            received=value,
        )
    if not tokens:
        raise BadLine(EMPTY, "The sentence has no tokens.")
    if len(tokens) > max_sentence_tokens:
        raise BadLine(
            TOO_LONG,
            f"The sentence has {len(tokens)} tokens; at most "
            f"{max_sentence_tokens} are embedded (`max_sentence_tokens`).",
        )
    return tokens


def _token(token, i):
    if not isinstance(token, (str, bytes)):
        raise KerasElmoError(
            f"Token {i} of a sentence must be a str or UTF-8 bytes.",
            received=token,
        )
    token = _text(token, f"Token {i}")
    if not token.strip():
        # Padding, most likely (a 2-D array of tokens padded with ""):
        # embedded, it would be a token of its own.
        raise KerasElmoError(
            f"Token {i} of a sentence is empty or blank; a sentence is its "
            "tokens, unpadded. For a 2-D array padded with '', pass "
            "[row[row != ''] for row in array].",
            received=token,
        )
    return token
