"""The LSTM time loop on the JAX and PyTorch backends (automatic gradient).

The same step as `keras_elmo.layers.recurrence` (the TensorFlow loop with
its hand-written gradient), written with `keras.ops` and run by the
backend's own loop: `jax.lax.scan` on JAX (compiled, and under `jax.jit`
part of the whole program), a plain Python loop of torch ops on PyTorch
(eager autograd records every step). Gradients come from the backend's automatic
differentiation.

Unlike the TensorFlow loop the state is masked inside the step: that is
cheap here and gives the final states and the gradients without a
post-pass.
"""

import keras
from keras import ops

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
    if keras.backend.backend() == "jax":
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
    if keras.backend.backend() == "torch":
        return _torch_recurrence(
            products,
            time_mask,
            c0,
            h0,
            recurrent_kernel,
            projection,
            cell_clip,
            proj_clip,
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
    if keras.backend.backend() == "jax":
        import jax

        return jax.lax.scan(step, state, sequences)
    return ops.scan(step, state, sequences)


def _torch_recurrence(
    products,
    time_mask,
    c0,
    h0,
    recurrent_kernel,
    projection,
    cell_clip,
    proj_clip,
):
    """The same step in torch ops: `keras.ops` costs a conversion and a
    dispatch per op, and a step is a dozen small ops."""
    import torch

    units = c0.shape[1]
    products = products + _forget_bias(units, products.dtype)
    c, h = c0, h0
    outputs = []
    for t in range(products.shape[0]):
        z = torch.addmm(products[t], h, recurrent_kernel).float()
        i = torch.sigmoid(z[:, :units])
        candidate = torch.tanh(z[:, units : 2 * units])
        f = torch.sigmoid(z[:, 2 * units : 3 * units])
        o = torch.sigmoid(z[:, 3 * units :])
        new_c = f * c + i * candidate
        if cell_clip is not None:
            new_c = new_c.clamp(-cell_clip, cell_clip)
        new_h = (o * torch.tanh(new_c)).to(h.dtype)
        if projection is not None:
            new_h = new_h @ projection
        if proj_clip is not None:
            new_h = new_h.clamp(-proj_clip, proj_clip)
        valid = time_mask[t]
        c = torch.where(valid, new_c, c)
        h = torch.where(valid, new_h, h)
        outputs.append(new_h * valid.to(new_h.dtype))
    if not outputs:
        return ops.zeros((0, *h0.shape), h0.dtype), c, h
    return torch.stack(outputs), c, h
