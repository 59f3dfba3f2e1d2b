import keras
import numpy as np
from keras import ops

from elmo_core.errors import Described
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_fraction
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.ids.host_ids import host_inputs
from elmo_core.settings.limits import MAX_LAYERS
from keras_elmo.layers import backends
from keras_elmo.layers.bilm_states import add_state_variables
from keras_elmo.layers.bilm_states import read_states
from keras_elmo.layers.bilm_states import write_states
from keras_elmo.layers.bilm_windows import is_window_batch
from keras_elmo.layers.bilm_windows import window_call
from keras_elmo.layers.keras_export import refuse_keras_export
from keras_elmo.layers.projected_lstm import ProjectedLSTM
from keras_elmo.layers.projected_lstm import run_lstms
from keras_elmo.layers.token_encoders import get_token_encoder
from keras_elmo.layers.token_encoders.token_encoder import take_arguments
from keras_elmo.layers.validation import check_batch_structure


def _checked_sizes(units, projection_dim, num_layers, cell_clip, proj_clip):
    """`(units, projection_dim, num_layers)` as ints, once checked with the
    clips: positive sizes, at most `MAX_LAYERS` layers, no projection
    wider than the LSTM, clips >= 0 or None."""
    units = check_integer(units, "units", minimum=1)
    projection_dim = check_integer(projection_dim, "projection_dim", minimum=1)
    # Each LSTM layer is a Keras layer made by the BiLM
    # (elmo_core/settings/limits.py).
    num_layers = check_integer(
        num_layers, "num_layers", minimum=1, maximum=MAX_LAYERS
    )
    for name, clip in (("cell_clip", cell_clip), ("proj_clip", proj_clip)):
        if clip is not None:
            check_number(clip, name, minimum=0.0)
    if projection_dim > units:
        raise KerasElmoError(
            "`projection_dim` must not exceed `units` (the LSTM output is "
            f"projected down, or used as is when they are equal; `units` is "
            f"{units}).",
            "projection_dim",
            received=projection_dim,
        )
    return units, projection_dim, num_layers


