"""The LSTM time loop on the JAX and PyTorch backends (automatic gradient).

The same step as `keras_elmo.layers.recurrence` (the TensorFlow loop with
its hand-written gradient), written with `keras.ops` and run by the
backend's own loop: `jax.lax.scan` on JAX (compiled, and under `jax.jit`
part of the whole program), a plain Python loop on PyTorch (eager autograd
records every step). Gradients come from the backend's automatic
differentiation.

Unlike the TensorFlow loop the state is masked inside the step: that is
cheap here and gives the final states and the gradients without a
post-pass.
"""

from keras import ops

from keras_elmo import backend
from keras_elmo.layers.recurrence import FORGET_BIAS


def _clip(x, limit):
    return x if limit is None else ops.clip(x, -limit, limit)


def _forget_bias(units, dtype):
    gate = ops.arange(4 * units) // units
    return ops.cast(ops.where(gate == 2, FORGET_BIAS, 0.0), dtype)


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
    """Same arguments and results as `recurrence.recurrence`."""
    if backend.name() == "jax":
        # Compiled once per shape, also when the layer is called eagerly
        # (inside an outer jax.jit it is simply part of that program).
        return _jitted()(
            products,
            time_mask,
            c0,
            h0,
            recurrent_kernel,
            projection,
            cell_clip=cell_clip,
            proj_clip=proj_clip,
        )
    return _recurrence(
        products,
        time_mask,
        c0,
        h0,
        recurrent_kernel,
        projection,
        cell_clip,
        proj_clip,
    )


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
    products = products + _forget_bias(units, products.dtype)

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
    if backend.name() == "jax":
        import jax

        return jax.lax.scan(step, state, sequences)
    if backend.name() == "torch":
        import torch

        outputs = []
        for t in range(sequences[0].shape[0]):
            state, output = step(state, tuple(s[t] for s in sequences))
            outputs.append(output)
        if not outputs:
            empty = ops.zeros((0, *state[1].shape), state[1].dtype)
            return state, empty
        return state, torch.stack(outputs)
    return ops.scan(step, state, sequences)
