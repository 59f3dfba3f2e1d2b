import keras
import numpy as np
from keras import ops

from elmo_core.errors import Described
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_flag
from elmo_core.errors import check_number
from elmo_core.errors import check_numbers

# Variance floor of the masked layer norm: bilm-tf's; AllenNLP's (since
# 1.0: `tiny_value_of_dtype(float32)`) is 1e-13.
_LAYER_NORM_EPSILON = {"bilm-tf": 1e-12, "allennlp": 1e-13}
LAYER_NORM_RULES = tuple(_LAYER_NORM_EPSILON)


@keras.saving.register_keras_serializable(package="keras_elmo")
class ScalarMix(keras.layers.Layer):
    """Task-specific weighted sum of the biLM layers: the ELMo vector.

    Computes `gamma * sum_k softmax(s)_k * layer_k` over the biLM layers, with
    `s` and `gamma` learned by the task (or fixed). Several independent mixes
    can read the same biLM outputs (the paper uses one at the input and one at
    the output of the task RNN).

    Masking: `mask` is used by the layer norm (statistics over unmasked
    entries only) and passed through unchanged. Outputs at masked positions
    are zero. With `layer_norm_rule="allennlp"` the inputs and `mask` carry
    the `<S>`/`</S>` positions, and the returned mask is the token mask.

    The two originals differ in one place, the layer norm's statistics:
    bilm-tf (the default here) takes them over the real tokens only,
    AllenNLP's `Elmo` over the tokens *and* the `<S>`/`</S>` positions of
    each sentence, which changes every mixed vector (by up to ~0.6 on a
    short sentence). `layer_norm_rule="allennlp"` reproduces AllenNLP: feed
    the layers of `bilm(ids, keep_boundaries=True)` with that call's mask;
    the mix is computed over all positions, then the boundary positions are
    dropped, so the output `(batch, time, dim)` lines up with the tokens as
    in the default rule.

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
        layer_norm_rule: str. `"bilm-tf"`: the inputs are the token
            positions (`bilm(ids)`) and so are the layer-norm statistics.
            `"allennlp"`: the inputs also hold the `<S>`/`</S>` positions
            (`bilm(ids, keep_boundaries=True)`, `time + 2` positions), the
            statistics include them, as in AllenNLP, and the output drops
            them. Defaults to `"bilm-tf"`.

    Pass `trainable=False` to keep `s` and `gamma` fixed.

    Call arguments:
        inputs: list of float tensors of equal shape `(batch, time, dim)`,
            the biLM layers (`(batch, time + 2, dim)` with
            `layer_norm_rule="allennlp"`).
        mask: optional boolean tensor `(batch, time)` (`(batch, time + 2)`
            with `layer_norm_rule="allennlp"`).

    Returns:
        Tensor `(batch, time, dim)`.

    Example:

    >>> mix = keras_elmo.layers.ScalarMix(initial_scalar_weights=[0., 0., 0.])
    >>> layers = [np.full((1, 2, 4), v, "float32") for v in (1., 2., 3.)]
    >>> mix(layers).numpy()[0, 0].tolist()
    [2.0, 2.0, 2.0, 2.0]

    AllenNLP's rule takes layers with `<S>` and `</S>` and drops them:

    >>> mix = keras_elmo.layers.ScalarMix(
    ...     do_layer_norm=True, layer_norm_rule="allennlp")
    >>> layers = [np.arange(8, dtype="float32").reshape(1, 4, 2)] * 3
    >>> mix(layers, mask=np.array([[True, True, True, True]])).shape
    TensorShape([1, 2, 2])

    Reference:
        Peters et al. 2018, "Deep contextualized word representations", §3.2.
    """

    def __init__(
        self,
        initial_scalar_weights=None,
        l2_coef=0.0,
        do_layer_norm=False,
        top_layer_only=False,
        layer_norm_rule="bilm-tf",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if layer_norm_rule not in LAYER_NORM_RULES:
            raise KerasElmoError(
                f"`layer_norm_rule` must be one of {LAYER_NORM_RULES}.",
                "layer_norm_rule",
                received=layer_norm_rule,
            )
        if initial_scalar_weights is not None:
            initial_scalar_weights = check_numbers(
                initial_scalar_weights, "initial_scalar_weights"
            )
        self.initial_scalar_weights = initial_scalar_weights
        self.l2_coef = check_number(l2_coef, "l2_coef", minimum=0.0)
        self.do_layer_norm = check_flag(do_layer_norm, "do_layer_norm")
        self.top_layer_only = check_flag(top_layer_only, "top_layer_only")
        self.layer_norm_rule = layer_norm_rule
        self.supports_masking = True

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, (list, tuple)) and not inputs:
            raise KerasElmoError(
                "ScalarMix takes as `inputs` the list of biLM layers to mix, "
                'e.g. bilm(ids)["layer_outputs"] (num_layers + 1 tensors of '
                "shape (batch, time, dim)).",
                "inputs",
                received=inputs,
            )
        if isinstance(inputs, (list, tuple)):
            shapes = [tuple(getattr(x, "shape", ())) for x in inputs]
            if len(set(shapes)) > 1:
                raise KerasElmoError(
                    "Every layer ScalarMix mixes (`inputs`) must have the "
                    "same shape (batch, time, dim).",
                    "inputs",
                    received=Described(f"tensors of shapes {shapes}"),
                )
        if self.layer_norm_rule == "allennlp":
            _check_boundaries(inputs, kwargs.get("mask", (*args, None)[0]))
        return super().__call__(inputs, *args, **kwargs)

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not isinstance(
            input_shape[0], (list, tuple)
        ):
            raise KerasElmoError(
                "ScalarMix expects a list of layer tensors, e.g. "
                'bilm(ids)["layer_outputs"].',
                "inputs",
                received=Described(f"a single input of shape {input_shape}"),
            )
        num_layers = len(input_shape)
        initial = self.initial_scalar_weights
        if initial is not None and len(initial) != num_layers:
            raise KerasElmoError(
                f"`initial_scalar_weights` must be {num_layers} numbers, one "
                f"per layer: the mix is given {num_layers} layers.",
                "initial_scalar_weights",
                received=initial,
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
        # Not [..., None]: the TFLite converter needs Flex ops for that.
        keep = ops.expand_dims(ops.cast(mask, "float32"), -1)
        layers = [ops.cast(x, "float32") for x in inputs]
        if self.top_layer_only:
            mixed = layers[-1]
        else:
            if self.do_layer_norm:
                epsilon = _LAYER_NORM_EPSILON[self.layer_norm_rule]
                layers = [_masked_layer_norm(x, keep, epsilon) for x in layers]
            # bilm-tf computes softmax(s + 1 / L); the shift does not change
            # a softmax, so it is left out.
            weights = ops.softmax(ops.cast(self.scalar_weights, "float32"))
            mixed = sum(w * x for w, x in zip(ops.unstack(weights), layers))
        mixed = ops.cast(self.gamma, "float32") * mixed
        if self.layer_norm_rule == "allennlp":
            # Drop <S> (first) and </S> (after the last token): a sentence
            # of n tokens has n + 2 unmasked positions, so the token mask is
            # the boundary mask shifted by two.
            mixed = mixed[:, 1:-1]
            keep = keep[:, 2:]
        return ops.cast(mixed * keep, self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if mask is not None and self.layer_norm_rule == "allennlp":
            return mask[:, 2:]
        return mask

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape[0])
        if self.layer_norm_rule == "allennlp" and shape[1] is not None:
            return (shape[0], shape[1] - 2, *shape[2:])
        return shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "initial_scalar_weights": self.initial_scalar_weights,
                "l2_coef": self.l2_coef,
                "do_layer_norm": self.do_layer_norm,
                "top_layer_only": self.top_layer_only,
                "layer_norm_rule": self.layer_norm_rule,
            }
        )
        return config


