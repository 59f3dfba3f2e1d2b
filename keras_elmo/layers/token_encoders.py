"""The token encoders a `BiLM` can read its tokens with.

A token encoder turns the input of one token (50 character ids, or one word
id) into its context-insensitive embedding `e` of `projection_dim`. Each
kind is a small plain object that holds every fact about its input in one
place: the input name, shape and dtype, the `<S>`/`</S>` inputs, the mask
rule, the checks, the encode function, and how text becomes its input. It
creates its sublayers, and the `BiLM` sets them as its own attributes, so
their weights live where they always have (`bi_lm/char_cnn/...`).

`TOKEN_ENCODERS` maps the `BiLM(token_encoder=...)` names to the kinds; a
new kind is one class with the same members and one entry there.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_elmo import characters
from keras_elmo.characters import BOS_CHARACTER_IDS
from keras_elmo.characters import EOS_CHARACTER_IDS
from keras_elmo.data.character_ids import tokens_to_char_ids
from keras_elmo.data.vocabulary import BOS
from keras_elmo.data.vocabulary import EOS
from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.data.vocabulary import tokens_to_word_ids
from keras_elmo.errors import KerasElmoError
from keras_elmo.layers.char_cnn import CharCNN
from keras_elmo.layers.highway import Highway
from keras_elmo.layers.many_langs_encoder import ManyLangsEncoder
from keras_elmo.layers.validation import check_character_ids


class CharacterEncoder:
    """`token_encoder="characters"`: 50 character ids a token, through the
    char CNN, `num_highway_layers` highway layers and a projection (SPEC
    §2-6). Inputs `"character_ids"` int `(batch, time, 50)`; a token is
    present if any of its ids is non-zero."""

    name = "characters"
    input_name = "character_ids"
    # The BiLM constructor arguments of this kind (its part of the config).
    arguments = (
        "filters",
        "char_embedding_dim",
        "activation",
        "num_highway_layers",
        "use_token_projection",
        "max_characters_per_token",
        "deduplicate_tokens",
    )
    needs_vocabulary = False

    def __init__(
        self,
        projection_dim,
        dtype,
        filters,
        char_embedding_dim,
        activation,
        num_highway_layers,
        use_token_projection,
        max_characters_per_token,
        deduplicate_tokens,
    ):
        self.projection_dim = projection_dim
        self.num_highway_layers = int(num_highway_layers)
        self.char_embedding_dim = int(char_embedding_dim)
        self.activation = activation
        self.max_characters_per_token = int(max_characters_per_token)
        self.deduplicate_tokens = bool(deduplicate_tokens)
        self.input_shape = (self.max_characters_per_token,)
        self.char_cnn = CharCNN(
            filters=filters,
            char_embedding_dim=char_embedding_dim,
            activation=activation,
            max_characters_per_token=max_characters_per_token,
            dtype=dtype,
            name="char_cnn",
        )
        self.filters = self.char_cnn.filters
        num_features = self.char_cnn.output_dim
        if use_token_projection is None:
            use_token_projection = num_features != projection_dim
        elif not use_token_projection and num_features != projection_dim:
            raise KerasElmoError(
                "`use_token_projection=False` needs the char CNN output "
                f"({num_features} features) to equal projection_dim "
                f"({projection_dim})."
            )
        self.use_token_projection = bool(use_token_projection)
        self.highway_layers = [
            Highway(dtype=dtype, name=f"highway_{k}")
            for k in range(self.num_highway_layers)
        ]
        self.token_projection = None
        if self.use_token_projection:
            self.token_projection = keras.layers.Dense(
                projection_dim,
                kernel_initializer=keras.initializers.RandomNormal(
                    stddev=(1.0 / num_features) ** 0.5
                ),
                dtype=dtype,
                name="token_projection",
            )

    def layers(self):
        """Sublayers, by the BiLM attribute that holds them."""
        return {
            "char_cnn": self.char_cnn,
            "highway_layers": self.highway_layers,
            "token_projection": self.token_projection,
        }

    def config(self):
        return {
            "filters": [list(f) for f in self.filters],
            "char_embedding_dim": self.char_embedding_dim,
            "activation": self.activation,
            "num_highway_layers": self.num_highway_layers,
            "use_token_projection": self.use_token_projection,
            "max_characters_per_token": self.max_characters_per_token,
            "deduplicate_tokens": self.deduplicate_tokens,
        }

    def build(self):
        self.char_cnn.build((None, None, self.max_characters_per_token))
        features = (None, None, self.char_cnn.output_dim)
        for highway in self.highway_layers:
            highway.build(features)
        if self.token_projection is not None:
            self.token_projection.build(features)

    def check(self, ids):
        """`ids`, checked (dtype, shape, range; see `check_character_ids`)."""
        return check_character_ids(ids, self.max_characters_per_token)

    def mask(self, ids):
        return characters.token_mask(ids, ops)

    def boundaries(self):
        """The inputs of `<S>` and `</S>`."""
        return BOS_CHARACTER_IDS, EOS_CHARACTER_IDS

    def encode(self, ids):
        """Token embeddings `(..., projection_dim)` of character ids
        `(..., 50)`.

        With `deduplicate_tokens`, the encoder runs once per distinct token
        of the batch: text repeats its words (a batch of 3,000 tokens holds
        about 1,000 distinct ones), padding tokens are all alike, and the
        encoder costs as much as the LSTMs.
        """
        shape = ops.shape(ids)
        x = ops.reshape(ids, (-1, self.max_characters_per_token))
        if self.deduplicate_tokens:
            # Distinct rows (tokens), and for each token the row it maps to.
            x, index = tf.raw_ops.UniqueV2(x=x, axis=[0])
            x = tf.ensure_shape(x, (None, self.max_characters_per_token))
        x = self.char_cnn(x)
        for highway in self.highway_layers:
            x = highway(x)
        if self.token_projection is not None:
            x = self.token_projection(x)
        if self.deduplicate_tokens:
            x = ops.take(x, index, axis=0)
        return ops.reshape(x, (*shape[:-1], ops.shape(x)[-1]))

    def batch_to_inputs(self, sentences, vocabulary=None):
        """NumPy inputs of tokenised sentences (the vocabulary is unused)."""
        return characters.batch_to_ids(sentences)

    def tokens_to_inputs(self, tokens, table=None, sequence_length=None):
        """In-graph inputs of a `tf.string` `(batch, time)` token tensor."""
        return tokens_to_char_ids(tokens, sequence_length=sequence_length)


class WordEncoder:
    """`token_encoder="words"`: one id a token, looked up in a table of
    `vocabulary_size x projection_dim` (bilm-tf's word-input biLM).

    Ids are vocabulary line + 1: 0 is the padding token (a zero vector and
    a False mask; the table has no row for it), `<S>` is 1 and `</S>` is 2
    (the first two lines of every biLM vocabulary). Inputs `"token_ids"`
    int `(batch, time)`; a token is present if its id is non-zero.
    """

    name = "words"
    input_name = "token_ids"
    arguments = ("vocabulary_size",)
    needs_vocabulary = True
    input_shape = ()

    def __init__(self, projection_dim, dtype, vocabulary_size):
        if vocabulary_size is None or int(vocabulary_size) < 3:
            raise KerasElmoError(
                "A word-input BiLM (token_encoder='words') needs "
                "`vocabulary_size`, the number of vocabulary lines (>= 3: "
                f"<S>, </S>, <UNK>, ...). Received: vocabulary_size="
                f"{vocabulary_size}"
            )
        self.projection_dim = projection_dim
        self.vocabulary_size = int(vocabulary_size)
        # bilm-tf creates the table with TensorFlow's default initializer.
        self.word_embedding = keras.layers.Embedding(
            self.vocabulary_size,
            projection_dim,
            embeddings_initializer="glorot_uniform",
            dtype=dtype,
            name="word_embedding",
        )

    def layers(self):
        return {"word_embedding": self.word_embedding}

    def config(self):
        return {"vocabulary_size": self.vocabulary_size}

    def build(self):
        self.word_embedding.build((None, None))

    def check(self, ids):
        """`ids`, checked: integers `(batch, time)` in
        `0..vocabulary_size` (eagerly with NumPy, in a graph by assertions
        that the returned tensor depends on)."""
        try:
            dtype = keras.backend.standardize_dtype(ids.dtype)
        except (AttributeError, ValueError):
            dtype = type(ids).__name__
        shape = tuple(getattr(ids, "shape", ()))
        if "int" not in dtype or len(shape) != 2:
            raise KerasElmoError(
                "A word-input BiLM takes token ids: an integer tensor (batch, "
                f"time); received dtype {dtype}, shape {shape}. Build them "
                "with keras_elmo.data.Vocabulary(...).batch_to_ids(sentences),"
                " or pass token strings to ELMoEmbedding with its vocabulary."
            )
        message = (
            f"token ids must lie in 0..{self.vocabulary_size} (vocabulary "
            "line + 1; 0 is the padding token); found a value outside that "
            "range. Is the vocabulary the one of this biLM?"
        )
        if tf.executing_eagerly() and not isinstance(ids, tf.Variable):
            values = np.asarray(ids)
            if values.size and (
                values.min() < 0 or values.max() > self.vocabulary_size
            ):
                raise KerasElmoError(
                    f"{message} Received min {values.min()}, max "
                    f"{values.max()}."
                )
            return ids
        ids = tf.convert_to_tensor(ids)
        checks = [
            tf.debugging.assert_non_negative(ids, message=message),
            tf.debugging.assert_less_equal(
                ids,
                tf.constant(self.vocabulary_size, ids.dtype),
                message=message,
            ),
        ]
        with tf.control_dependencies(checks):
            return tf.identity(ids)

    def mask(self, ids):
        return ops.not_equal(ids, 0)

    def boundaries(self):
        return np.int32(1), np.int32(2)

    def encode(self, ids):
        """Rows `id - 1` of the table, zeros for id 0: `(..., P)`."""
        ids = ops.cast(ids, "int32")
        x = self.word_embedding(ops.maximum(ids - 1, 0))
        return x * ops.cast(ops.not_equal(ids, 0), x.dtype)[..., None]

    def batch_to_inputs(self, sentences, vocabulary=None):
        return check_vocabulary(vocabulary, self).batch_to_ids(sentences)

    def tokens_to_inputs(self, tokens, table=None, sequence_length=None):
        return tokens_to_word_ids(tokens, table, sequence_length)


def check_vocabulary(vocabulary, encoder, source=None):
    """The `Vocabulary` of a word-input encoder, checked against it.

    Args:
        vocabulary: a `keras_elmo.data.Vocabulary`, a list of token strings
            or the path of a vocabulary file.
        encoder: the `WordEncoder` it is for (its `vocabulary_size`), or
            None to check the layout only.
        source: str, what to call the vocabulary in messages.

    Raises `KerasElmoError` when it is missing, lacks `<S>`, `</S>` or
    `<UNK>`, does not start with `<S>`, `</S>`, or has another size than
    the table.
    """
    if vocabulary is None:
        raise KerasElmoError(
            "A word-input biLM needs its vocabulary (the vocab.txt it was "
            "trained with, one token a line) to turn words into ids; pass "
            "vocabulary=..."
        )
    if isinstance(vocabulary, str):
        source = source or f"Vocabulary file {vocabulary}"
        vocabulary = Vocabulary.from_file(vocabulary)
    elif not isinstance(vocabulary, Vocabulary):
        vocabulary = Vocabulary(vocabulary, source=source or "the vocabulary")
    source = source or "the vocabulary"
    if vocabulary.tokens[:2] != [BOS, EOS]:
        raise KerasElmoError(
            f"{source} starts with {vocabulary.tokens[:2]}; a word-input "
            f"biLM reads {BOS} as id 1 and {EOS} as id 2, so they must be "
            "its first two lines (as in vocabularies built by bilm-tf or "
            "`keras-elmo train --build-vocab`). Move them to the top (the "
            "embedding table rows must move with them)."
        )
    if encoder is not None and len(vocabulary) != encoder.vocabulary_size:
        raise KerasElmoError(
            f"{source} has {len(vocabulary):,} tokens but the biLM's word "
            f"table has {encoder.vocabulary_size:,} rows (one per "
            "vocabulary line); pass the vocabulary the biLM was trained "
            "with."
        )
    return vocabulary


TOKEN_ENCODERS = {
    CharacterEncoder.name: CharacterEncoder,
    WordEncoder.name: WordEncoder,
    ManyLangsEncoder.name: ManyLangsEncoder,
}
