"""The token encoder of ELMoForManyLangs biLMs (`token_encoder=
"elmoformanylangs"`).

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

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_elmo import backend
from keras_elmo.errors import KerasElmoError
from keras_elmo.layers.char_cnn import CharCNN
from keras_elmo.layers.distinct_tokens import distinct_rows
from keras_elmo.layers.distinct_tokens import gather_rows
from keras_elmo.layers.highway import Highway
from keras_elmo.layers.validation import host_values

# EFML's special entries of char.dic and word.dic.
BOS = "<bos>"
EOS = "<eos>"
OOV = "<oov>"
PAD = "<pad>"
BOW = "<bow>"
EOW = "<eow>"
CHARACTER_SPECIALS = (BOS, EOS, OOV, PAD, BOW, EOW)
WORD_SPECIALS = (OOV, PAD)
# Fingerprints of the words are taken modulo this (the largest int64).
_FINGERPRINT_BUCKETS = 2**63 - 1


def _check_vocabulary(vocabulary, specials, what):
    if not isinstance(vocabulary, dict) or not vocabulary:
        raise KerasElmoError(
            f"`{what}` must be a non-empty dict (entry -> id, as in "
            f"ELMoForManyLangs' {what[:4]}.dic). Received: "
            f"{type(vocabulary).__name__}"
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


class ELMoForManyLangsEncoder:
    """`token_encoder="elmoformanylangs"`: EFML's character-vocabulary
    token encoder, with its optional word table (see the module docstring
    for the id rules).

    The characters go through a char CNN over a table of
    `max(characters.values()) + 1` learned rows, the highway layers and,
    after the word embedding is put in front of them, the projection to
    `projection_dim`. Inputs `"efml_ids"` int `(batch, time, K)`; a token is
    present if any of its ids is non-zero. Build them with
    `batch_to_inputs` (NumPy) or `tokens_to_inputs` (in-graph, from
    strings), which need nothing but the encoder.
    """

    name = "elmoformanylangs"
    input_name = "efml_ids"
    arguments = (
        "characters",
        "words",
        "word_embedding_dim",
        "filters",
        "char_embedding_dim",
        "activation",
        "num_highway_layers",
        "max_characters_per_token",
        "deduplicate_tokens",
    )
    needs_vocabulary = False

    def __init__(
        self,
        projection_dim,
        dtype,
        characters,
        words,
        word_embedding_dim,
        filters,
        char_embedding_dim,
        activation,
        num_highway_layers,
        max_characters_per_token,
        deduplicate_tokens,
    ):
        self.characters = _check_vocabulary(
            characters, CHARACTER_SPECIALS, "characters"
        )
        self.max_characters_per_token = int(max_characters_per_token)
        # EFML needs room for `<bow>`, `<bos>`, `<eow>` (it asserts so).
        if self.max_characters_per_token < len(BOS) + 2:
            raise KerasElmoError(
                "`max_characters_per_token` must be >= 7 for an "
                "ELMoForManyLangs encoder (the `<bos>` entry plus two "
                f"markers). Received: {max_characters_per_token}"
            )
        if words is None:
            if word_embedding_dim:
                raise KerasElmoError(
                    "`word_embedding_dim` needs `words`, the word vocabulary"
                    f". Received: word_embedding_dim={word_embedding_dim}"
                )
            self.words = None
            self.word_embedding_dim = None
        else:
            self.words = _check_vocabulary(words, WORD_SPECIALS, "words")
            if word_embedding_dim is None or int(word_embedding_dim) < 1:
                raise KerasElmoError(
                    "`words` needs `word_embedding_dim` >= 1 (the width of "
                    "the word table). Received: word_embedding_dim="
                    f"{word_embedding_dim}"
                )
            self.word_embedding_dim = int(word_embedding_dim)
        self.num_highway_layers = int(num_highway_layers)
        self.char_embedding_dim = int(char_embedding_dim)
        self.activation = activation
        self.deduplicate_tokens = bool(deduplicate_tokens)
        self.projection_dim = projection_dim
        self.input_shape = (
            self.max_characters_per_token + (self.words is not None),
        )
        self._build_lookups()

        # === Sublayers (set on the BiLM) ===
        num_rows = max(self.characters.values()) + 1
        self.char_cnn = CharCNN(
            filters=filters,
            char_embedding_dim=char_embedding_dim,
            activation=activation,
            max_characters_per_token=self.max_characters_per_token,
            num_characters=num_rows + 1,
            dtype=dtype,
            name="char_cnn",
        )
        self.filters = self.char_cnn.filters
        self.highway_layers = [
            Highway(dtype=dtype, name=f"highway_{k}")
            for k in range(self.num_highway_layers)
        ]
        self.word_embedding = None
        if self.words is not None:
            self.word_embedding = keras.layers.Embedding(
                max(self.words.values()) + 1,
                self.word_embedding_dim,
                dtype=dtype,
                name="word_embedding",
            )
        self.token_projection = keras.layers.Dense(
            projection_dim, dtype=dtype, name="token_projection"
        )

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

    def layers(self):
        """Sublayers, by the BiLM attribute that holds them."""
        return {
            "char_cnn": self.char_cnn,
            "highway_layers": self.highway_layers,
            "word_embedding": self.word_embedding,
            "token_projection": self.token_projection,
        }

    def config(self):
        return {
            "characters": dict(self.characters),
            "words": None if self.words is None else dict(self.words),
            "word_embedding_dim": self.word_embedding_dim,
            "filters": [list(f) for f in self.filters],
            "char_embedding_dim": self.char_embedding_dim,
            "activation": self.activation,
            "num_highway_layers": self.num_highway_layers,
            "max_characters_per_token": self.max_characters_per_token,
            "deduplicate_tokens": self.deduplicate_tokens,
        }

    def build(self):
        self.char_cnn.build((None, None, self.max_characters_per_token))
        features = (None, None, self.char_cnn.output_dim)
        for highway in self.highway_layers:
            highway.build(features)
        width = self.char_cnn.output_dim
        if self.word_embedding is not None:
            self.word_embedding.build((None, None))
            width += self.word_embedding_dim
        self.token_projection.build((None, None, width))

    # === Inputs ===

    def check(self, ids):
        """`ids`, checked: integers `(batch, time, K)`, character ids in
        `0..rows of the char table`, word ids in `0..rows of the word
        table` (eagerly with NumPy, in a graph by assertions that the
        returned tensor depends on)."""
        try:
            dtype = keras.backend.standardize_dtype(ids.dtype)
        except (AttributeError, ValueError):
            dtype = type(ids).__name__
        shape = tuple(getattr(ids, "shape", ()))
        width = self.input_shape[0]
        if "int" not in dtype or len(shape) != 3 or shape[-1] != width:
            raise KerasElmoError(
                "An ELMoForManyLangs biLM takes integer ids (batch, time, "
                f"{width}); received dtype {dtype}, shape {shape}. Build "
                "them with bilm.encoder.batch_to_inputs(sentences), or pass "
                "token strings to ELMoEmbedding."
            )
        limits = np.full((width,), self.char_cnn.num_characters - 1, "int64")
        if self.words is not None:
            limits[0] = self.word_embedding.input_dim
        message = (
            "ELMoForManyLangs ids out of range (word ids must lie in "
            f"0..{limits[0]}, character ids in 0..{limits[-1]}); were they "
            "built for this model?"
        )
        values = host_values(ids)
        if values is not None:
            if values.size and (values.min() < 0 or np.any(values > limits)):
                raise KerasElmoError(message)
            return ids
        if not backend.is_tensorflow():
            return ids  # traced by jax.jit (see host_values)
        ids = tf.convert_to_tensor(ids)
        checks = [
            tf.debugging.assert_non_negative(ids, message=message),
            tf.debugging.assert_less_equal(
                ids, tf.constant(limits, ids.dtype), message=message
            ),
        ]
        with tf.control_dependencies(checks):
            return tf.identity(ids)

    def mask(self, ids):
        return ops.any(ops.not_equal(ids, 0), axis=-1)

    def boundaries(self):
        """The inputs of `<bos>` and `<eos>`."""
        return self.token_to_inputs(BOS), self.token_to_inputs(EOS)

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
                "tokens_to_inputs expects a tf.string tensor; received "
                f"dtype {tokens.dtype.name}."
            )
        ids = self._real_tokens_to_inputs(tokens)
        if sequence_length is None:
            is_token = tf.not_equal(tokens, "")
        else:
            positions = tf.range(tf.shape(tokens)[1])
            sequence_length = tf.cast(sequence_length, "int32")
            is_token = positions[None, :] < sequence_length[:, None]
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

    # === Token embeddings ===

    def encode(self, ids):
        """Token embeddings `(..., projection_dim)` of input rows `(..., K)`:
        char CNN and highway on the character ids, the word embedding in
        front (EFML's order), then the projection; with
        `deduplicate_tokens`, once per distinct token of the batch."""
        width = self.input_shape[0]
        shape = ops.shape(ids)
        x = ops.reshape(ids, (-1, width))
        index = None
        if self.deduplicate_tokens:
            # Distinct rows (tokens), and for each token the row it maps
            # to (not on JAX: see keras_elmo/layers/distinct_tokens.py).
            distinct = distinct_rows(x)
            if distinct is not None:
                x, index = distinct
        h = self.char_cnn(x[:, width - self.max_characters_per_token :])
        for highway in self.highway_layers:
            h = highway(h)
        if self.word_embedding is not None:
            words = self.word_embedding(ops.maximum(x[:, 0] - 1, 0))
            h = ops.concatenate([ops.cast(words, h.dtype), h], axis=-1)
        h = self.token_projection(h)
        h = gather_rows(h, index)
        return ops.reshape(h, (*shape[:-1], ops.shape(h)[-1]))
