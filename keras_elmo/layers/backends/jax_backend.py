"""The seam on JAX (see `keras_elmo.layers.backends`)."""

import keras
from keras import ops

from elmo_core.ids.host_ids import is_host_tokens
from keras_elmo.layers.backends import keras_ops

reverse_sequences = keras_ops.reverse_sequences


def host_values(x):
    """The values outside `jax.jit`; None for a traced value (a jitted
    program has no values to look at and no assertions)."""
    import jax

    if isinstance(x, jax.core.Tracer):
        return None
    return ops.convert_to_numpy(variable_value(x))


def checked_in_graph(x, minimum, maximum, message):
    """`x` unchecked: inside `jax.jit` nothing can be asserted, so the
    values are checked before the jitted call (`jax_eager.py`)."""
    return x


def assert_at_most(value, limit, message):
    """Nothing (see `checked_in_graph`)."""


def variable_value(x):
    """The value of a Keras variable (JAX reads one only through it)."""
    if isinstance(x, keras.Variable):
        return x.value
    return x


def takes_host_tokens(inputs):
    """True for token lists or NumPy string arrays (no string tensors)."""
    return is_host_tokens(inputs)


def dense(x):
    """`x` (no ragged tensors)."""
    return x


def ensure_shape(x, shape):
    """`x` (shapes are static)."""
    return x


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
