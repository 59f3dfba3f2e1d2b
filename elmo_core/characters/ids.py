"""The character ids of ELMo's tokens and the char CNN's filter facts,
NumPy only (`elmo_core.characters` says more)."""

import numpy as np

from elmo_core.errors import KerasElmoError
from elmo_core.errors.shown import shown

# The width of every token's row of ids (bilm-tf's `max_characters_per_token`;
# an ELMoForManyLangs model sets its own, see `data.elmo_for_many_langs_ids`).
MAX_CHARACTERS_PER_TOKEN = 50
MAX_TOKEN_BYTES = MAX_CHARACTERS_PER_TOKEN - 2
# Ids 0..261: 0 is the padding token, 1..261 the shifted characters.
NUM_CHARACTER_IDS = 262
MAX_CHARACTER_ID = NUM_CHARACTER_IDS - 1
# `n_characters` in official options files: 261 in training files (no
# padding id), 262 in inference files.
OPTIONS_NUM_CHARACTERS = (261, 262)

# Raw ids of the special characters, before the +1 shift.
BOS_CHAR = 256
EOS_CHAR = 257
BOW_CHAR = 258
EOW_CHAR = 259
PAD_CHAR = 260

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


def _special_row(char):
    row = [BOW_CHAR, char, EOW_CHAR]
    row += [PAD_CHAR] * (MAX_CHARACTERS_PER_TOKEN - len(row))
    return np.asarray(row, dtype="int32") + 1


# The character ids of the sentence boundary tokens, shifted (+1).
BOS_CHARACTER_IDS = _special_row(BOS_CHAR)
EOS_CHARACTER_IDS = _special_row(EOS_CHAR)


def token_mask(character_ids, xp=np):
    """The token mask rule: a token is present if any of its ids is
    non-zero. `xp` is `numpy` (default) or `keras.ops`."""
    return xp.any(xp.not_equal(character_ids, 0), axis=-1)


def token_to_ids(token):
    """The 50 character ids (int32, shifted) of one token string."""
    if token == BOS_TOKEN:
        return BOS_CHARACTER_IDS
    if token == EOS_TOKEN:
        return EOS_CHARACTER_IDS
    raw = token.encode("utf-8", "ignore")[:MAX_TOKEN_BYTES]
    row = np.full((MAX_CHARACTERS_PER_TOKEN,), PAD_CHAR + 1, dtype="int32")
    row[0] = BOW_CHAR + 1
    row[1 : len(raw) + 1] = (
        np.frombuffer(raw, dtype="uint8").astype("int32") + 1
    )
    row[len(raw) + 1] = EOW_CHAR + 1
    return row


def _check_sentences(sentences):
    if isinstance(sentences, (str, bytes)) or not hasattr(sentences, "__len__"):
        raise KerasElmoError(
            "batch_to_ids expects a list of sentences, each a list of token "
            'strings. Split each sentence first, e.g. [["Hello", "world"], '
            '["Hi"]].',
            "sentences",
            received=sentences,
        )
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, (str, bytes)) or not hasattr(
            sentence, "__len__"
        ):
            raise KerasElmoError(
                f"Sentence {i} is a {type(sentence).__name__}, not a list of "
                "token strings. Split it into tokens first, e.g. "
                '"Hello world".split().',
                "sentences",
            )
        for j, token in enumerate(sentence):
            if not isinstance(token, str):
                raise KerasElmoError(
                    f"Token {j} of sentence {i} is {shown(token)} of type "
                    f"{type(token).__name__}; tokens must be str. Convert it "
                    "with str() (or .decode('utf-8') for bytes).",
                    "sentences",
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
            ids[i, j] = token_to_ids(token)
    return ids


# === The char CNN's filters (SPEC §1), for sizes checked before any layer ===

# Published ELMo models all use these filters (SPEC §1).
DEFAULT_FILTERS = (
    (1, 32),
    (2, 32),
    (3, 64),
    (4, 128),
    (5, 256),
    (6, 512),
    (7, 1024),
)


def check_filters(filters, max_characters_per_token):
    """Validates `[(width, num_filters), ...]` and returns it as tuples."""
    given = filters
    try:
        filters = tuple((int(w), int(n)) for w, n in filters)
    except (TypeError, ValueError, OverflowError):
        raise KerasElmoError(
            "`filters` must be a list of [width, num_filters] pairs, e.g. "
            "[[1, 32], [2, 32]].",
            "filters",
            received=given,
        ) from None
    if not filters:
        raise KerasElmoError(
            "`filters` must name at least one filter width.",
            "filters",
            received=given,
        )
    for i, (width, num) in enumerate(filters):
        if not 1 <= width <= max_characters_per_token or num < 1:
            raise KerasElmoError(
                f"`filters`[{i}] is [{width}, {num}]: each filter needs 1 <= "
                f"width <= {max_characters_per_token} and num_filters >= 1.",
                "filters",
                received=list(map(list, filters)),
            )
    return filters