@keras.saving.register_keras_serializable(package="keras_elmo")
class BiLM(keras.layers.Layer):
    """The ELMo bidirectional language model: token encoder plus biLSTMs.

    Each token's 50 character ids go through the token encoder (`CharCNN`,
    `num_highway_layers` `Highway` layers, a linear projection to
    `projection_dim`), giving a context-insensitive token embedding `e`;
    with `token_encoder="words"`, each token is instead one word id looked
    up in a `vocabulary_size x projection_dim` table (bilm-tf's word-input
    biLM; ids are vocabulary line + 1, 0 the padding token).
    `num_layers` forward and `num_layers` backward `ProjectedLSTM` layers
    then read the sentence, the backward ones from its last token to its
    first. The layer wraps each sentence in `<S> ... </S>` itself and strips
    the boundaries from every output.

    Outputs, all of length `time` (the input's): layer 0 is `[e, e]` and
    layer `l` the concatenated forward and backward outputs of LSTM layer
    `l`, each `2 * projection_dim` wide; with `use_skip_connections`, layers
    `l >= 1` add their input to their output. Positions past a sentence's
    end are zero.

    Stateless by default: every sentence starts from a zero LSTM state, so a
    sentence gets the same output whatever else is in the batch. With
    `stateful=True` the layer keeps the final LSTM state of each batch row
    and starts row `r` of the next call from it, exactly like the original
    bilm-tf (rows up to `max_batch_size`; `reset_states()` zeros them).

    Masking: computes the token mask from the character ids (a token is
    present if any of its ids is non-zero; with word ids, if its id is
    non-zero) and returns it as `"mask"`. The mask must mark a prefix of
    each row.

    Args:
        filters: list of `[width, num_filters]` for the char CNN. Defaults to
            the published ELMo filters (2048 features).
        char_embedding_dim: int. Defaults to `16`.
        activation: `"relu"` or `"tanh"`, the char CNN activation. Defaults
            to `"relu"`.
        num_highway_layers: int. Defaults to `2`.
        units: int. LSTM cells per layer and direction. Defaults to `4096`.
        projection_dim: int. Size of token embeddings and LSTM outputs; the
            LSTM output is projected from `units` when smaller. Defaults to
            `512`.
        num_layers: int. LSTM layers per direction. Defaults to `2`.
        cell_clip: float or None. Defaults to `3.0`.
        proj_clip: float or None. Defaults to `3.0`.
        use_skip_connections: bool. Defaults to `True`.
        use_token_projection: bool or None. Project the highway output to
            `projection_dim`. None means "when the sizes differ", which is
            what bilm-tf does; some files keep the projection even when the
            sizes are equal. Defaults to `None`.
        dropout: float. Dropout on the input of every LSTM layer in
            training (0.1 in the original recipe). Defaults to `0.0`.
        stateful: bool. Carry LSTM state across calls per batch row.
            Defaults to `False`.
        max_batch_size: int. Rows of carried state when `stateful`.
            Defaults to `128`.
        max_characters_per_token: int. Defaults to `50`.
        deduplicate_tokens: bool. Run the token encoder once per distinct
            token of a batch (same results, much less work on real text).
            On JAX inside `jax.jit` too (sorted rows, in chunks that skip
            the unused rest: `layers/backends/jax_tokens.py`). Under
            TensorFlow's XLA (`jit_compile=True`) it works but saves
            nothing: XLA sizes the distinct tokens for the worst case.
            Defaults to `True`.
        token_encoder: `"characters"`, `"words"` or `"elmo_for_many_langs"`
            (or a kind registered with
            `keras_elmo.layers.token_encoders.register_token_encoder`),
            how tokens are read. Defaults to `"characters"`.
        **kwargs: the token encoder's arguments, passed through to it (the
            arguments from `filters` to `deduplicate_tokens` above are the
            characters kind's, which the ELMoForManyLangs kind shares but
            for `use_token_projection`; an argument of another kind is an
            error), then `keras.layers.Layer` arguments (`name`, `dtype`).
        vocabulary_size: int. Rows of the word table (vocabulary lines,
            `<S>`, `</S>` first); only with `token_encoder="words"`.
            Defaults to `None`.
        characters, words, word_embedding_dim: the character vocabulary
            (dict, entry -> id), word vocabulary (dict or None) and word
            table width of an ELMoForManyLangs model; only with
            `token_encoder="elmo_for_many_langs"` (see
            `keras_elmo.layers.token_encoders.elmo_for_many_langs_encoder`;
            `keras_elmo.load_bilm` of a model folder fills them in). Default
            to `None`.

    Call arguments:
        inputs: int tensor `(batch, time, 50)` of character ids, or a dict
            with key `"character_ids"`; with word inputs, int token ids
            `(batch, time)` or a dict with key `"token_ids"` (e.g. from
            `elmo_core.ids.Vocabulary.batch_to_ids`); or, in cached-token
            mode, a dict
            with `"token_embeddings"` `(batch, time, projection_dim)`
            (from `encode_tokens`, computed once for a vocabulary) and
            `"mask"` `(batch, time)`, which skips the token encoder. In
            training on windows of continuous text, a dict that also holds
            the backward direction's window (`"backward_character_ids"` or
            `"backward_token_ids"`): see `keras_elmo.layers.bilm_windows`.
        training: bool. Enables dropout.
        keep_boundaries: bool. Return `time + 2` positions, `<S>` first and
            `</S>` after each sentence's last token, instead of stripping
            them (the language model predicts from those positions too).
            Defaults to `False`.
        initial_states: the LSTM states a window batch starts from (window
            batches only). Defaults to `None` (zeros).

    Returns:
        A dict with `"layer_outputs"`, a list of `num_layers + 1` float
        tensors `(batch, time, 2 * projection_dim)`; `"token_embeddings"`,
        `(batch, time, projection_dim)`; and `"mask"`, boolean
        `(batch, time)`.

    Example:

    >>> bilm = keras_elmo.layers.BiLM(
    ...     filters=[[1, 4], [2, 8]], char_embedding_dim=4,
    ...     num_highway_layers=1, units=16, projection_dim=8)
    >>> out = bilm(keras_elmo.batch_to_ids([["Hello", "world"], ["Hi"]]))
    >>> len(out["layer_outputs"]), out["layer_outputs"][0].shape
    (3, TensorShape([2, 2, 16]))
    >>> out["mask"].numpy().tolist()
    [[True, True], [True, False]]

    A word-input biLM:

    >>> vocab = elmo_core.ids.Vocabulary(["<S>", "</S>", "<UNK>", "Hi"])
    >>> bilm = keras_elmo.layers.BiLM(
    ...     units=16, projection_dim=8, token_encoder="words",
    ...     vocabulary_size=len(vocab))
    >>> out = bilm(vocab.batch_to_ids([["Hi", "you"], ["Hi"]]))
    >>> out["mask"].numpy().tolist()
    [[True, True], [True, False]]

    Reference:
        Peters et al. 2018, "Deep contextualized word representations".
    """

    def __init__(
        self,
        units=4096,
        projection_dim=512,
        num_layers=2,
        cell_clip=3.0,
        proj_clip=3.0,
        use_skip_connections=True,
        dropout=0.0,
        stateful=False,
        max_batch_size=128,
        token_encoder="characters",
        **kwargs,
    ):
        encoder_class = get_token_encoder(token_encoder)
        encoder_kwargs = take_arguments(encoder_class, kwargs)
        super().__init__(**kwargs)
        self.units, self.projection_dim, self.num_layers = _checked_sizes(
            units, projection_dim, num_layers, cell_clip, proj_clip
        )
        dropout = check_fraction(dropout, "dropout")
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.use_skip_connections = bool(use_skip_connections)
        self.dropout = float(dropout)
        self.stateful = bool(stateful)
        self.max_batch_size = check_integer(
            max_batch_size, "max_batch_size", minimum=1
        )

        # === Token encoder ===
        self.token_encoder = encoder_class.name
        self.encoder = encoder_class(
            projection_dim=self.projection_dim,
            dtype=self.dtype_policy,
            **encoder_kwargs,
        )
        # The encoder's arguments and sublayers are the BiLM's own
        # attributes (`bilm.filters`, `bilm.char_cnn`, ...), so that weight
        # paths and saved files do not depend on the encoder object.
        for name, value in self.encoder.config().items():
            setattr(self, name, value)
        for name, layer in self.encoder.layers().items():
            setattr(self, name, layer)

        # === Bidirectional LSTM stacks ===
        lstm_projection = (
            self.projection_dim if self.projection_dim < self.units else None
        )

        def lstm(direction, index):
            return ProjectedLSTM(
                units=self.units,
                projection_dim=lstm_projection,
                cell_clip=cell_clip,
                proj_clip=proj_clip,
                go_backwards=direction == "backward",
                dtype=self.dtype_policy,
                name=f"{direction}_lstm_{index}",
            )

        self.forward_layers = [
            lstm("forward", i) for i in range(self.num_layers)
        ]
        self.backward_layers = [
            lstm("backward", i) for i in range(self.num_layers)
        ]
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="lstm_input_dropout"
        )

    def build(self, input_shape=None):
        self.encoder.build()
        embeddings = (None, None, self.projection_dim)
        for layer in self.forward_layers + self.backward_layers:
            layer.build(embeddings)
        self.dropout_layer.build(embeddings)
        self.state_variables = (
            add_state_variables(self) if self.stateful else []
        )

    def reset_states(self):
        """Zeros the carried LSTM state (stateful mode)."""
        for per_layer in getattr(self, "state_variables", []):
            for state in per_layer:
                for variable in state:
                    variable.assign(ops.zeros(variable.shape, variable.dtype))

    def __call__(self, inputs, *args, **kwargs):
        refuse_keras_export(self)
        if backends.takes_host_tokens(inputs):
            inputs = host_inputs(self.encoder, inputs)
        check_batch_structure(inputs, "BiLM")
        # A window batch (which carries tensors of state) runs as it is.
        if not args and kwargs.get("initial_states") is None:
            outputs = backends.compiled_bilm_call(self, inputs, **kwargs)
            if outputs is not None:
                return outputs
        return super().__call__(inputs, *args, **kwargs)

    def encode_tokens(self, character_ids):
        """Context-insensitive token embeddings `e`, `(..., projection_dim)`.

        Runs only the token encoder: for character ids `(..., 50)` the char
        CNN, highway and projection (with `deduplicate_tokens`, once per
        distinct token of the batch); for word ids `(...)` the table
        lookup.
        """
        return self.encoder.encode(ops.convert_to_tensor(character_ids))

    def call(
        self, inputs, training=None, keep_boundaries=False, initial_states=None
    ):
        if is_window_batch(self, inputs):
            # Training on continuous text (`layers/bilm_windows.py`).
            return window_call(self, inputs, initial_states, training)
        if initial_states is not None:
            raise KerasElmoError(
                "`initial_states` is for window batches (training on "
                "continuous text); a BiLM of sentences starts each one from "
                "zeros, or carries its state with stateful=True.",
                "initial_states",
            )
        cached = isinstance(inputs, dict) and "token_embeddings" in inputs
        tokens, token_mask = self._tokens(inputs, cached)
        num_tokens = ops.shape(tokens)[1]
        embeddings, mask = self._embeddings_with_boundaries(
            tokens, token_mask, cached
        )
        layer_outputs = self._lstm_stacks(embeddings, mask, training)
        if keep_boundaries:
            keep = ops.expand_dims(ops.cast(mask, embeddings.dtype), -1)
            return {
                "layer_outputs": [x * keep for x in layer_outputs],
                "token_embeddings": embeddings * keep,
                "mask": mask,
            }
        # === Strip the boundaries; zero what lies past each sentence ===
        # expand_dims rather than [..., None]: the TFLite converter needs
        # Flex ops for new-axis slices of dynamic tensors.
        keep = ops.expand_dims(ops.cast(token_mask, embeddings.dtype), -1)
        return {
            "layer_outputs": [
                x[:, 1 : num_tokens + 1] * keep for x in layer_outputs
            ],
            "token_embeddings": embeddings[:, 1 : num_tokens + 1] * keep,
            "mask": token_mask,
        }

    def _tokens(self, inputs, cached):
        """`(tokens, mask)` of a batch: the encoder's checked int32 inputs,
        or in cached-token mode the embeddings `e` computed earlier."""
        if cached:
            tokens = ops.convert_to_tensor(inputs["token_embeddings"])
            return tokens, ops.cast(inputs["mask"], "bool")
        tokens = backends.dense(self.token_inputs(inputs))
        tokens = self.encoder.check(tokens)
        return ops.cast(tokens, "int32"), self.encoder.mask(tokens)

    def _embeddings_with_boundaries(self, tokens, token_mask, cached):
        """`(embeddings, mask)` of each sentence wrapped as `<S> tokens
        </S>`: `time + 2` positions, the mask up to each `</S>`."""
        lengths = ops.sum(ops.cast(token_mask, "int32"), axis=1)
        batch_size, num_tokens = ops.shape(tokens)[0], ops.shape(tokens)[1]
        positions = ops.arange(num_tokens + 2)[None, :]
        is_bos = positions == 0
        is_eos = positions == lengths[:, None] + 1
        mask = positions < lengths[:, None] + 2
        # One trailing axis per axis of a token's input (or embedding).
        for _ in range(len(tokens.shape) - 2):
            is_bos = ops.expand_dims(is_bos, -1)
            is_eos = ops.expand_dims(is_eos, -1)
        empty = ops.zeros((batch_size, 1, *tokens.shape[2:]), tokens.dtype)
        tokens = ops.concatenate([empty, tokens, empty], axis=1)
        if cached:
            boundaries = np.stack(self.encoder.boundaries())
            bos, eos = ops.unstack(self.encode_tokens(boundaries), axis=0)
            bos, eos = (ops.cast(x, tokens.dtype) for x in (bos, eos))
        else:
            bos, eos = self.encoder.boundaries()
        tokens = ops.where(is_bos, bos, tokens)
        tokens = ops.where(is_eos, eos, tokens)
        if cached:
            return ops.cast(tokens, self.compute_dtype), mask
        return self.encode_tokens(tokens), mask

    def _lstm_stacks(self, embeddings, mask, training):
        """Every layer's output, layer 0 `[e, e]`; both directions of a
        layer run concurrently."""
        batch_size = ops.shape(embeddings)[0]
        forward_input = backward_input = embeddings
        layer_outputs = [ops.concatenate([embeddings, embeddings], axis=-1)]
        for i in range(self.num_layers):
            layers = [self.forward_layers[i], self.backward_layers[i]]
            forward_input = self.dropout_layer(forward_input, training=training)
            backward_input = self.dropout_layer(
                backward_input, training=training
            )
            initial_states = read_states(self, i, batch_size)
            (forward, backward), final_states = run_lstms(
                layers,
                [forward_input, backward_input],
                mask,
                initial_states,
                training=training,
            )
            write_states(self, i, final_states)
            if self.use_skip_connections and i > 0:
                forward = forward + forward_input
                backward = backward + backward_input
            layer_outputs.append(ops.concatenate([forward, backward], axis=-1))
            forward_input, backward_input = forward, backward
        return layer_outputs

    def token_inputs(self, inputs):
        """The encoder's input of `inputs`: the tensor, or the dict entry
        the token encoder reads."""
        if not isinstance(inputs, dict):
            return inputs
        name = self.encoder.input_name
        for alias in self.encoder.input_aliases:
            if name not in inputs and alias in inputs:
                name = alias  # the key an older version used
        if name not in inputs:
            raise KerasElmoError(
                f"This BiLM (token_encoder={self.token_encoder!r}) reads "
                f"the input {name!r}; `inputs` has no such key.",
                "inputs",
                received=Described(f"a dict with keys {sorted(inputs)}"),
            )
        return inputs[name]

    def compute_output_spec(
        self, inputs, training=None, keep_boundaries=False, initial_states=None
    ):
        if isinstance(inputs, dict):
            inputs = inputs.get(
                "token_embeddings", inputs.get(self.encoder.input_name)
            )
        batch, time = inputs.shape[0], inputs.shape[1]
        if keep_boundaries and time is not None:
            time += 2
        width = 2 * self.projection_dim
        layer = keras.KerasTensor(
            (batch, time, width), dtype=self.compute_dtype
        )
        return {
            "layer_outputs": [layer] * (self.num_layers + 1),
            "token_embeddings": keras.KerasTensor(
                (batch, time, self.projection_dim), dtype=self.compute_dtype
            ),
            "mask": keras.KerasTensor((batch, time), dtype="bool"),
        }

    def arguments(self):
        """The constructor arguments of this biLM, as plain values (its
        sizes, dropout, state and token encoder's): `get_config` without
        Keras's own keys, read without Keras's serialization."""
        arguments = {
            "units": self.units,
            "projection_dim": self.projection_dim,
            "num_layers": self.num_layers,
            "cell_clip": self.cell_clip,
            "proj_clip": self.proj_clip,
            "use_skip_connections": self.use_skip_connections,
            "dropout": self.dropout,
            "stateful": self.stateful,
            "max_batch_size": self.max_batch_size,
        }
        arguments.update(self.encoder.config())
        if self.token_encoder != "characters":
            # Written only when needed: character configs stay as before.
            arguments["token_encoder"] = self.token_encoder
        return arguments

    def get_config(self):
        return {**super().get_config(), **self.arguments()}
