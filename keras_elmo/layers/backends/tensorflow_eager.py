"""Eager calls of a BiLM on TensorFlow, as one compiled function.

Called eagerly, TensorFlow runs each op on its own, and the LSTM's
`tf.while_loop` as a Python loop of them: a 1,000-token sequence at the
original size ran at half the speed of the same call inside a
`tf.function`. So an eager `BiLM` call runs a `tf.function` kept on the
layer, traced once per input structure and call arguments, with the
batch and time axes left open: one trace serves every batch shape (the
loop and the token encoder take any shape), where JAX needs one program
a shape bucket (`jax_eager.py`).

The ids are checked on the host first, so that a bad one is the usual
`KerasElmoError` (the compiled function checks them again by
assertions); a stateful biLM keeps the batch axis fixed, one trace a
batch size, so that its limit is checked when tracing. Calls that are
already traced (inside a `tf.function`, `model.fit`, or a functional
model being built), and inputs that are not plain numeric arrays
(ragged tensors, strings, Python lists), run as they are.
"""

import numpy as np
import tensorflow as tf


def bilm_call(bilm, inputs, **kwargs):
    """An eager `BiLM` call, compiled; None where it must run as it is.

    `kwargs` are the call's Python arguments (`training`,
    `keep_boundaries`); `training=None` runs as False, whatever an outer
    layer's call says, so that one trace means one behaviour.
    """
    if not tf.executing_eagerly():
        return None
    leaves = tf.nest.flatten(inputs)
    if not leaves or not all(_plain(x) for x in leaves):
        return None
    inputs = tf.nest.map_structure(tf.convert_to_tensor, inputs)
    if not bilm.built:
        bilm.build()
    if not (isinstance(inputs, dict) and "token_embeddings" in inputs):
        bilm.encoder.check(bilm.token_inputs(inputs))
    kwargs["training"] = bool(kwargs.get("training"))
    return _function(bilm, inputs, kwargs)(inputs)


def _plain(x):
    """A dense numeric or boolean array, batch and time axes first."""
    if not isinstance(x, (tf.Tensor, np.ndarray)) or len(x.shape) < 2:
        return False
    dtype = tf.as_dtype(x.dtype)
    return dtype.is_integer or dtype.is_floating or dtype.is_bool


def _function(bilm, inputs, kwargs):
    """The layer's compiled call for this input structure and `kwargs`."""

    def spec(x):
        batch = x.shape[0] if bilm.stateful else None
        return tf.TensorSpec((batch, None, *x.shape[2:]), x.dtype)

    specs = tf.nest.map_structure(spec, inputs)
    key = (
        tuple(sorted(kwargs.items())),
        tuple(tf.nest.flatten(specs)),
        str(tf.nest.map_structure(lambda _: 0, inputs)),
    )
    functions = _functions(bilm)
    if key not in functions:

        @tf.function(input_signature=[specs], autograph=False)
        def call(inputs):
            return bilm(inputs, **kwargs)

        functions[key] = call
    return functions[key]


def _functions(layer):
    """The layer's compiled calls (kept on the layer, outside Keras's
    attribute tracking, so they go away with it)."""
    if "_tf_functions" not in vars(layer):
        object.__setattr__(layer, "_tf_functions", {})
    return vars(layer)["_tf_functions"]
