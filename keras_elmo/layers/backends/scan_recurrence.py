"""The LSTM time loop on JAX (and any other backend): a scan, with
automatic gradients.

The same step as `tensorflow_recurrence.py` (the TensorFlow loop with its
hand-written gradient), written with `keras.ops` and run by
`jax.lax.scan`: compiled, and under `jax.jit` part of the whole program.
Gradients come from JAX's automatic differentiation.

Unlike the TensorFlow loop the state is masked inside the step: that is
cheap here and gives the final states and the gradients without a
post-pass.
"""

import keras
from keras import ops

from keras_elmo.layers.backends.gates import forget_bias


def _clip(x, limit):
    return x if limit is None else ops.clip(x, -limit, limit)


def scan_recurrence(
    products,
    time_mask,
    c0,
    h0,
    recurrent_kernel,
    projection,
    cell_clip,
    proj_clip,
):
    """Same arguments and results as `backends.lstm_recurrence`."""
    tensors = (products, time_mask, c0, h0, recurrent_kernel, projection)
    if keras.backend.backend() == "jax":
        # Compiled once per shape, also when the layer is called eagerly
        # (inside an outer jax.jit it is simply part of that program).
        return _jitted()(*tensors, cell_clip=cell_clip, proj_clip=proj_clip)
    return _recurrence(*tensors, cell_clip, proj_clip)


_JITTED = []


def _jitted():
    if not _JITTED:
        import jax

        _JITTED.append(
            jax.jit(_recurrence, static_argnames=("cell_clip", "proj_clip"))
        )
    return _JITTED[0]


def _recurrence(
    products,
    time_mask,
    c0,
    h0,
    recurrent_kernel,
    projection,
    cell_clip,
    proj_clip,
):
    units = c0.shape[1]
    products = products + forget_bias(units, products.dtype)

    def step(state, inputs):
        c, h = state
        product, valid = inputs
        z = ops.cast(product + ops.matmul(h, recurrent_kernel), "float32")
        sigmoids = ops.sigmoid(z)
        i = sigmoids[:, :units]
        f = sigmoids[:, 2 * units : 3 * units]
        o = sigmoids[:, 3 * units :]
        candidate = ops.tanh(z[:, units : 2 * units])
        new_c = _clip(f * c + i * candidate, cell_clip)
        m = ops.cast(o * ops.tanh(new_c), h.dtype)
        if projection is not None:
            m = ops.matmul(m, projection)
        new_h = _clip(m, proj_clip)
        output = ops.where(valid, new_h, ops.zeros_like(new_h))
        state = (ops.where(valid, new_c, c), ops.where(valid, new_h, h))
        return state, output

    (c, h), outputs = _loop(step, (c0, h0), (products, time_mask))
    return outputs, c, h


def _loop(step, state, sequences):
    """`(final_state, stacked_outputs)` of `step` over the time axis."""
    if keras.backend.backend() == "jax":
        import jax

        return jax.lax.scan(step, state, sequences)
    return ops.scan(step, state, sequences)
