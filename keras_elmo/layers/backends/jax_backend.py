"""The seam on JAX (see `keras_elmo.layers.backends`)."""

from keras import ops

from keras_elmo.layers.backends import keras_ops

# The rest of the seam is `keras_ops`'s: no string or ragged tensors, no
# assertions in a graph.


def host_values(x):
    """The values outside `jax.jit`; None for a traced value (a jitted
    program has no values to look at and no assertions)."""
    import jax

    if isinstance(x, jax.core.Tracer):
        return None
    return ops.convert_to_numpy(keras_ops.variable_value(x))


def encode_distinct(x, encode, slack=None, finish=None):
    """Inside `jax.jit` too, with static shapes: the rows sorted, the
    distinct ones encoded in chunks (`jax_tokens.py`)."""
    from keras_elmo.layers.backends import jax_tokens

    return jax_tokens.encode_distinct(x, encode, slack, finish)


def valid_convolution(x, kernel):
    """XLA's convolution with its gradient as matmuls
    (`jax_convolution.py`: XLA's own is 30 times slower inside loops)."""
    from keras_elmo.layers.backends import jax_convolution

    return jax_convolution.valid_convolution(x, ops.convert_to_tensor(kernel))


def lstm_recurrences(runs, time_mask, training=None):
    """Each run's input products at real tokens only (`jax_rows.py`),
    then the `lax.fori_loop` with its hand-written gradient
    (`jax_recurrence.py`)."""
    from keras_elmo.layers.backends.jax_recurrence import jax_recurrence
    from keras_elmo.layers.backends.jax_rows import valid_rows

    results = []
    for inputs, c0, h0, cell in runs:
        cell = cell.converted(keras_ops.tensor)
        steps, batch, depth = inputs.shape
        flat = valid_rows(
            ops.reshape(inputs, (-1, depth)),
            time_mask,
            lambda rows: keras_ops.input_products(rows, cell),
        )
        products = ops.reshape(flat, (steps, batch, flat.shape[-1]))
        results.append(jax_recurrence(products, time_mask, c0, h0, cell))
    return results


def compiled_bilm_call(bilm, inputs, **kwargs):
    """One `jax.jit` a shape bucket (`jax_eager.py`)."""
    from keras_elmo.layers.backends import jax_eager

    return jax_eager.bilm_call(bilm, inputs, **kwargs)
