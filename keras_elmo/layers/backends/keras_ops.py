"""The seam's functions in plain `keras.ops`, for the backends that have
nothing faster, and what they are on a backend without string or ragged
tensors and without assertions in its graphs (JAX and PyTorch); each
backend module takes what it needs from here."""

import keras
from keras import ops

from elmo_core.ids.host_ids import is_host_tokens


def valid_convolution(x, kernel):
    """The "valid" 1D cross-correlation of `x` `(N, L, d)` with `kernel`
    `(w, d, n)`, stride 1."""
    return ops.conv(x, kernel, strides=1, padding="valid")


def reverse_sequences(x, lengths):
    """Each row of `x` `(batch, time, ...)` reversed within its length,
    as a gather: position t of row b reads `lengths[b] - 1 - t` inside the
    row, itself past it."""
    batch, time = ops.shape(x)[0], ops.shape(x)[1]
    positions = ops.arange(time, dtype="int32")[None, :]
    lengths = ops.cast(lengths, "int32")[:, None]
    source = ops.where(positions < lengths, lengths - 1 - positions, positions)
    rows = ops.arange(batch, dtype="int32")[:, None] * time
    flat = ops.reshape(x, (batch * time, *x.shape[2:]))
    picked = ops.take(flat, ops.reshape(rows + source, (-1,)), axis=0)
    return ops.reshape(picked, ops.shape(x))


def input_products(x, cell):
    """`x @ kernel + bias`: the LSTM input products of every step."""
    return ops.matmul(x, cell.kernel) + cell.bias


def tensor(x):
    """`x` as a tensor of the backend (a variable read), None as None."""
    return None if x is None else ops.convert_to_tensor(x)


def variable_value(x):
    """The value of a Keras variable (JAX reads one only through it);
    anything else as it is."""
    if isinstance(x, keras.Variable):
        return x.value
    return x


def takes_host_tokens(inputs):
    """True for token lists or NumPy string arrays: without string tensors
    they become ids on the host."""
    return is_host_tokens(inputs)


def dense(x):
    """`x` (no ragged tensors)."""
    return x


def ensure_shape(x, shape):
    """`x` (no TensorFlow loop loses its static shape)."""
    return x


def checked_in_graph(x, minimum, maximum, message):
    """`x` unchecked: no assertion runs inside a compiled JAX program, and
    PyTorch's values are always on the host. The values are checked on
    the host (`host_values`) before: inside `jax.jit` they are checked
    before the jitted call (`jax_eager.py`)."""
    return x


def assert_at_most(value, limit, message):
    """Nothing (see `checked_in_graph`)."""
