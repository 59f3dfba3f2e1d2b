import keras
from keras import ops

# Variance floor of the masked layer norm, as in bilm-tf and AllenNLP.
_LAYER_NORM_EPSILON = 1e-12


@keras.saving.register_keras_serializable(package="keras_elmo")
class ScalarMix(keras.layers.Layer):
    """Task-specific weighted sum of the biLM layers: the ELMo vector.

    Computes `gamma * sum_k softmax(s)_k * layer_k` over the biLM layers, with
    `s` and `gamma` learned by the task (or fixed). Several independent mixes
    can read the same biLM outputs (the paper uses one at the input and one at
    the output of the task RNN).

    Masking: `mask` is used by the layer norm (statistics over unmasked
    entries only) and passed through unchanged. Outputs at masked positions
    are zero.

    Args:
        initial_scalar_weights: list of floats, one per layer, or None for
            zeros (equal weights). Defaults to `None`.
        l2_coef: float. L2 penalty `l2_coef * sum(s ** 2)` added to the
            model losses (the paper uses 0.001). Defaults to `0.0`.
        do_layer_norm: bool. Normalise each layer by one mean and variance
            over all unmasked (token, feature) entries before mixing.
            Defaults to `False`.
        top_layer_only: bool. Return `gamma * top layer` instead of a mix.
            Defaults to `False`.

    Pass `trainable=False` to keep `s` and `gamma` fixed.

    Call arguments:
        inputs: list of float tensors of equal shape `(batch, time, dim)`,
            the biLM layers.
        mask: optional boolean tensor `(batch, time)`.

    Returns:
        Tensor `(batch, time, dim)`.

    Example:

    >>> mix = keras_elmo.layers.ScalarMix(initial_scalar_weights=[0., 0., 0.])
    >>> layers = [np.full((1, 2, 4), v, "float32") for v in (1., 2., 3.)]
    >>> mix(layers).numpy()[0, 0].tolist()
    [2.0, 2.0, 2.0, 2.0]

    Reference:
        Peters et al. 2018, "Deep contextualized word representations", §3.2.
    """

    def __init__(
        self,
        initial_scalar_weights=None,
        l2_coef=0.0,
        do_layer_norm=False,
        top_layer_only=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if initial_scalar_weights is not None:
            initial_scalar_weights = [float(w) for w in initial_scalar_weights]
        if float(l2_coef) < 0:
            raise ValueError(
                f"`l2_coef` must be >= 0. Received: l2_coef={l2_coef}"
            )
        self.initial_scalar_weights = initial_scalar_weights
        self.l2_coef = float(l2_coef)
        self.do_layer_norm = bool(do_layer_norm)
        self.top_layer_only = bool(top_layer_only)
        self.supports_masking = True

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not isinstance(
            input_shape[0], (list, tuple)
        ):
            raise ValueError(
                "ScalarMix expects a list of layer tensors, e.g. "
                'bilm(ids)["layer_outputs"]; received a single input of '
                f"shape {input_shape}."
            )
        num_layers = len(input_shape)
        initial = self.initial_scalar_weights
        if initial is not None and len(initial) != num_layers:
            raise ValueError(
                f"`initial_scalar_weights` has {len(initial)} values but the "
                f"mix received {num_layers} layers; give one per layer."
            )
        self.scalar_weights = self.add_weight(
            name="scalar_weights",
            shape=(num_layers,),
            initializer=(
                "zeros"
                if initial is None
                else keras.initializers.Constant(initial)
            ),
            regularizer=(
                keras.regularizers.L2(self.l2_coef) if self.l2_coef else None
            ),
        )
        self.gamma = self.add_weight(name="gamma", shape=(), initializer="ones")

    def call(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if mask is None:
            mask = ops.ones(ops.shape(inputs[0])[:-1], dtype="bool")
        keep = ops.cast(mask, "float32")[..., None]
        layers = [ops.cast(x, "float32") for x in inputs]
        if self.top_layer_only:
            mixed = layers[-1]
        else:
            if self.do_layer_norm:
                layers = [_masked_layer_norm(x, keep) for x in layers]
            # bilm-tf computes softmax(s + 1 / L); the shift does not change
            # a softmax, so it is left out.
            weights = ops.softmax(ops.cast(self.scalar_weights, "float32"))
            mixed = sum(w * x for w, x in zip(ops.unstack(weights), layers))
        mixed = ops.cast(self.gamma, "float32") * mixed * keep
        return ops.cast(mixed, self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            return mask[0]
        return mask

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "initial_scalar_weights": self.initial_scalar_weights,
                "l2_coef": self.l2_coef,
                "do_layer_norm": self.do_layer_norm,
                "top_layer_only": self.top_layer_only,
            }
        )
        return config


def _masked_layer_norm(x, keep):
    """`(x - mean) / sqrt(var + eps)` with one mean and variance over all
    unmasked (token, feature) entries of the whole batch (SPEC §10)."""
    count = ops.sum(keep) * ops.cast(ops.shape(x)[-1], "float32")
    count = ops.maximum(count, 1.0)
    mean = ops.sum(x * keep) / count
    variance = ops.sum(ops.square((x - mean) * keep)) / count
    return (x - mean) / ops.sqrt(variance + _LAYER_NORM_EPSILON)
