"""What a SavedModel export serves (`ELMoServing`): raw text in, ELMo out,
nothing of keras_elmo needed (`savedmodel.export_savedmodel` writes it).

The SavedModel answers with the output names of the TF Hub ELMo module:

- signature `default`: input `sentences`, tf.string `[batch]`, untokenised
  (split in-graph at Unicode whitespace, as `str.split()` splits);
- signature `tokens`: inputs `tokens`, tf.string `[batch, max_len]` padded
  with `""`, and `sequence_len`, int32 `[batch]`;
- signature `token_ids` (only with a cached vocabulary, or for a
  word-input biLM): inputs `token_ids`, int32 `[batch, max_len]` (rows of
  the vocabulary), and `sequence_len`.

A word-input biLM (`token_encoder="words"`) carries its vocabulary as an
in-graph lookup table: tokens it lacks read as `<UNK>`.

Each returns `word_emb` `[B, T, P]`, `lstm_outputs1` ... `lstm_outputsL`
`[B, T, 2P]`, `elmo` `[B, T, 2P]` (the scalar mix), `default` `[B, 2P]` (the
mean of `elmo` over the real tokens) and `sequence_len` `[B]`; positions
past a sentence's end are zero. Everything is stateless.

It is a reusable SavedModel (the TF Hub convention): the loaded object is
callable, `obj(sentences)` or `obj({"tokens": ..., "sequence_len": ...})`,
with a `training` argument, and carries `variables`, `trainable_variables`
(the scalar-mix weights and `gamma`, the only variables saved as
trainable; the biLM weights are saved frozen) and `regularization_losses`
(none), so `hub.KerasLayer(path, trainable=True)` trains the mix. The
entry points are also attributes (`embed_sentences`, `embed_tokens`,
`embed_token_ids`); `__call__`, `embed_tokens` and `embed_token_ids` take
int32 or int64 lengths, the signatures int32 (as TF Hub's module).
"""

import numbers

import numpy as np
import tensorflow as tf

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_instance
from elmo_core.errors import check_strings
from elmo_core.formats.savedmodel_limits import DEFAULT_MAX_BATCH_TOKENS
from elmo_core.ids.vocabulary import check_vocabulary
from keras_elmo.corpus.bilm_dump import encode_tokens_in_batches
from keras_elmo.data.datasets import split_at_whitespace
from keras_elmo.data.word_ids import lookup_table
from keras_elmo.data.word_ids import tokens_to_word_ids
from keras_elmo.export.frozen_bilm import frozen_bilm
from keras_elmo.layers.scalar_mix import ScalarMix


def check_max_batch_tokens(max_batch_tokens):
    """`max_batch_tokens` as an int, once checked to be positive."""
    if (
        isinstance(max_batch_tokens, bool)
        or not isinstance(max_batch_tokens, numbers.Integral)
        or max_batch_tokens < 1
    ):
        raise KerasElmoError(
            "`max_batch_tokens` must be a positive integer: the largest "
            "request (batch x max_len token positions) the SavedModel "
            "serves.",
            "max_batch_tokens",
            received=max_batch_tokens,
        )
    return int(max_batch_tokens)


def _check_rank(tensor, name, layout):
    """`tensor`, once checked at run time to have the rank of `layout`.

    The signatures declare the rank, but a loaded signature still runs a
    request of another rank (TensorFlow falls back to the raw tensors).
    `tf.rank` would be folded to the declared rank, so the dimensions are
    counted from the run-time shape instead.
    """
    rank = layout.count(",") + 1
    dimensions = tf.where(tf.shape(tensor) >= 0)
    check = tf.debugging.assert_equal(
        tf.shape(dimensions, out_type=tf.int32)[0],
        rank,
        message=f"{name} must have shape {layout} (rank {rank}); the "
        "request's rank differs.",
    )
    with tf.control_dependencies([check]):
        return tf.identity(tensor)


# The inputs, with their ranks (`saved_model_cli show` prints them).
SENTENCES = tf.TensorSpec([None], tf.string, name="sentences")
TOKENS = tf.TensorSpec([None, None], tf.string, name="tokens")
TOKEN_IDS = tf.TensorSpec([None, None], tf.int32, name="token_ids")
# `sequence_len` dtypes: int32 (the signatures', as TF Hub's) and int64.
LENGTHS = tuple(
    tf.TensorSpec([None], dtype, name="sequence_len")
    for dtype in (tf.int32, tf.int64)
)


