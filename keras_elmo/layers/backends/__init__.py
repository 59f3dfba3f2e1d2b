"""What the layers do differently per Keras backend: the one seam.

`BiLM`, `CharCNN`, `ProjectedLSTM` and the token encoders are plain
`keras.ops` model code. Whatever has to be done differently on TensorFlow,
JAX or PyTorch is one function here, as Keras keeps its RNN loops in
`backend/<name>/rnn.py` behind one `lstm` entry point; a backend's fast
path lives in this folder and nowhere else.

- `lstm_recurrences`: the time loop of the LSTMs of one call (a BiLM
  layer's two directions). TensorFlow: a `tf.while_loop` each with a
  hand-written gradient (`tensorflow_recurrence.py`); JAX: a `lax.fori_loop`
  with a hand-written gradient (`jax_recurrence.py`); PyTorch: one loop
  for both directions with a hand-written backward pass (`torch_lstm.py`;
  `torch_recurrence.py`, a plain autograd loop, under mixed precision).
- `reverse_sequences`: `tf.reverse_sequence`, elsewhere a gather.
- `encode_distinct`: a token encoder run once per distinct token:
  `UniqueV2`, `torch.unique`, on JAX sorted rows in chunks
  (`jax_tokens.py`).
- `valid_convolution`: `ops.conv`; on PyTorch one matmul over the windows;
  on JAX XLA's with a matmul gradient.
- `input_products`: the LSTM input products; on JAX only at real tokens
  (`jax_rows.py`).
- `host_values`, `checked_range`, `check_at_most`: values are checked at
  once where they are on the host (eager TensorFlow, PyTorch, JAX outside
  `jax.jit`), by assertions inside a TensorFlow graph, not inside
  `jax.jit`.
- `variable_value`, `dense`, `ensure_shape`: reading a variable, ragged
  tensors, static shapes lost in a TensorFlow loop.
- `takes_host_tokens`: JAX and PyTorch have no string tensors; token lists
  become ids on the host there.
- `compiled_bilm_call`: an eager BiLM call on JAX runs as one `jax.jit` a
  shape (`jax_eager.py`).
"""

import keras
import numpy as np
from keras import ops

from keras_elmo.data.host_ids import is_host_tokens
from keras_elmo.errors import Described
from keras_elmo.errors import KerasElmoError


def name():
    """The Keras backend of this process: "tensorflow", "jax" or "torch"."""
    return keras.backend.backend()


# === Values on the host, and checks of them ===


def host_values(x):
    """The values of `x` as a NumPy array, or None inside a traced graph.

    On TensorFlow that is eager mode (a `tf.function` checks with in-graph
    assertions instead, see `checked_range`); on PyTorch always; on JAX
    outside `jax.jit`. A jitted JAX program has no values to look at and
    no assertions: there the values go unchecked, so check them before the
    jitted call.
    """
    backend = name()
    if backend == "tensorflow":
        import tensorflow as tf

        if tf.executing_eagerly() and not isinstance(x, tf.Variable):
            return np.asarray(x)
        return None
    if backend == "jax":
        import jax

        if isinstance(x, jax.core.Tracer):
            return None
    return ops.convert_to_numpy(variable_value(x))


def checked_range(x, maximum, message, minimum=0):
    """`x`, checked to lie in `minimum..maximum`; use the returned tensor.

    `maximum` is a number or an array broadcast against the last axis.
    Where the values are on the host they are checked at once
    (`KerasElmoError`: `message` and the range found). In a TensorFlow
    graph the returned tensor exists only once the in-graph assertions
    (same message) have passed: they are its control dependencies, so
    whatever reads it (a gather) cannot run first. Inside `jax.jit` the
    values go unchecked (see `host_values`).
    """
    values = host_values(x)
    if values is not None:
        if values.size and (values.min() < minimum or np.any(values > maximum)):
            found = f"values from {values.min()} to {values.max()}"
            raise KerasElmoError(message, received=Described(found))
        return x
    if name() != "tensorflow":
        return x
    from keras_elmo.layers.backends.tensorflow_checks import guarded_range

    return guarded_range(x, minimum, maximum, message)


def check_at_most(value, limit, message, argument):
    """Raises `KerasElmoError` when the integer `value` (of `argument`)
    exceeds `limit`.

    A value known here (a Python int or host value) is checked at once; a
    symbolic TensorFlow value by an assertion inside the graph.
    """
    if not isinstance(value, (int, np.integer)):
        known = host_values(value)
        if known is None:
            from keras_elmo.layers.backends.tensorflow_checks import (
                assert_at_most,
            )

            assert_at_most(value, limit, message)
            return
        value = int(known)
    if int(value) > limit:
        raise KerasElmoError(message, argument, received=int(value))


