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
import tensorflow as tf

from keras_elmo.data.token_positions import token_positions
from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import tensor

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
# (every published model has 50). Not `keras_elmo.characters.
# MAX_CHARACTERS_PER_TOKEN`, the fixed width of bilm-tf's byte rows.
MAX_CHARACTERS_PER_TOKEN_RANGE = (len(BOS) + 2, 1000)
# Fingerprints of the words are taken modulo this (the largest int64).
_FINGERPRINT_BUCKETS = 2**63 - 1


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
    tables that turn token strings into its input rows.

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
        """NumPy tables for the id rules (shifted ids)."""
        ids = {k: v + 1 for k, v in self.characters.items()}
        self._pad = ids[PAD]
        self._oov = ids[OOV]
        # EFML's code starts a token with `<eow>` and ends it with `<bow>`.
        self._first = ids[EOW]
        self._last = ids[BOW]
        singles = sorted((ord(c), i) for c, i in ids.items() if len(c) == 1)
        # A sentinel (-1 -> <oov>) keeps the table non-empty.
        self._code_points = np.asarray(
            [-1] + [c for c, _ in singles], dtype="int64"
        )
        self._code_point_ids = np.asarray(
            [self._oov] + [i for _, i in singles], dtype="int32"
        )
        self._word_lookup = None
        if self.words is not None:
            words = list(self.words)
            # In-graph word lookup without a hash-table resource (so that it
            # runs in tf.data, tf.function and SavedModels alike): sorted
            # 64-bit fingerprints, searched; the word itself is compared too.
            with tf.init_scope():
                prints = tf.strings.to_hash_bucket_fast(
                    tf.constant(words, tf.string), _FINGERPRINT_BUCKETS
                ).numpy()
            if len(np.unique(prints)) != len(prints):
                raise KerasElmoError(
                    "Two entries of `words` have the same 64-bit "
                    "fingerprint; the in-graph lookup cannot tell them "
                    "apart."
                )
            order = np.argsort(prints)
            self._word_lookup = (
                prints[order],
                np.asarray(words, dtype=object)[order],
                np.asarray([self.words[words[k]] + 1 for k in order], "int32"),
            )

    def token_to_inputs(self, token):
        """The input row (int32, shifted ids) of one token string."""
        size = self.max_characters_per_token - 2
        if len(token) > size:
            token = token[:size]
        row = np.full((self.max_characters_per_token,), self._pad, "int32")
        row[0] = self._first
        if token in (BOS, EOS):
            chars = [self.characters[token] + 1]
        else:
            oov = self.characters[OOV]
            chars = [self.characters.get(c, oov) + 1 for c in token]
        row[1 : len(chars) + 1] = chars
        row[len(chars) + 1] = self._last
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

    def tokens_to_inputs(self, tokens, table=None, sequence_length=None):
        """In-graph inputs of a `tf.string` token tensor (same ids as
        `batch_to_inputs`).

        Args:
            tokens: `tf.string` tensor (typically `(batch, time)`), `""`
                marking padding unless `sequence_length` is given; or a
                `tf.RaggedTensor` of strings (every element a token).
            table: unused (the vocabularies are the encoder's own).
            sequence_length: optional int tensor `(batch,)`: positions at
                or past it are padding, earlier ones real tokens even when
                empty.

        Returns:
            int32 tensor `tokens.shape + (K,)`, zero rows at padding.
        """
        if isinstance(tokens, tf.RaggedTensor):
            ids = tf.ragged.map_flat_values(self._real_tokens_to_inputs, tokens)
            return ids.to_tensor(default_value=0)
        tokens = tf.convert_to_tensor(tokens)
        if tokens.dtype != tf.string:
            raise KerasElmoError(
                "tokens_to_inputs expects a tf.string tensor.",
                "tokens",
                received=tensor(tokens.dtype.name, tokens.shape),
            )
        ids = self._real_tokens_to_inputs(tokens)
        is_token = token_positions(tokens, sequence_length)
        return ids * tf.cast(is_token, "int32")[..., None]

    def _real_tokens_to_inputs(self, tokens):
        size = self.max_characters_per_token - 2
        flat = tf.reshape(tokens, [-1])
        code_points = tf.strings.unicode_decode(flat, "UTF-8", errors="replace")
        cut = code_points[:, :size]
        lengths = tf.cast(cut.row_lengths(), "int32")[:, None]
        dense = tf.cast(
            cut.to_tensor(default_value=-1, shape=[None, size]), "int64"
        )
        # Character ids: binary search in the sorted code points.
        table = tf.constant(self._code_points)
        index = tf.searchsorted(table, tf.reshape(dense, [-1]))
        index = tf.minimum(index, len(self._code_points) - 1)
        found = tf.equal(tf.gather(table, index), tf.reshape(dense, [-1]))
        chars = tf.where(
            found,
            tf.gather(tf.constant(self._code_point_ids), index),
            self._oov,
        )
        chars = tf.reshape(chars, tf.shape(dense))
        positions = tf.range(size)[None, :]
        chars = tf.where(positions < lengths, chars, self._pad)
        count = tf.shape(flat)[0]
        rows = tf.concat(
            [
                tf.fill([count, 1], self._first),
                chars,
                tf.fill([count, 1], self._pad),
            ],
            axis=1,
        )
        positions = tf.range(self.max_characters_per_token)[None, :]
        rows = tf.where(positions == lengths + 1, self._last, rows)
        if self.words is not None:
            truncated = tf.where(
                code_points.row_lengths() > size,
                tf.strings.unicode_encode(cut, "UTF-8"),
                flat,
            )
            rows = tf.concat([self._word_ids(truncated)[:, None], rows], 1)
        for token in (BOS, EOS):
            rows = tf.where(
                tf.equal(flat, token)[:, None],
                tf.constant(self.token_to_inputs(token))[None, :],
                rows,
            )
        shape = tf.concat([tf.shape(tokens), [self.input_shape[0]]], axis=0)
        return tf.reshape(rows, shape)

    def _word_ids(self, words):
        prints, sorted_words, ids = self._word_lookup
        keys = tf.strings.to_hash_bucket_fast(words, _FINGERPRINT_BUCKETS)
        index = tf.searchsorted(tf.constant(prints), keys)
        index = tf.minimum(index, len(prints) - 1)
        found = tf.equal(tf.gather(tf.constant(prints), index), keys)
        found &= tf.equal(
            tf.gather(tf.constant(sorted_words.tolist(), tf.string), index),
            words,
        )
        return tf.where(
            found, tf.gather(tf.constant(ids), index), self.words[OOV] + 1
        )
