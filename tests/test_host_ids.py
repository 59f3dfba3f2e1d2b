"""Host-side ids (`elmo_core.ids.host_ids`, used on JAX and PyTorch):
bytes give the same ids as the same text as str, and what is not
tokenised sentences is refused clearly (issue 24, class 5)."""

import numpy as np
import pytest

from elmo_core.characters import batch_to_ids
from elmo_core.errors import KerasElmoError
from elmo_core.ids.host_ids import TokenBatcher
from elmo_core.ids.host_ids import is_host_tokens
from elmo_core.ids.vocabulary import Vocabulary
from keras_elmo.layers.bilm import BiLM

SENTENCES = [["Hello", "wörld", "!"], ["Hi", "", ""]]
SPLIT = [["Hello", "wörld", "!"], ["Hi"]]


@pytest.fixture(scope="module")
def characters():
    return TokenBatcher(
        BiLM(
            filters=[[1, 4]],
            char_embedding_dim=4,
            num_highway_layers=0,
            units=8,
            projection_dim=4,
        )
    )


@pytest.fixture(scope="module")
def words():
    vocabulary = Vocabulary(["<S>", "</S>", "<UNK>", "Hello", "wörld", "Hi"])
    bilm = BiLM(
        units=8, projection_dim=4, token_encoder="words", vocabulary_size=6
    )
    return TokenBatcher(bilm, vocabulary)


def _encoded(sentences):
    return [[t.encode("utf-8") for t in s] for s in sentences]


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.array(SENTENCES),
        lambda: np.array(_encoded(SENTENCES)),  # dtype S
        lambda: np.array(_encoded(SENTENCES), dtype=object),
        lambda: np.array(SENTENCES, dtype=object),
        lambda: _encoded(SPLIT),
    ],
    ids=["str-array", "bytes-array", "object-bytes", "object-str", "bytes"],
)
def test_bytes_give_the_ids_of_the_same_text(characters, words, make):
    tokens = make()
    assert is_host_tokens(tokens)
    # The reference: the NumPy character ids of the str tokens.
    np.testing.assert_array_equal(characters(tokens), batch_to_ids(SPLIT))
    np.testing.assert_array_equal(words(tokens), words(SPLIT))
    assert words(SPLIT).tolist() == [[4, 5, 3], [6, 0, 0]]


BAD = [
    ("none", None, "`tokens` must be tokenised sentences"),
    ("string", "Hello world", "Received: tokens='Hello world'."),
    (
        "unsplit-sentences",
        ["Hello world", "Hi"],
        "`tokens`[0] is a string, not a list of tokens",
    ),
    ("none-token", [["Hello", None]], "`tokens`[0][1] must be a string"),
    (
        "int-token",
        [["Hello"], [3]],
        "must be a string (str, or UTF-8 bytes); pad with ''. Received: 3.",
    ),
    (
        "object-array-none",
        np.array([["Hello", None]], dtype=object),
        "`tokens`[0, 1] must be a string (str, or UTF-8 bytes); pad with ''. "
        "Received: None.",
    ),
    (
        "int-array",
        np.array([[1, 2], [3, 0]]),
        "Received: tokens=<NumPy int64 array of shape (2, 2)>.",
    ),
    (
        "not-utf8",
        [["Hello", b"w\xf6rld"]],
        "`tokens`[0][1] is not UTF-8 text: byte 0xf6 at offset 1",
    ),
    (
        "not-utf8-array",
        np.array([[b"Hello", b"w\xf6rld"]]),
        "`tokens`[0, 1] is not UTF-8 text: byte 0xf6 at offset 1",
    ),
]


@pytest.mark.parametrize(
    "tokens, words", [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_what_is_not_tokenised_text_is_refused(characters, tokens, words):
    with pytest.raises(KerasElmoError) as raised:
        characters(tokens)
    assert words in str(raised.value), str(raised.value)


def test_numbers_are_not_host_tokens():
    """Ids go to the layer as they are (its own checks apply)."""
    assert not is_host_tokens(np.zeros((2, 3, 50), "int32"))
    assert not is_host_tokens([[1, 2], [3, 4]])
    assert is_host_tokens(["Hello world"])  # refused by host_inputs
    assert is_host_tokens([["Hello", None]])
