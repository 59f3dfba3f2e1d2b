"""The seam's functions in plain `keras.ops`, for the backends that have
nothing faster (each backend module takes what it needs from here)."""

from keras import ops


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
