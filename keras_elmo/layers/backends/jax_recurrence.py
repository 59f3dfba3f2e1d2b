"""The LSTM time loop on JAX: a `lax.fori_loop` with a hand-written gradient.

The same step as `tensorflow_recurrence.py`, and the same reasons for a
hand-written gradient. JAX's automatic gradient of a scan adds the weight
gradients up inside the reverse loop: at every step a `(P, B) @ (B, 4H)`
product and a read and write of the whole `(P, 4H)` sum (32 MB at the
original size), and the same for the projection. Here the reverse loop
does only the two products that must be sequential (through the
projection and the recurrent kernel) and a few multiplies; everything that
does not depend on the gradient it carries is computed before it on whole
`(T, B, ...)` tensors, and the weight gradients after it, one large matmul
each (`jax.custom_vjp`).

Unlike the TensorFlow loop the state is masked inside the step (cheap
here): the final states come out of the loop, and the reverse loop passes
the gradient of a masked step's state through unchanged, so the mask need
not be a prefix. Both loops run only up to the last step where any row
has a token (a bound found at run time, which a `lax.scan` cannot have):
a time axis padded to a fixed length, as jitted programs often are,
costs no steps.
"""

import functools

from keras_elmo.layers.backends.gates import forget_bias


def jax_recurrence(
    products,
    time_mask,
    c0,
    h0,
    recurrent_kernel,
    projection,
    cell_clip,
    proj_clip,
):
    """Same arguments and results as `backends.lstm_recurrence`.

    Compiled once per shape, also when the layer is called eagerly (inside
    an outer `jax.jit` it is simply part of that program).
    """
    if products.shape[0] == 0:
        import jax.numpy as jnp

        return jnp.zeros((0, *h0.shape), h0.dtype), c0, h0
    return _jitted()(
        products,
        time_mask,
        c0,
        h0,
        recurrent_kernel,
        projection,
        cell_clip,
        proj_clip,
    )


@functools.cache
def _jitted():
    import jax

    loop = jax.custom_vjp(_loop, nondiff_argnums=(6, 7))
    loop.defvjp(_loop_keeping, _backward)
    return jax.jit(loop, static_argnums=(6, 7))


def _loop(products, time_mask, c0, h0, kernel, projection, cell, proj):
    return _forward(
        products, time_mask, c0, h0, kernel, projection, cell, proj
    )[:3]


def _loop_keeping(products, time_mask, c0, h0, kernel, projection, cell, proj):
    """`_loop` and what its gradient needs."""
    outputs, c, h, saved = _forward(
        products, time_mask, c0, h0, kernel, projection, cell, proj, keep=True
    )
    return (outputs, c, h), (saved, time_mask, c0, h0, kernel, projection)


def _clip(x, limit):
    import jax.numpy as jnp

    return x if limit is None else jnp.clip(x, -limit, limit)


def _pass_through(x, limit):
    """Where the gradient of `_clip(x, limit)` is 1 (as `jnp.clip`'s)."""
    import jax.numpy as jnp

    if limit is None:
        return jnp.ones_like(x)
    return (jnp.abs(x) <= limit).astype(x.dtype)


def _forward(
    products,
    time_mask,
    c0,
    h0,
    kernel,
    projection,
    cell_clip,
    proj_clip,
    keep=False,
):
    """The loop: `(outputs, c_final, h_final, saved)`; with `keep`, saved
    holds per step the gate activations (i, tanh j, f, o), the cell and
    projection before clipping and the states after the step."""
    import jax
    import jax.numpy as jnp

    units = c0.shape[1]
    products = products + forget_bias(units, products.dtype)

    def step(t, carry):
        c, h, buffers = carry
        product, valid = products[t], time_mask[t]
        z = (product + h @ kernel).astype("float32")
        i = jax.nn.sigmoid(z[:, :units])
        candidate = jnp.tanh(z[:, units : 2 * units])
        f = jax.nn.sigmoid(z[:, 2 * units : 3 * units])
        o = jax.nn.sigmoid(z[:, 3 * units :])
        cell_raw = f * c + i * candidate
        new_c = _clip(cell_raw, cell_clip)
        m = (o * jnp.tanh(new_c)).astype(h.dtype)
        proj_raw = m if projection is None else m @ projection
        proj_raw = proj_raw.astype(h.dtype)
        new_h = _clip(proj_raw, proj_clip)
        c = jnp.where(valid, new_c, c)
        h = jnp.where(valid, new_h, h)
        values = [jnp.where(valid, new_h, jnp.zeros_like(new_h))]
        if keep:
            gates = jnp.concatenate([i, candidate, f, o], axis=1)
            values += [gates, cell_raw, proj_raw, c, h]
        buffers = [b.at[t].set(v) for b, v in zip(buffers, values)]
        return c, h, buffers

    shapes = [(h0.shape[1], h0.dtype)]
    if keep:
        shapes += [
            (4 * units, "float32"),
            (units, "float32"),
            (h0.shape[1], h0.dtype),
            (units, c0.dtype),
            (h0.shape[1], h0.dtype),
        ]
    buffers = [jnp.zeros((*time_mask.shape[:2], n), d) for n, d in shapes]
    c, h, buffers = jax.lax.fori_loop(
        0, _steps(time_mask), step, (c0, h0, buffers)
    )
    return buffers[0], c, h, (tuple(buffers[1:]) if keep else None)