def _check_boundaries(inputs, mask):
    """With the "allennlp" rule the layers must hold `<S>` and `</S>`
    (`bilm(ids, keep_boundaries=True)`); the mix drops two positions, so
    layers without them would silently lose their last tokens. Their mask
    tells: it starts with two present positions (`<S>`, and the first
    token or `</S>`) in every row, which a token mask does not where a
    sentence has fewer than two tokens (checked eagerly)."""
    advice = (
        "layer_norm_rule='allennlp' mixes the layers of "
        "bilm(ids, keep_boundaries=True) (time + 2 positions, <S> and </S> "
        "included) with that call's mask, and drops the two boundaries. "
    )
    if isinstance(mask, (list, tuple)):
        mask = mask[0] if mask else None
    if mask is None:
        raise KerasElmoError(
            advice + "Pass mask=outputs['mask'] of that call: without it the "
            "boundary positions are unknown."
        )
    if not ops.is_tensor(mask) and not hasattr(mask, "shape"):
        return
    try:
        values = np.asarray(mask)
    except (TypeError, ValueError, NotImplementedError):
        return  # symbolic: checked by shapes only
    if values.ndim == 2 and values.dtype != object and values.size:
        if values.shape[1] < 2 or not values[:, :2].astype(bool).all():
            counts = values.astype(bool).sum(axis=1).tolist()
            raise KerasElmoError(
                advice + "The mask has rows with fewer than two present "
                f"positions at the start (present per row: {counts[:8]}), "
                "so these layers have no boundaries; call the biLM with "
                "keep_boundaries=True, or use layer_norm_rule='bilm-tf'."
            )


def _masked_layer_norm(x, keep, epsilon):
    """`(x - mean) / sqrt(var + eps)` with one mean and variance over all
    unmasked (position, feature) entries of the whole batch (SPEC §10)."""
    count = ops.sum(keep) * ops.cast(ops.shape(x)[-1], "float32")
    count = ops.maximum(count, 1.0)
    mean = ops.sum(x * keep) / count
    variance = ops.sum(ops.square((x - mean) * keep)) / count
    return (x - mean) / ops.sqrt(variance + epsilon)
