"""Eager calls of a layer on the JAX backend, as one compiled program.

Called eagerly, JAX compiles every op for every new input shape (the biLM
runs about 70 of them), which costs seconds a batch when sentence lengths
vary. So an eager `BiLM` call on JAX runs `stateless_call` under one
`jax.jit` per input shape and writes the new state (the carried LSTM
state of a stateful biLM, dropout seeds) back to the variables: the same
results, one compilation a shape.

With `time_axis=True` (the BiLM) the time axis of the inputs is padded
with padding tokens to a multiple of `TIME_BUCKET` and the outputs cut
back: padding tokens come after every sentence's end, so the outputs and
the carried state are those of the unpadded batch, and sentences of
similar length share one compiled program.

The token encoder runs once per distinct token inside the compiled
program itself (`jax_tokens.py`).

Calls that are already traced (inside `jax.jit`, `jax.grad`, `model.fit`
or a functional model being built) run as they are.
"""

import keras

TIME_BUCKET = 8


def is_traced(inputs):
    """True inside a trace (jax.jit, jax.grad) or a symbolic call."""
    import jax

    return any(
        isinstance(x, (jax.core.Tracer, keras.KerasTensor))
        for x in keras.tree.flatten(inputs)
    )


def bilm_call(bilm, inputs, **kwargs):
    """An eager `BiLM` call, compiled once per shape; None when traced.

    The ids are checked here, on their values (inside the compiled program
    they have none).
    """
    if not (isinstance(inputs, dict) and "token_embeddings" in inputs):
        tokens = bilm.token_inputs(inputs)
        if is_traced(tokens):
            return None
        bilm.encoder.check(tokens)
    return jitted_call(bilm, inputs, time_axis=True, **kwargs)


def jitted_call(layer, inputs, time_axis=False, **kwargs):
    """`layer(inputs, **kwargs)` compiled, or None where it must run as is.

    `kwargs` must be hashable Python values (e.g. `training`).
    """
    if is_traced(inputs):
        return None
    if not layer.built:
        layer.build()
    functions = _functions(layer)
    key = tuple(sorted(kwargs.items()))
    if key not in functions:
        import jax

        def run(trainable, non_trainable, inputs):
            return layer.stateless_call(
                trainable, non_trainable, inputs, **kwargs
            )

        functions[key] = jax.jit(run)
    inputs = keras.tree.map_structure(keras.ops.convert_to_tensor, inputs)
    if time_axis:
        inputs, time = _pad_time(inputs)
    outputs, non_trainable = functions[key](
        [v.value for v in layer.trainable_variables],
        [v.value for v in layer.non_trainable_variables],
        inputs,
    )
    for variable, value in zip(layer.non_trainable_variables, non_trainable):
        variable.assign(value)
    if time_axis:
        extra = 2 if kwargs.get("keep_boundaries") else 0
        outputs = keras.tree.map_structure(
            lambda x: x[:, : time + extra], outputs
        )
    return outputs


def _functions(layer):
    """The layer's compiled functions (kept on the layer, outside Keras's
    attribute tracking, so they go away with it)."""
    if "_jax_functions" not in vars(layer):
        object.__setattr__(layer, "_jax_functions", {})
    return vars(layer)["_jax_functions"]


def _pad_time(inputs):
    """Inputs padded on axis 1 to a multiple of TIME_BUCKET, and the time
    length they had."""
    import jax.numpy as jnp

    time = keras.tree.flatten(inputs)[0].shape[1]
    padded = -(-time // TIME_BUCKET) * TIME_BUCKET

    def pad(x):
        widths = [(0, 0)] * x.ndim
        widths[1] = (0, padded - time)
        return jnp.pad(x, widths)

    return keras.tree.map_structure(pad, inputs), time