def _steps(time_mask):
    """The steps to run: up to the last one valid in any row (past it
    nothing changes and every output is zero)."""
    import jax.numpy as jnp

    any_valid = jnp.any(time_mask, axis=(1, 2))
    steps = jnp.where(any_valid, jnp.arange(1, len(any_valid) + 1), 0)
    return jnp.max(steps, initial=0)


def _backward(cell_clip, proj_clip, residuals, cotangents):
    """The cotangents of `(products, time_mask, c0, h0, kernel,
    projection)` from those of `(outputs, c_final, h_final)`."""
    import jax
    import jax.numpy as jnp

    saved, time_mask, c0, h0, kernel, projection = residuals
    gates, cell_raw, proj_raw, cells, states = saved
    d_outputs, d_c, d_h = cotangents
    dtype = proj_raw.dtype
    i, candidate, f, o = jnp.split(gates, 4, axis=2)
    valid = time_mask.astype("float32")
    # Everything the reverse step needs that does not depend on the
    # gradient it carries, for all steps at once.
    c_prev = _previous(c0, cells)
    cell_tanh = jnp.tanh(_clip(cell_raw, cell_clip))
    pass_h = _pass_through(proj_raw.astype("float32"), proj_clip) * valid
    cell_from_m = o * (1.0 - cell_tanh * cell_tanh)
    pass_c = _pass_through(cell_raw, cell_clip)
    gate_factors = valid * jnp.concatenate(
        [
            candidate * i * (1.0 - i),
            i * (1.0 - candidate * candidate),
            c_prev * f * (1.0 - f),
            cell_tanh * o * (1.0 - o),
        ],
        axis=2,
    )
    # Gradients are carried in float32 under mixed precision too.
    d_outputs = d_outputs.astype("float32")

    def back_step(k, carry):
        t = steps - 1 - k
        d_c, d_h, d_z_all, d_proj_raw_all = carry
        d_proj_raw = ((d_h + d_outputs[t]) * pass_h[t]).astype(dtype)
        d_m = d_proj_raw if projection is None else d_proj_raw @ projection.T
        d_m = d_m.astype("float32")
        d_cell = (d_c + d_m * cell_from_m[t]) * pass_c[t]
        d_z = jnp.concatenate([d_cell, d_cell, d_cell, d_m], axis=1)
        d_z = (d_z * gate_factors[t]).astype(dtype)
        d_h_prev = (d_z @ kernel.T).astype("float32")
        # A masked step left the state as it was: its gradient passes on.
        step_valid = time_mask[t]
        d_h = jnp.where(step_valid, d_h_prev, d_h)
        d_c = jnp.where(step_valid, d_cell * f[t], d_c)
        d_z_all = d_z_all.at[t].set(d_z)
        d_proj_raw_all = d_proj_raw_all.at[t].set(d_proj_raw)
        return d_c, d_h, d_z_all, d_proj_raw_all

    # Past the last valid step the outputs' cotangents are masked out.
    steps = _steps(time_mask)
    d_c0, d_h0, d_z, d_proj_raw = jax.lax.fori_loop(
        0,
        steps,
        back_step,
        (
            d_c.astype("float32"),
            d_h.astype("float32"),
            jnp.zeros(gates.shape, dtype),
            jnp.zeros(proj_raw.shape, dtype),
        ),
    )
    # Weight gradients: one large matmul each, over all steps.
    h_prev = _previous(h0, states)
    d_kernel = _flat(h_prev).T @ _flat(d_z)
    d_projection = None
    if projection is not None:
        m = (o * cell_tanh).astype(dtype)
        d_projection = (_flat(m).T @ _flat(d_proj_raw)).astype(projection.dtype)
    return (
        d_z,
        None,
        d_c0.astype(c0.dtype),
        d_h0.astype(h0.dtype),
        d_kernel.astype(kernel.dtype),
        d_projection,
    )


def _flat(x):
    return x.reshape(-1, x.shape[-1])


def _previous(initial, states):
    """The state before each step: `initial`, then `states` but the last."""
    import jax.numpy as jnp

    return jnp.concatenate([initial[None], states], axis=0)[: len(states)]
