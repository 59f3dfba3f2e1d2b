import keras
from keras import ops

from elmo_core import characters
from elmo_core.characters import DEFAULT_FILTERS
from elmo_core.characters import NUM_CHARACTER_IDS
from elmo_core.characters import check_filters
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_integer
from elmo_core.settings.limits import MAX_LAYERS
from keras_elmo.layers import backends
from keras_elmo.layers.validation import check_character_ids

_ACTIVATIONS = ("relu", "tanh")


@keras.saving.register_keras_serializable(package="keras_elmo")
class CharCNN(keras.layers.Layer):
    """Character-level CNN that turns 50 character ids into one token vector.

    Each character id is embedded (id 0, the padding token, embeds to zeros;
    every other id, the in-token padding character included, has a learned
    vector), each filter width is convolved over the 50 positions (VALID,
    stride 1), max-pooled over all positions and passed through the
    activation. The pooled features of all widths are concatenated. This is
    the first stage of the ELMo token encoder.

    Masking: computes the token mask itself (a token is present if any of its
    character ids is non-zero) and returns it from `compute_mask`. Outputs at
    padding tokens are not zeroed.

    Args:
        filters: list of `[width, num_filters]` pairs. Defaults to the
            filters of the published ELMo models (2048 features).
        char_embedding_dim: int. Size of each character embedding.
            Defaults to `16`.
        activation: `"relu"` or `"tanh"`. Defaults to `"relu"`.
        max_characters_per_token: int. Length of the character id axis.
            Defaults to `50`.
        num_characters: int. Number of ids, the padding token 0 included
            (the table has `num_characters - 1` rows). Defaults to `262`,
            the byte ids; ELMoForManyLangs models have their own character
            vocabularies.

    Call arguments:
        inputs: int tensor `(..., max_characters_per_token)` of character ids
            in `0..num_characters - 1`.
        characters: int or None. Read only the first `characters`
            positions of each token (at least the widest filter). The
            result is the same when every token's ids are constant from
            position `characters - widest filter` on: a window of those
            ids has one value wherever it starts. The backends cut short
            tokens this way (`layers/backends/jax_tokens.py`, and
            `tensorflow_backend.encode_distinct`, with a scalar tensor).

    Returns:
        Tensor `(..., sum(num_filters))`.

    Example:

    >>> layer = keras_elmo.layers.CharCNN(
    ...     filters=[[1, 4], [2, 8]], char_embedding_dim=4)
    >>> ids = keras_elmo.batch_to_ids([["Hello", "world"]])
    >>> layer(ids).shape
    TensorShape([1, 2, 12])

    Reference:
        Peters et al. 2018, "Deep contextualized word representations";
        Kim et al. 2016, "Character-Aware Neural Language Models".
    """

    def __init__(
        self,
        filters=DEFAULT_FILTERS,
        char_embedding_dim=16,
        activation="relu",
        max_characters_per_token=50,
        num_characters=NUM_CHARACTER_IDS,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_choice(activation, "activation", choices=_ACTIVATIONS)
        self.num_characters = check_integer(
            num_characters, "num_characters", minimum=2
        )
        self.max_characters_per_token = check_integer(
            max_characters_per_token, "max_characters_per_token", minimum=1
        )
        self.filters = check_filters(filters, self.max_characters_per_token)
        # One convolution layer per filter width.
        check_integer(
            len(self.filters),
            where="the number of `filters`",
            minimum=1,
            maximum=MAX_LAYERS,
        )
        self.char_embedding_dim = check_integer(
            char_embedding_dim, "char_embedding_dim", minimum=1
        )
        self.activation = activation
        self.supports_masking = True
        self.output_dim = sum(n for _, n in self.filters)

    def build(self, input_shape):
        # Row r embeds id r + 1, exactly the layout of the official
        # `char_embed` (261, d); id 0 is mapped to zeros in `call`.
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.num_characters - 1, self.char_embedding_dim),
            initializer=keras.initializers.RandomUniform(-1.0, 1.0),
        )
        self.kernels = []
        self.biases = []
        for i, (width, num) in enumerate(self.filters):
            # Kernel (width, char_embedding_dim, num), used as a
            # cross-correlation over the character axis.
            # bilm-tf's initialisation, which suits each activation.
            if self.activation == "relu":
                stddev = (1.0 / (width * self.char_embedding_dim)) ** 0.5
                initializer = keras.initializers.RandomNormal(stddev=stddev)
            else:
                initializer = keras.initializers.RandomUniform(-0.05, 0.05)
            self.kernels.append(
                self.add_weight(
                    name=f"kernel_{i}",
                    shape=(width, self.char_embedding_dim, num),
                    initializer=initializer,
                )
            )
            self.biases.append(
                self.add_weight(
                    name=f"bias_{i}", shape=(num,), initializer="zeros"
                )
            )

    def call(self, inputs, characters=None):
        ids = check_character_ids(
            inputs,
            self.max_characters_per_token,
            rank=None,
            max_id=self.num_characters - 1,
        )
        ids = ops.cast(ids, "int32")
        batch_shape = ops.shape(ids)[:-1]
        ids = ops.reshape(ids, (-1, self.max_characters_per_token))
        if characters is not None:
            ids = ids[:, : self._characters(characters)]
        # One padding token in front: convolutions of an empty batch give
        # wrongly shaped results in graph mode, and one row costs nothing.
        ids = ops.pad(ids, [[1, 0], [0, 0]])
        # Gathering from the (261, d) table keeps the gradient sparse.
        # The clip keeps the gather in bounds where assertions do not run
        # (XLA drops them); elsewhere the ids were checked above.
        rows = ops.clip(ids - 1, 0, self.num_characters - 2)
        x = ops.take(self.embeddings, rows, axis=0)
        x = x * ops.cast(ids > 0, x.dtype)[..., None]
        pooled = []
        for kernel, bias in zip(self.kernels, self.biases):
            conv = backends.valid_convolution(x, kernel)
            # max_t(conv_t + b) == max_t(conv_t) + b exactly, and is cheaper.
            pooled.append(ops.max(conv, axis=1) + bias)
        h = ops.concatenate(pooled, axis=-1)[1:]
        h = ops.relu(h) if self.activation == "relu" else ops.tanh(h)
        return ops.reshape(h, (*batch_shape, self.output_dim))

    def _characters(self, characters):
        if ops.is_tensor(characters):
            # A backend's own cut (`backends.encode_distinct`), within the
            # bounds by construction.
            return characters
        widest = self.widest_filter
        if not widest <= int(characters) <= self.max_characters_per_token:
            raise KerasElmoError(
                f"`characters` must lie in {widest}..."
                f"{self.max_characters_per_token} (the widest filter .. "
                "the token length).",
                "characters",
                received=characters,
            )
        return int(characters)

    @property
    def widest_filter(self):
        """The widest filter: the `slack` of a cut (see `characters`)."""
        return max(width for width, _ in self.filters)

    def compute_mask(self, inputs, mask=None):
        return characters.token_mask(inputs, ops)

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.output_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "filters": [list(f) for f in self.filters],
                "char_embedding_dim": self.char_embedding_dim,
                "activation": self.activation,
                "max_characters_per_token": self.max_characters_per_token,
                "num_characters": self.num_characters,
            }
        )
        return config
