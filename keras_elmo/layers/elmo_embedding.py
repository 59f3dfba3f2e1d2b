import keras
from keras import ops

from keras_elmo.data.character_ids import tokens_to_char_ids
from keras_elmo.layers.bilm import BiLM
from keras_elmo.layers.scalar_mix import ScalarMix
from keras_elmo.layers.validation import check_batch_structure
from keras_elmo.layers.validation import check_character_ids


def _is_string(inputs):
    dtype = getattr(inputs, "dtype", None)
    return dtype is not None and "string" in str(dtype)


@keras.saving.register_keras_serializable(package="keras_elmo")
class ELMoEmbedding(keras.layers.Layer):
    """Drop-in ELMo: tokens (or character ids) in, mixed ELMo vectors out.

    Runs a `BiLM` once and mixes its layers with one or more independent
    `ScalarMix`es, then applies dropout. Use it as the embedding layer of a
    task model; the Keras mask it returns lets downstream layers (e.g.
    `keras.layers.Bidirectional(keras.layers.LSTM(...))`) skip padding.

    The biLM weights are frozen unless `fine_tune=True`; the mix weights and
    `gamma` are trained with the task unless `scalar_mix_weights` fixes them.

    Masking: the mask is computed from the input (a non-empty string, or a
    token with any non-zero character id) and returned by `compute_mask`.
    Outputs at padding positions are zero.

    Args:
        bilm: a `keras_elmo.layers.BiLM` (e.g. from `keras_elmo.load_bilm`).
        num_output_representations: int. Number of independent mixes; with
            more than one the layer returns a list. Defaults to `1`.
        dropout: float. Dropout on each mixed output. Defaults to `0.5`.
        l2_coef: float. L2 penalty on each mix's scalar weights. Defaults
            to `0.0` (the paper uses 0.001).
        do_layer_norm: bool. Layer-normalise the biLM layers before mixing.
            Defaults to `False`.
        top_layer_only: bool. Use only the top biLM layer. Defaults to
            `False`.
        scalar_mix_weights: list of floats or None. Fixed (non-trainable)
            mix weights, one per biLM layer; `gamma` is then fixed at 1.
            Defaults to `None` (learned).
        fine_tune: bool. Train the biLM weights too. Defaults to `False`.

    Call arguments:
        inputs: `tf.string` tensor `(batch, time)` of tokens, `""` marking
            padding; or int character ids `(batch, time, 50)`.
        training: bool. Enables dropout.

    Returns:
        Float tensor `(batch, time, 2 * bilm.projection_dim)`, or a list of
        `num_output_representations` of them.

    Example:

    >>> bilm = keras_elmo.layers.BiLM(
    ...     filters=[[1, 4], [2, 8]], char_embedding_dim=4,
    ...     num_highway_layers=1, units=16, projection_dim=8)
    >>> tokens = keras.Input(shape=(None,), dtype="string")
    >>> x = keras_elmo.layers.ELMoEmbedding(bilm)(tokens)
    >>> x = keras.layers.Bidirectional(keras.layers.LSTM(4))(x)
    >>> model = keras.Model(tokens, keras.layers.Dense(2)(x))
    >>> model(tf.constant([["Hello", "world"], ["Hi", ""]])).shape
    TensorShape([2, 2])

    Reference:
        Peters et al. 2018, "Deep contextualized word representations".
    """

    def __init__(
        self,
        bilm,
        num_output_representations=1,
        dropout=0.5,
        l2_coef=0.0,
        do_layer_norm=False,
        top_layer_only=False,
        scalar_mix_weights=None,
        fine_tune=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(bilm, dict):
            bilm = keras.saving.deserialize_keras_object(bilm)
        if not isinstance(bilm, BiLM):
            raise ValueError(
                "`bilm` must be a keras_elmo.layers.BiLM, e.g. "
                "keras_elmo.load_bilm(options_file, weight_file). Received: "
                f"{type(bilm).__name__}"
            )
        if int(num_output_representations) < 1:
            raise ValueError(
                "`num_output_representations` must be >= 1. Received: "
                f"{num_output_representations}"
            )
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(
                f"`dropout` must be in [0, 1). Received: dropout={dropout}"
            )
        self.bilm = bilm
        self.num_output_representations = int(num_output_representations)
        self.dropout = float(dropout)
        self.l2_coef = float(l2_coef)
        self.do_layer_norm = bool(do_layer_norm)
        self.top_layer_only = bool(top_layer_only)
        self.scalar_mix_weights = (
            None
            if scalar_mix_weights is None
            else [float(w) for w in scalar_mix_weights]
        )
        self.fine_tune = bool(fine_tune)
        self.bilm.trainable = self.fine_tune
        self.scalar_mixes = [
            ScalarMix(
                initial_scalar_weights=self.scalar_mix_weights,
                l2_coef=l2_coef,
                do_layer_norm=do_layer_norm,
                top_layer_only=top_layer_only,
                trainable=self.scalar_mix_weights is None,
                dtype=self.dtype_policy,
                name=f"scalar_mix_{i}",
            )
            for i in range(self.num_output_representations)
        ]
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="output_dropout"
        )

    def build(self, input_shape):
        if not self.bilm.built:
            self.bilm.build()
        layer = (None, None, 2 * self.bilm.projection_dim)
        for mix in self.scalar_mixes:
            mix.build([layer] * (self.bilm.num_layers + 1))
        self.dropout_layer.build(layer)

    def __call__(self, inputs, *args, **kwargs):
        check_batch_structure(inputs, "ELMoEmbedding")
        return super().__call__(inputs, *args, **kwargs)

    def _character_ids(self, inputs):
        shape = tuple(inputs.shape)
        if _is_string(inputs):
            if len(shape) != 2:
                raise ValueError(
                    "ELMoEmbedding expects string tokens of shape (batch, "
                    f"time) padded with ''; received shape {shape}. Split "
                    "sentences into tokens first (e.g. tf.strings.split)."
                )
            return tokens_to_char_ids(inputs)
        if len(shape) == 2:
            raise ValueError(
                "ELMoEmbedding received a 2-D tensor of dtype "
                f"{inputs.dtype}; expected tf.string tokens (batch, time) or "
                "integer character ids (batch, time, 50)."
            )
        check_character_ids(inputs, self.bilm.max_characters_per_token)
        return inputs

    def call(self, inputs, training=None):
        ids = self._character_ids(inputs)
        outputs = self.bilm(ids, training=training if self.fine_tune else False)
        mixed = []
        for mix in self.scalar_mixes:
            x = mix(outputs["layer_outputs"], mask=outputs["mask"])
            mixed.append(self.dropout_layer(x, training=training))
        return mixed[0] if len(mixed) == 1 else mixed

    def compute_mask(self, inputs, mask=None):
        if _is_string(inputs):
            token_mask = ops.not_equal(inputs, "")
        else:
            token_mask = ops.any(ops.not_equal(inputs, 0), axis=-1)
        if self.num_output_representations == 1:
            return token_mask
        return [token_mask] * self.num_output_representations

    def compute_output_shape(self, input_shape):
        shape = (*input_shape[:2], 2 * self.bilm.projection_dim)
        if self.num_output_representations == 1:
            return shape
        return [shape] * self.num_output_representations

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "bilm": keras.saving.serialize_keras_object(self.bilm),
                "num_output_representations": (self.num_output_representations),
                "dropout": self.dropout,
                "l2_coef": self.l2_coef,
                "do_layer_norm": self.do_layer_norm,
                "top_layer_only": self.top_layer_only,
                "scalar_mix_weights": self.scalar_mix_weights,
                "fine_tune": self.fine_tune,
            }
        )
        return config
