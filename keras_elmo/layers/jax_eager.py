"""Eager calls of a layer on the JAX backend, as one compiled program.

Called eagerly, JAX compiles every op for every new input shape (the biLM
runs about 70 of them), which costs seconds a batch when sentence lengths
vary. So an eager `BiLM` call on JAX runs `stateless_call` under one
`jax.jit` per input shape and writes the new state (the carried LSTM
state of a stateful biLM, dropout seeds) back to the variables: the same
results, one compilation a shape.

Calls that are already traced (inside `jax.jit`, `jax.grad`, `model.fit`
or a functional model being built) run as they are.
"""

import weakref

import keras

_FUNCTIONS = weakref.WeakKeyDictionary()


def is_traced(inputs):
    """True inside a trace (jax.jit, jax.grad) or a symbolic call."""
    import jax

    return any(
        isinstance(x, (jax.core.Tracer, keras.KerasTensor))
        for x in keras.tree.flatten(inputs)
    )


def jitted_call(layer, inputs, **kwargs):
    """`layer(inputs, **kwargs)` compiled, or None where it must run as is.

    `kwargs` must be hashable Python values (e.g. `training`).
    """
    if is_traced(inputs):
        return None
    if not layer.built:
        layer.build()
    functions = _FUNCTIONS.setdefault(layer, {})
    key = tuple(sorted(kwargs.items()))
    if key not in functions:
        import jax

        def run(trainable, non_trainable, inputs):
            return layer.stateless_call(
                trainable, non_trainable, inputs, **kwargs
            )

        functions[key] = jax.jit(run)
    outputs, non_trainable = functions[key](
        [v.value for v in layer.trainable_variables],
        [v.value for v in layer.non_trainable_variables],
        keras.tree.map_structure(keras.ops.convert_to_tensor, inputs),
    )
    for variable, value in zip(layer.non_trainable_variables, non_trainable):
        variable.assign(value)
    return outputs