def variable_value(x):
    """The value of a Keras variable (JAX reads one only through it), or
    `x` itself for anything else."""
    if isinstance(x, keras.Variable) and name() != "tensorflow":
        return x.value
    return x


# === Inputs ===


def takes_host_tokens(inputs):
    """True for tokens that must become ids on the host first: token lists
    or NumPy string arrays on JAX and PyTorch, which have no string
    tensors (TensorFlow converts them inside the graph)."""
    return name() != "tensorflow" and is_host_tokens(inputs)


def dense(x):
    """`x`, with a `tf.RaggedTensor` padded to a dense tensor."""
    if name() == "tensorflow":
        import tensorflow as tf

        if isinstance(x, tf.RaggedTensor):
            return x.to_tensor()
    return x


def ensure_shape(x, shape):
    """`x` with its static shape set (TensorFlow loses it in loops)."""
    if name() == "tensorflow":
        import tensorflow as tf

        return tf.ensure_shape(x, shape)
    return x


# === Token encoder steps ===


def encode_distinct(x, encode, slack=None, finish=None):
    """`finish(encode(rows, width))` of every row of `x`, run once per
    distinct row.

    Text repeats its words (a batch of 3,000 tokens holds about 1,000
    distinct ones) and padding tokens are all alike, so the encoders run
    their char CNN once per distinct token and gather the results back:
    the same results, less work.

    - TensorFlow: `UniqueV2` over the rows.
    - PyTorch: `torch.unique(dim=0)`; the ids carry no gradient, and the
      gather back is differentiable as usual.
    - JAX: inside `jax.jit` too, with static shapes: the rows sorted, the
      distinct ones encoded in chunks that skip the unused rest and cut
      short tokens to `tail start + slack` positions (`jax_tokens.py`).

    Args:
        x: int tensor `(N, K)`, one token's ids a row.
        encode: `encode(rows, width)` -> `(M, D)`, reading only the first
            `width` positions of each row (None: all of them); a row
            whose ids are constant from `width - slack` on must give the
            same result as uncut.
        slack: int or None: the widest convolution window, or None where
            rows must not be cut.
        finish: None or a row-wise function of `encode`'s results (the
            highway layers and projection after the char CNN).
    """
    backend = name()
    if backend == "jax":
        from keras_elmo.layers.backends import jax_tokens

        return jax_tokens.encode_distinct(x, encode, slack, finish)
    if backend == "tensorflow":
        import tensorflow as tf

        rows, index = tf.raw_ops.UniqueV2(x=x, axis=[0])
        rows = tf.ensure_shape(rows, (None, x.shape[-1]))
    else:
        import torch

        rows, index = torch.unique(x, dim=0, return_inverse=True)
    encoded = encode(rows, None)
    if finish is not None:
        encoded = finish(encoded)
    return ops.take(encoded, index, axis=0)


def valid_convolution(x, kernel):
    """The "valid" 1D cross-correlation of `x` `(N, L, d)` with `kernel`
    `(w, d, n)`, stride 1.

    On PyTorch it is one matmul over the windows `(N, L - w + 1, w * d)`:
    about a quarter faster on its CPU kernels than these narrow
    convolutions (which also pay a layout change each). TensorFlow keeps
    the convolution; JAX too, with its gradient as matmuls
    (`jax_convolution.py`: XLA's own is 30 times slower inside loops).
    """
    backend = name()
    if backend == "jax":
        from keras_elmo.layers.backends import jax_convolution

        return jax_convolution.valid_convolution(
            x, ops.convert_to_tensor(kernel)
        )
    if backend != "torch":
        return ops.conv(x, kernel, strides=1, padding="valid")
    width, depth, num = kernel.shape
    steps = x.shape[1] - width + 1
    windows = ops.concatenate(
        [x[:, k : k + steps, :] for k in range(width)], axis=-1
    )
    return ops.matmul(windows, ops.reshape(kernel, (width * depth, num)))


# === The LSTM ===


