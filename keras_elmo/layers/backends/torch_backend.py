"""The seam on PyTorch (see `keras_elmo.layers.backends`)."""

from keras import ops

from keras_elmo.layers.backends import keras_ops

# The rest of the seam is `keras_ops`'s: no string or ragged tensors, no
# assertions in a graph.


def host_values(x):
    """The values (always on the host)."""
    return ops.convert_to_numpy(keras_ops.variable_value(x))


def encode_distinct(x, encode, slack=None, finish=None):
    """`torch.unique(dim=0)`, encoded reading only the positions that hold
    every distinct window (`_cut`); the ids carry no gradient, and the
    gather back is differentiable as usual."""
    import torch

    rows, index = torch.unique(x, dim=0, return_inverse=True)
    encoded = encode(rows, _cut(rows, slack))
    if finish is not None:
        encoded = finish(encoded)
    return ops.take(encoded, index, axis=0)


def _cut(rows, slack):
    """The latest tail start of `rows` `(N, K)` plus `slack`, as an int
    (`jax_tokens.py` says why that is exact); None without
    `slack` or rows."""
    import torch

    if slack is None or rows.shape[0] == 0:
        return None
    length = rows.shape[-1]
    positions = torch.arange(1, length + 1, device=rows.device)
    starts = torch.where(rows != rows[:, -1:], positions, 0)
    return min(int(starts.max()) + slack, length)


def valid_convolution(x, kernel):
    """One matmul over the windows `(N, L - w + 1, w * d)`: about a
    quarter faster on PyTorch's CPU kernels than these narrow convolutions
    (which also pay a layout change each)."""
    width, depth, num = kernel.shape
    steps = x.shape[1] - width + 1
    windows = ops.concatenate(
        [x[:, k : k + steps, :] for k in range(width)], axis=-1
    )
    return ops.matmul(windows, ops.reshape(kernel, (width * depth, num)))


def lstm_recurrences(runs, time_mask, training=None):
    """The layers of one shape in one loop (`torch_lstm.py`)."""
    from keras_elmo.layers.backends import torch_lstm

    products = []
    for inputs, c0, h0, cell in runs:
        cell = cell.converted(keras_ops.tensor)
        products.append((keras_ops.input_products(inputs, cell), c0, h0, cell))
    return torch_lstm.grouped_recurrences(products, time_mask)


def compiled_bilm_call(bilm, inputs, **kwargs):
    """None: the call runs as it is."""
    return None
