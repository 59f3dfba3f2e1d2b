"""ELMoForManyLangs' string-to-id rules (the inputs of `token_encoder=
"elmo_for_many_langs"`).

ELMoForManyLangs (EFML, HIT-SCIR) reads a token as Unicode code points
looked up in its model's own character vocabulary (`char.dic`), not as
UTF-8 bytes, and may add a word embedding from its word vocabulary
(`word.dic`). Its rules, from its code (0.0.4.post2):

- a token longer than `max_characters_per_token - 2` code points is cut to
  that length (also before the word lookup);
- the row of character ids is: the id of `<eow>`, one id per code point
  (`<oov>` for characters not in the vocabulary), the id of `<bow>`, then
  `<pad>` to `max_characters_per_token`. (EFML's code swaps the two
  markers; the models were trained that way.) `<pad>` has a learned,
  non-zero embedding, and the convolutions run over all positions;
- the sentence boundaries are the tokens `<bos>` and `<eos>`: the row is
  the id of `<eow>`, the id of `<bos>` (`<eos>`), the id of `<bow>`, then
  `<pad>`; a literal `<bos>` or `<eos>` token in a sentence is read the
  same way;
- the word id is the token's line in the word vocabulary, `<oov>` if
  absent (`<bos>` and `<eos>` are looked up like any token).

Here every id is shifted by +1 so that 0 stays free for padding tokens
(rows of zeros), as with the byte encoder. An input row is
`[word id] + character ids` (`1 + max_characters_per_token` ids) when the
model has a word table, else the character ids alone.
"""

import numpy as np

from elmo_core.errors import KerasElmoError

# EFML's special entries of char.dic and word.dic.
BOS = "<bos>"
EOS = "<eos>"
OOV = "<oov>"
PAD = "<pad>"
BOW = "<bow>"
EOW = "<eow>"
CHARACTER_SPECIALS = (BOS, EOS, OOV, PAD, BOW, EOW)
WORD_SPECIALS = (OOV, PAD)
# The values `max_characters_per_token` may take: EFML needs room for
# `<bow>`, `<bos>`, `<eow>` (it asserts so); no weight backs the width (the
# char CNN runs over any), so a model's config is held to a stated maximum
# (every published model has 50). Not `elmo_core.characters.
# MAX_CHARACTERS_PER_TOKEN`, the fixed width of bilm-tf's byte rows.
MAX_CHARACTERS_PER_TOKEN_RANGE = (len(BOS) + 2, 1000)
# Fingerprints of the words are taken modulo this (the largest int64).


def _check_vocabulary(vocabulary, specials, what):
    if not isinstance(vocabulary, dict) or not vocabulary:
        raise KerasElmoError(
            f"`{what}` must be a non-empty dict (entry -> id, as in "
            f"ELMoForManyLangs' {what[:4]}.dic).",
            what,
            received=vocabulary,
        )
    missing = [s for s in specials if s not in vocabulary]
    if missing:
        raise KerasElmoError(
            f"`{what}` lacks the special entries {missing}; an "
            f"ELMoForManyLangs vocabulary has {list(specials)}."
        )
    ids = list(vocabulary.values())
    if not all(
        isinstance(i, (int, np.integer)) and not isinstance(i, bool) and i >= 0
        for i in ids
    ):
        raise KerasElmoError(f"`{what}` ids must be integers >= 0.")
    return {str(key): int(i) for key, i in vocabulary.items()}


class ELMoForManyLangsIds:
    """The id rules of one ELMoForManyLangs model (see the module
    docstring): its character and word vocabularies, checked, and the
    NumPy tables that turn token strings into its input rows (the same
    rules inside TensorFlow: `keras_elmo.data.elmo_for_many_langs_ids`).

    Args:
        characters: dict, entry -> id (the model's `char.dic`).
        words: dict or None, entry -> id (its `word.dic`).
        max_characters_per_token: int, >= 7.
    """

    def __init__(self, characters, words, max_characters_per_token):
        self.characters = _check_vocabulary(
            characters, CHARACTER_SPECIALS, "characters"
        )
        self.max_characters_per_token = int(max_characters_per_token)
        minimum = MAX_CHARACTERS_PER_TOKEN_RANGE[0]
        if self.max_characters_per_token < minimum:
            raise KerasElmoError(
                f"`max_characters_per_token` must be >= {minimum} for an "
                "ELMoForManyLangs encoder (the `<bos>` entry plus two "
                "markers).",
                "max_characters_per_token",
                received=max_characters_per_token,
            )
        self.words = None
        if words is not None:
            self.words = _check_vocabulary(words, WORD_SPECIALS, "words")
        self.input_shape = (
            self.max_characters_per_token + (self.words is not None),
        )
        self._build_lookups()

    def _build_lookups(self):
        """NumPy tables for the id rules (shifted ids): the ids of `<pad>`,
        `<oov>` and the two markers, and each single-character entry's code
        point (sorted) with its id."""
        ids = {k: v + 1 for k, v in self.characters.items()}
        self.pad = ids[PAD]
        self.oov = ids[OOV]
        # EFML's code starts a token with `<eow>` and ends it with `<bow>`.
        self.first = ids[EOW]
        self.last = ids[BOW]
        singles = sorted((ord(c), i) for c, i in ids.items() if len(c) == 1)
        # A sentinel (-1 -> <oov>) keeps the table non-empty.
        self.code_points = np.asarray(
            [-1] + [c for c, _ in singles], dtype="int64"
        )
        self.code_point_ids = np.asarray(
            [self.oov] + [i for _, i in singles], dtype="int32"
        )

    def token_to_inputs(self, token):
        """The input row (int32, shifted ids) of one token string."""
        size = self.max_characters_per_token - 2
        if len(token) > size:
            token = token[:size]
        row = np.full((self.max_characters_per_token,), self.pad, "int32")
        row[0] = self.first
        if token in (BOS, EOS):
            chars = [self.characters[token] + 1]
        else:
            oov = self.characters[OOV]
            chars = [self.characters.get(c, oov) + 1 for c in token]
        row[1 : len(chars) + 1] = chars
        row[len(chars) + 1] = self.last
        if self.words is None:
            return row
        word = self.words.get(token, self.words[OOV]) + 1
        return np.concatenate([np.int32([word]), row])

    def batch_to_inputs(self, sentences, vocabulary=None):
        """NumPy inputs `(batch, time, K)` of tokenised sentences, rows of
        zeros after each sentence (the vocabulary argument is unused)."""
        if isinstance(sentences, (str, bytes)) or not all(
            isinstance(s, (list, tuple)) and all(isinstance(t, str) for t in s)
            for s in sentences
        ):
            raise KerasElmoError(
                "batch_to_inputs expects a list of sentences, each a list of "
                'token strings, e.g. [["Hello", "world"], ["Hi"]].'
            )
        length = max([len(s) for s in sentences], default=0)
        ids = np.zeros((len(sentences), length, *self.input_shape), "int32")
        for i, sentence in enumerate(sentences):
            for j, token in enumerate(sentence):
                ids[i, j] = self.token_to_inputs(token)
        return ids
