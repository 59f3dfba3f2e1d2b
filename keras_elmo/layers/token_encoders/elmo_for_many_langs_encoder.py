"""The token encoder of ELMoForManyLangs biLMs (`token_encoder=
"elmo_for_many_langs"`): EFML's char CNN over its own character
vocabulary, with its optional word table. The string-to-id rules live in
`elmo_core.ids.elmo_for_many_langs_ids` (on the host) and
`keras_elmo.data.elmo_for_many_langs_ids` (in a TensorFlow graph).
"""

import keras
import numpy as np
from keras import ops

from elmo_core.errors import KerasElmoError
from elmo_core.errors import tensor
from elmo_core.ids.elmo_for_many_langs_ids import BOS
from elmo_core.ids.elmo_for_many_langs_ids import CHARACTER_SPECIALS
from elmo_core.ids.elmo_for_many_langs_ids import EOS
from elmo_core.ids.elmo_for_many_langs_ids import WORD_SPECIALS
from elmo_core.ids.elmo_for_many_langs_ids import ELMoForManyLangsIds
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

# Re-exported: the formats reader and tests take them from here.
__all__ = [
    "CHARACTER_SPECIALS",
    "WORD_SPECIALS",
    "ELMoForManyLangsEncoder",
]


@register_token_encoder
class ELMoForManyLangsEncoder(TokenEncoder):
    """`token_encoder="elmo_for_many_langs"`: EFML's character-vocabulary
    token encoder, with its optional word table (see
    `keras_elmo.data.elmo_for_many_langs_ids` for the id rules).

    The characters go through a char CNN over a table of
    `max(characters.values()) + 1` learned rows, the highway layers and,
    after the word embedding is put in front of them, the projection to
    `projection_dim`. Inputs `"elmo_for_many_langs_ids"` int
    `(batch, time, K)`; a token is present if any of its ids is non-zero.
    Build them with `batch_to_inputs` (NumPy) or `tokens_to_inputs`
    (in-graph, from strings), which need nothing but the encoder.

    Args (as `BiLM` arguments): `characters`, `words`,
    `word_embedding_dim` (the model's vocabularies and word table width;
    `keras_elmo.load_bilm` of a model folder fills them in), and the
    character stack's `filters`, `char_embedding_dim`, `activation`,
    `num_highway_layers`, `max_characters_per_token`, `deduplicate_tokens`.
    """

    name = "elmo_for_many_langs"
    # The names saved before keras_elmo spelled it one way.
    aliases = ("elmoformanylangs",)
    input_name = "elmo_for_many_langs_ids"
    input_aliases = ("efml_ids",)
    needs_vocabulary = False

    def __init__(
        self,
        projection_dim,
        dtype,
        characters=None,
        words=None,
        word_embedding_dim=None,
        filters=DEFAULT_FILTERS,
        char_embedding_dim=16,
        activation="relu",
        num_highway_layers=2,
        max_characters_per_token=50,
        deduplicate_tokens=True,
    ):
        super().__init__(projection_dim, dtype)
        if words is None and word_embedding_dim:
            raise KerasElmoError(
                "`word_embedding_dim` needs `words`, the word vocabulary.",
                "word_embedding_dim",
                received=word_embedding_dim,
            )
        if words is not None and (
            word_embedding_dim is None or int(word_embedding_dim) < 1
        ):
            raise KerasElmoError(
                "`words` needs `word_embedding_dim` >= 1 (the width of "
                "the word table).",
                "word_embedding_dim",
                received=word_embedding_dim,
            )
        self.ids = ELMoForManyLangsIds(
            characters, words, max_characters_per_token
        )
        self.graph_ids = None  # made on the first graph call
        self.characters = self.ids.characters
        self.words = self.ids.words
        self.word_embedding_dim = (
            None if self.words is None else int(word_embedding_dim)
        )
        self.max_characters_per_token = self.ids.max_characters_per_token
        self.input_shape = self.ids.input_shape
        self.num_highway_layers = int(num_highway_layers)
        self.char_embedding_dim = int(char_embedding_dim)
        self.activation = activation
        self.deduplicate_tokens = bool(deduplicate_tokens)

        # === Sublayers (set on the BiLM) ===
        num_rows = max(self.characters.values()) + 1
        self.char_cnn, self.highway_layers = character_stack(
            filters,
            char_embedding_dim,
            activation,
            num_highway_layers,
            self.max_characters_per_token,
            dtype,
            num_characters=num_rows + 1,
        )
        self.filters = self.char_cnn.filters
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
            **character_stack_config(self.char_cnn, self.highway_layers),
            "max_characters_per_token": self.max_characters_per_token,
            "deduplicate_tokens": self.deduplicate_tokens,
        }

    def build(self):
        width = build_character_stack(self.char_cnn, self.highway_layers)
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
                f"{width}). Build them with bilm.encoder.batch_to_inputs("
                "sentences), or pass token strings to ELMoEmbedding.",
                received=tensor(dtype, shape),
            )
        limits = np.full((width,), self.char_cnn.num_characters - 1, "int64")
        if self.words is not None:
            limits[0] = self.word_embedding.input_dim
        message = (
            "ELMoForManyLangs ids out of range (word ids must lie in "
            f"0..{limits[0]}, character ids in 0..{limits[-1]}); were they "
            "built for this model?"
        )
        return backends.checked_range(ids, limits, message)

    def mask(self, ids):
        return ops.any(ops.not_equal(ids, 0), axis=-1)

    def boundaries(self):
        """The inputs of `<bos>` and `<eos>`."""
        return self.token_to_inputs(BOS), self.token_to_inputs(EOS)

    def token_to_inputs(self, token):
        """The input row (int32, shifted ids) of one token string."""
        return self.ids.token_to_inputs(token)

    def batch_to_inputs(self, sentences, vocabulary=None):
        """NumPy inputs `(batch, time, K)` of tokenised sentences (see
        `ELMoForManyLangsIds.batch_to_inputs`; no vocabulary needed)."""
        return self.ids.batch_to_inputs(sentences)

    def tokens_to_inputs(self, tokens, table=None, sequence_length=None):
        """In-graph inputs of a `tf.string` token tensor (see
        `ELMoForManyLangsGraphIds.tokens_to_inputs`; the table is unused)."""
        if self.graph_ids is None:
            from keras_elmo.data.elmo_for_many_langs_ids import (
                ELMoForManyLangsGraphIds,
            )

            self.graph_ids = ELMoForManyLangsGraphIds(self.ids)
        return self.graph_ids.tokens_to_inputs(
            tokens, sequence_length=sequence_length
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
        if self.deduplicate_tokens:
            slack = self.char_cnn.widest_filter
            h = backends.encode_distinct(x, self._encode_rows, slack)
        else:
            h = self._encode_rows(x)
        return ops.reshape(h, (*shape[:-1], ops.shape(h)[-1]))

    def _encode_rows(self, x, width=None):
        """Embeddings of input rows `(N, K)`; `width` cuts the rows (the
        word id column and the characters after it: see `CharCNN`)."""
        offset = self.input_shape[0] - self.max_characters_per_token
        characters = None if width is None else width - offset
        h = self.char_cnn(x[:, offset:], characters=characters)
        for highway in self.highway_layers:
            h = highway(h)
        if self.word_embedding is not None:
            words = self.word_embedding(ops.maximum(x[:, 0] - 1, 0))
            h = ops.concatenate([ops.cast(words, h.dtype), h], axis=-1)
        return self.token_projection(h)
