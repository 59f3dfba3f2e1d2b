"""The character token encoder (bilm-tf's char CNN)."""

import keras
from keras import ops

from elmo_core import characters
from elmo_core.characters import BOS_CHARACTER_IDS
from elmo_core.characters import EOS_CHARACTER_IDS
from elmo_core.characters import MAX_CHARACTERS_PER_TOKEN
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_flag
from elmo_core.errors import check_integer
from elmo_core.settings.limits import MAX_LAYERS
from keras_elmo.layers import backends
from keras_elmo.layers.char_cnn import DEFAULT_FILTERS
from keras_elmo.layers.token_encoders.character_stack import (
    build_character_stack,
)
from keras_elmo.layers.token_encoders.character_stack import character_stack
from keras_elmo.layers.token_encoders.character_stack import (
    character_stack_config,
)
from keras_elmo.layers.token_encoders.token_encoder import TokenEncoder
from keras_elmo.layers.token_encoders.token_encoder import (
    register_token_encoder,
)
from keras_elmo.layers.validation import check_character_ids


@register_token_encoder
class CharacterEncoder(TokenEncoder):
    """`token_encoder="characters"`: 50 character ids a token, through the
    char CNN, `num_highway_layers` highway layers and a projection (SPEC
    §2-6). Inputs `"character_ids"` int `(batch, time, 50)`; a token is
    present if any of its ids is non-zero.

    Args (as `BiLM` arguments): `filters`, `char_embedding_dim`,
    `activation`, `num_highway_layers`, `use_token_projection`,
    `max_characters_per_token`, `deduplicate_tokens` (see `BiLM`).
    """

    name = "characters"
    input_name = "character_ids"
    needs_vocabulary = False

    def __init__(
        self,
        projection_dim,
        dtype,
        filters=DEFAULT_FILTERS,
        char_embedding_dim=16,
        activation="relu",
        num_highway_layers=2,
        use_token_projection=None,
        max_characters_per_token=MAX_CHARACTERS_PER_TOKEN,
        deduplicate_tokens=True,
    ):
        super().__init__(projection_dim, dtype)
        self.num_highway_layers = check_integer(
            num_highway_layers,
            "num_highway_layers",
            minimum=0,
            maximum=MAX_LAYERS,
        )
        self.char_embedding_dim = check_integer(
            char_embedding_dim, "char_embedding_dim", minimum=1
        )
        self.activation = activation
        self.max_characters_per_token = check_integer(
            max_characters_per_token, "max_characters_per_token", minimum=1
        )
        self.deduplicate_tokens = check_flag(
            deduplicate_tokens, "deduplicate_tokens"
        )
        self.input_shape = (self.max_characters_per_token,)
        self.char_cnn, self.highway_layers = character_stack(
            filters=filters,
            char_embedding_dim=char_embedding_dim,
            activation=activation,
            num_highway_layers=num_highway_layers,
            max_characters_per_token=max_characters_per_token,
            dtype=dtype,
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
            **character_stack_config(self.char_cnn, self.highway_layers),
            "use_token_projection": self.use_token_projection,
            "max_characters_per_token": self.max_characters_per_token,
            "deduplicate_tokens": self.deduplicate_tokens,
        }

    def build(self):
        width = build_character_stack(self.char_cnn, self.highway_layers)
        features = (None, None, width)
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
            x = backends.encode_distinct(
                x,
                self.char_cnn_features,
                slack=self.char_cnn.widest_filter,
                finish=self.finish,
            )
        else:
            x = self.finish(self.char_cnn_features(x))
        return ops.reshape(x, (*shape[:-1], ops.shape(x)[-1]))

    def char_cnn_features(self, rows, characters=None):
        """The char CNN of rows `(N, 50)` (`characters`: see `CharCNN`)."""
        return self.char_cnn(rows, characters=characters)

    def finish(self, x):
        """Highway layers and projection of char CNN features `(N, F)`."""
        for highway in self.highway_layers:
            x = highway(x)
        if self.token_projection is not None:
            x = self.token_projection(x)
        return x

    def batch_to_inputs(self, sentences, vocabulary=None):
        """NumPy inputs of tokenised sentences (the vocabulary is unused)."""
        return characters.batch_to_ids(sentences)

    def tokens_to_inputs(self, tokens, table=None, sequence_length=None):
        """In-graph inputs of a `tf.string` `(batch, time)` token tensor."""
        from keras_elmo.data.character_ids import tokens_to_char_ids

        return tokens_to_char_ids(tokens, sequence_length=sequence_length)