def input_products(x, kernel, bias, time_mask):
    """`x @ kernel + bias`, the LSTM input products of every step.

    Args:
        x: `(T, B, D)`, time-major; kernel `(D, 4H)`; bias `(4H,)`.
        time_mask: bool `(T, B, 1)`: the products at masked steps are
            never read (zeros on JAX, which computes only the others:
            `jax_rows.py`).
    """

    def products(rows):
        return ops.matmul(rows, kernel) + bias

    if name() != "jax":
        return products(x)
    from keras_elmo.layers.backends.jax_rows import valid_rows

    steps, batch, depth = x.shape
    flat = valid_rows(ops.reshape(x, (-1, depth)), time_mask, products)
    return ops.reshape(flat, (steps, batch, flat.shape[-1]))


def lstm_recurrences(runs, time_mask, training=None):
    """`lstm_recurrence` of independent LSTMs over one time mask.

    Args:
        runs: list of `(products, c0, h0, recurrent_kernel, projection,
            cell_clip, proj_clip)`, one a layer (see `lstm_recurrence`).
        time_mask: bool `(T, B, 1)`, shared by the layers.
        training: as in `lstm_recurrence`.

    Returns:
        a list of `(outputs, c_final, h_final)`, one a layer.

    On PyTorch the layers of one shape run in one loop (`torch_lstm.py`).
    """
    if name() == "torch":
        from keras_elmo.layers.backends import torch_lstm

        runs = [
            (*run[:3], *(_tensor(k) for k in run[3:5]), *run[5:])
            for run in runs
        ]
        return torch_lstm.grouped_recurrences(runs, time_mask)
    return [
        lstm_recurrence(run[0], time_mask, *run[1:], training=training)
        for run in runs
    ]


def _tensor(x):
    return None if x is None else ops.convert_to_tensor(x)


def lstm_recurrence(
    products,
    time_mask,
    c0,
    h0,
    recurrent_kernel,
    projection,
    cell_clip,
    proj_clip,
    training=None,
):
    """Runs the projected, clipped LSTM over precomputed input products.

    Args:
        products: `(T, B, 4H)`, `x_t @ kernel + bias` for every step, in the
            compute dtype; gates ordered (i, j, f, o); the forget bias is
            added here.
        time_mask: bool `(T, B, 1)`, a prefix of each sequence; at masked
            steps the output is zero and the state is not updated.
        c0: float32 `(B, H)`; h0: `(B, P)` in the compute dtype.
        recurrent_kernel: `(P, 4H)`; projection: `(H, P)` or None.
        cell_clip, proj_clip: float or None.
        training: bool. On TensorFlow, True keeps what the hand-written
            gradient needs; otherwise the forward pass runs alone.

    Returns:
        `(outputs (T, B, P), c_final, h_final)`.
    """
    backend = name()
    kernels = [recurrent_kernel, projection]
    if backend == "tensorflow":
        import tensorflow as tf

        from keras_elmo.layers.backends import tensorflow_recurrence

        loop = tensorflow_recurrence.recurrence
        if not training:
            loop = tensorflow_recurrence.inference_recurrence
        kernels = [
            None if k is None else tf.convert_to_tensor(k) for k in kernels
        ]
    elif backend == "torch":
        from keras_elmo.layers.backends.torch_recurrence import (
            torch_recurrence as loop,
        )
    else:
        from keras_elmo.layers.backends.jax_recurrence import (
            jax_recurrence as loop,
        )
    if backend != "tensorflow":
        kernels = [_tensor(k) for k in kernels]
    return loop(products, time_mask, c0, h0, *kernels, cell_clip, proj_clip)


def reverse_sequences(x, lengths):
    """Each row of `x` `(batch, time, ...)` reversed within its length."""
    if name() == "tensorflow":
        import tensorflow as tf

        return tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)
    # A gather: position t of row b reads `lengths[b] - 1 - t` inside the
    # row, itself past it.
    batch, time = ops.shape(x)[0], ops.shape(x)[1]
    positions = ops.arange(time, dtype="int32")[None, :]
    lengths = ops.cast(lengths, "int32")[:, None]
    source = ops.where(positions < lengths, lengths - 1 - positions, positions)
    rows = ops.arange(batch, dtype="int32")[:, None] * time
    flat = ops.reshape(x, (batch * time, *x.shape[2:]))
    picked = ops.take(flat, ops.reshape(rows + source, (-1,)), axis=0)
    return ops.reshape(picked, ops.shape(x))


# === Whole calls ===


def compiled_bilm_call(bilm, inputs, **kwargs):
    """An eager `BiLM` call run as one compiled program where the backend
    gains from it (JAX: see `jax_eager.py`), else None (call as usual)."""
    if name() != "jax":
        return None
    from keras_elmo.layers.backends import jax_eager

    return jax_eager.bilm_call(bilm, inputs, **kwargs)