def _untracked(module, name, value):
    """Sets `module.name` without adding `value` to the object graph."""
    object.__setattr__(module, name, value)


def _not_trainable(next_creator, **kwargs):
    kwargs["trainable"] = False
    return next_creator(**kwargs)


def _check_bilm(bilm):
    from keras_elmo.layers.bilm import BiLM

    check_instance(
        bilm,
        BiLM,
        "bilm",
        expected="a keras_elmo.layers.BiLM (e.g. from keras_elmo.load_bilm)",
    )


def _frozen_copy(bilm):
    """The frozen copy of `bilm`, its TensorFlow variables saved with
    trainable=False themselves, so that a reloading Keras layer leaves
    them alone."""
    with tf.variable_creator_scope(_not_trainable):
        return frozen_bilm(bilm)


# A plain trackable object rather than tf.Module, so that `variables` and
# `trainable_variables` can be saved as attributes: the "reusable
# SavedModel" convention that TF Hub's KerasLayer reads. Private: tf.Module
# would replace it if it let those attributes be assigned.
_Trackable = tf.__internal__.tracking.AutoTrackable


class ELMoServing(_Trackable):
    """The exported module (see the module docstring).

    Args:
        bilm: a `keras_elmo.layers.BiLM`.
        vocabulary: optional list of str. Tokens whose embeddings are
            computed once and cached; in-vocabulary tokens then skip the
            char CNN and other tokens fall back to characters. For a
            word-input biLM, its vocabulary (required; list, path or
            `elmo_core.ids.Vocabulary`).
        max_batch_tokens: int. Refuse larger requests with an error.

    Example (the module before it is saved):

    >>> bilm = keras_elmo.load_bilm("tests/fixtures/bilm-tf/model")
    >>> serving = keras_elmo.export.ELMoServing(bilm)
    >>> out = serving(tf.constant(["Hello world", "Hi"]))
    >>> out["elmo"].shape, out["sequence_len"].numpy().tolist()
    (TensorShape([2, 2, 32]), [2, 1])
    >>> serving.max_batch_tokens == keras_elmo.export.DEFAULT_MAX_BATCH_TOKENS
    True
    """

    def __init__(
        self, bilm, vocabulary=None, max_batch_tokens=DEFAULT_MAX_BATCH_TOKENS
    ):
        super().__init__()
        _check_bilm(bilm)
        max_batch_tokens = check_max_batch_tokens(max_batch_tokens)
        # The Keras layers are kept out of the SavedModel's object graph
        # (set without tracking); only their TensorFlow variables are in
        # it, through the lists below. A tracked Keras variable is saved as
        # a second copy of its TensorFlow variable: the restored lists then
        # held copies that the functions did not read (no gradient reached
        # them), and TF1 loaders (saved_model_cli run) restored one copy
        # and read the other.
        _untracked(self, "bilm", _frozen_copy(bilm))
        self.num_layers = self.bilm.num_layers
        self.max_batch_tokens = max_batch_tokens
        width = 2 * self.bilm.projection_dim
        mix = ScalarMix(dtype="float32", name="elmo_scalar_mix")
        mix.build([(None, None, width)] * (self.num_layers + 1))
        _untracked(self, "scalar_mix", mix)
        self.trainable_variables = [
            mix.scalar_weights.value,
            mix.gamma.value,
        ]
        self.variables = [w.value for w in self.bilm.weights]
        self.variables += self.trainable_variables
        self.regularization_losses = []
        self.token_cache = None
        self.word_lookup = None
        self.embed_token_ids = None
        if self.bilm.encoder.needs_vocabulary:
            words = check_vocabulary(vocabulary, self.bilm.encoder)
            self.word_lookup = lookup_table(words)
            self._serve_ids(self._embed_word_ids)
        elif vocabulary is not None:
            vocabulary = check_strings(vocabulary, "vocabulary")
            if len(set(vocabulary)) != len(vocabulary):
                raise KerasElmoError(
                    "The cached vocabulary lists a token twice."
                )
            cache = np.concatenate(
                list(encode_tokens_in_batches(self.bilm, vocabulary))
                or [np.zeros((0, self.bilm.projection_dim), "float32")]
            )
            self.token_cache = tf.Variable(
                cache, trainable=False, name="token_cache"
            )
            self.variables.append(self.token_cache)
            self.vocabulary = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(vocabulary, tf.string),
                    tf.range(len(vocabulary), dtype=tf.int32),
                ),
                default_value=-1,
            )
            # Only a module with a cache has this entry point.
            self._serve_ids(self._embed_token_ids)

    # === Entry points (also the signatures) ===

    @tf.function(input_signature=[SENTENCES])
    def embed_sentences(self, sentences):
        sentences = _check_rank(sentences, "sentences", "[batch]")
        tokens = split_at_whitespace(sentences)
        lengths = tf.cast(tokens.row_lengths(), tf.int32)
        return self._outputs(tokens.to_tensor(""), lengths)

    @tf.function(input_signature=[TOKENS, LENGTHS[0]])
    def serve_tokens(self, tokens, sequence_len):
        tokens = _check_rank(tokens, "tokens", "[batch, max_len]")
        sequence_len = self._check_lengths(tokens, sequence_len)
        return self._outputs(tokens, sequence_len)

    # No input signature: traced at export for int32 and int64 lengths.
    @tf.function
    def embed_tokens(self, tokens, sequence_len):
        if sequence_len.dtype != tf.int32:
            # Checked in their own dtype (a huge int64 must not wrap
            # around), then served by the one int32 graph of the biLM.
            tokens = _check_rank(tokens, "tokens", "[batch, max_len]")
            sequence_len = self._check_lengths(tokens, sequence_len)
        return self.serve_tokens(tokens, sequence_len)

    @tf.function
    def __call__(self, inputs, training=False):
        """The reusable-SavedModel entry point (`hub.KerasLayer(path)`,
        `hub.load(path)(x)`): `inputs` is a tf.string `[batch]` of
        sentences, or a dict of `tokens` and `sequence_len` (int32 or
        int64). `training` changes nothing (the export has no dropout);
        the mix trains either way when its variables are trainable."""
        del training
        if isinstance(inputs, dict):
            return self.embed_tokens(inputs["tokens"], inputs["sequence_len"])
        return self.embed_sentences(inputs)

    def trace(self):
        """Traces every form of the polymorphic entry points, so that the
        SavedModel holds them (a SavedModel keeps only traced forms)."""
        for lengths in LENGTHS:
            self.embed_tokens.get_concrete_function(TOKENS, lengths)
            for training in (False, True):
                self.__call__.get_concrete_function(SENTENCES, training)
                inputs = {"tokens": TOKENS, "sequence_len": lengths}
                self.__call__.get_concrete_function(inputs, training)
            if self.embed_token_ids is not None:
                self.embed_token_ids.get_concrete_function(TOKEN_IDS, lengths)

    def signatures(self):
        """The serving signatures, named as TF Hub's ELMo module's."""
        signatures = {
            "default": self.embed_sentences,
            "tokens": self.serve_tokens,
        }
        if self.embed_token_ids is not None:
            signatures["token_ids"] = self.serve_token_ids
        return signatures

    def _serve_ids(self, embed):
        """Sets the token-id entry points around `embed`: `serve_token_ids`
        (int32 lengths, the signature) and `embed_token_ids` (int32 or
        int64 lengths, checked in their own dtype, then served by it)."""
        self.serve_token_ids = tf.function(
            embed, input_signature=[TOKEN_IDS, LENGTHS[0]]
        )

        def any_lengths(token_ids, sequence_len):
            if sequence_len.dtype != tf.int32:
                token_ids = _check_rank(
                    token_ids, "token_ids", "[batch, max_len]"
                )
                sequence_len = self._check_lengths(token_ids, sequence_len)
            return self.serve_token_ids(token_ids, sequence_len)

        self.embed_token_ids = tf.function(any_lengths)

    def _embed_token_ids(self, token_ids, sequence_len):
        token_ids = _check_rank(token_ids, "token_ids", "[batch, max_len]")
        sequence_len = self._check_lengths(token_ids, sequence_len)
        mask = self._mask(token_ids, sequence_len)
        ids = self._check_rows(token_ids, mask, tf.shape(self.token_cache)[0])
        embeddings = tf.gather(self.token_cache, ids)
        return self._from_embeddings(embeddings, mask, sequence_len)

    def _embed_word_ids(self, token_ids, sequence_len):
        token_ids = _check_rank(token_ids, "token_ids", "[batch, max_len]")
        sequence_len = self._check_lengths(token_ids, sequence_len)
        mask = self._mask(token_ids, sequence_len)
        rows = self._check_rows(token_ids, mask, self.bilm.vocabulary_size)
        # The biLM reads vocabulary row + 1; 0 is its padding id.
        ids = tf.where(mask, rows + 1, 0)
        return self._finish(self.bilm(ids, training=False), sequence_len)

    def _check_rows(self, token_ids, mask, size):
        """`token_ids` with 0 at padding, once checked to be vocabulary
        rows `0..size - 1` at the real tokens."""
        valid_ids = tf.boolean_mask(token_ids, mask)
        checks = [
            tf.debugging.assert_non_negative(
                valid_ids,
                message="token_ids must be >= 0 (rows of the vocabulary).",
            ),
            tf.debugging.assert_less(
                valid_ids,
                size,
                message="token_ids must be smaller than the size of the "
                "vocabulary.",
            ),
        ]
        with tf.control_dependencies(checks):
            return self._check_size(tf.where(mask, token_ids, 0))

    # === The computation ===

    def _check_lengths(self, tokens, sequence_len):
        """`sequence_len`, once checked against `tokens` (the checks run
        before anything that reads it)."""
        sequence_len = _check_rank(sequence_len, "sequence_len", "[batch]")
        shape = tf.shape(tokens, out_type=sequence_len.dtype)
        checks = [
            tf.debugging.assert_equal(
                tf.shape(sequence_len, out_type=sequence_len.dtype)[0],
                shape[0],
                message="sequence_len must have one entry per row of the "
                "batch.",
            ),
            tf.debugging.assert_non_negative(
                sequence_len, message="sequence_len must not be negative."
            ),
            tf.debugging.assert_less_equal(
                sequence_len,
                shape[1],
                message="sequence_len must not exceed the padded length "
                "(the second dimension of the tokens).",
            ),
        ]
        with tf.control_dependencies(checks):
            return tf.cast(sequence_len, tf.int32)

    def _mask(self, tokens, lengths):
        return tf.range(tf.shape(tokens)[1])[None, :] < lengths[:, None]

    def _outputs(self, tokens, lengths):
        tokens = self._check_size(tokens)
        if self.word_lookup is not None:
            ids = tokens_to_word_ids(tokens, self.word_lookup, lengths)
            return self._finish(self.bilm(ids, training=False), lengths)
        if self.token_cache is None:
            # The encoder's own string -> ids rule (bytes, or the char
            # vocabulary of an ELMoForManyLangs model).
            ids = self.bilm.encoder.tokens_to_inputs(tokens, None, lengths)
            return self._finish(self.bilm(ids, training=False), lengths)
        mask = self._mask(tokens, lengths)
        ids = self.vocabulary.lookup(tokens)
        embeddings = tf.gather(self.token_cache, tf.maximum(ids, 0))
        # Out-of-vocabulary tokens fall back to characters, each distinct
        # one through the char CNN once.
        unknown = tf.where((ids < 0) & mask)
        unknown_tokens = tf.gather_nd(tokens, unknown)[:, None]
        unknown_ids = self.bilm.encoder.tokens_to_inputs(
            unknown_tokens, None, tf.ones_like(unknown[:, 0], tf.int32)
        )
        computed = self.bilm.encode_tokens(unknown_ids)[:, 0]
        embeddings = tf.tensor_scatter_nd_update(embeddings, unknown, computed)
        return self._from_embeddings(embeddings, mask, lengths)

    def _from_embeddings(self, embeddings, mask, lengths):
        embeddings = embeddings * tf.cast(mask, embeddings.dtype)[..., None]
        outputs = self.bilm(
            {"token_embeddings": embeddings, "mask": mask}, training=False
        )
        return self._finish(outputs, lengths)

    def _check_size(self, tokens):
        """`tokens`, once checked to be no larger than the limit."""
        shape = tf.shape(tokens)
        check = tf.debugging.assert_less_equal(
            shape[0] * shape[1],
            self.max_batch_tokens,
            message=f"The request holds more than {self.max_batch_tokens} "
            "token positions (batch x max_len); split it into smaller "
            "batches (the limit is set at export with max_batch_tokens).",
        )
        with tf.control_dependencies([check]):
            return tf.identity(tokens)

    def _finish(self, outputs, lengths):
        layers = outputs["layer_outputs"]
        elmo = self.scalar_mix(layers, mask=outputs["mask"])
        count = tf.cast(tf.maximum(lengths, 1), elmo.dtype)[:, None]
        result = {
            "word_emb": outputs["token_embeddings"],
            "elmo": elmo,
            "default": tf.reduce_sum(elmo, axis=1) / count,
            "sequence_len": lengths,
        }
        for i in range(1, self.num_layers + 1):
            result[f"lstm_outputs{i}"] = layers[i]
        return result
