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
not be a prefix.

Both loops work on as few rows as they can. The rows are taken longest
first (by their last valid step), so the rows still running at a step are
the first ones; the steps are cut, at bounds found at run time, into
segments that run on the first `B`, 256, 64, 16, 4 or 1 rows (`_segments`,
`_widths`): in a batch of 32 where one sentence is three times as long as
the rest, its tail costs single-row products instead of 32-row ones.
A segment ends where fewer rows are left than the next width holds, and
the last ends at the last step where any row has a token: a time axis
padded to a fixed length, as jitted programs often are, costs no steps.
"""

import functools

from keras_elmo.layers.backends.cell import Cell
from keras_elmo.layers.backends.cell import forget_bias


def jax_recurrence(products, time_mask, c0, h0, cell):
    """The loop over input products `(T, B, 4H)` (bias included; the
    forget bias is added here), `time_mask` `(T, B, 1)`, `c0` float32
    `(B, H)`, `h0` `(B, P)` and the `Cell` (its recurrent kernel,
    projection and clips): `(outputs (T, B, P), c_final, h_final)`.

    Compiled once per shape and clips, also when the layer is called
    eagerly (inside an outer `jax.jit` it is simply part of that
    program).
    """
    if products.shape[0] == 0:
        import jax.numpy as jnp

        return jnp.zeros((0, *h0.shape), h0.dtype), c0, h0
    loop_cell = cell._replace(kernel=None, bias=None)
    return _jitted()(products, time_mask, c0, h0, loop_cell)


@functools.cache
def _jitted():
    import jax

    # A Cell is a pytree of its weights; its clips are static.
    jax.tree_util.register_pytree_node(
        Cell, lambda cell: (tuple(cell[:4]), cell.clips), _cell_from_tree
    )
    loop = jax.custom_vjp(_loop)
    loop.defvjp(_loop_keeping, _backward)
    return jax.jit(loop)


def _cell_from_tree(clips, weights):
    return Cell(*weights, *clips)


def _loop(products, time_mask, c0, h0, cell):
    return _forward(products, time_mask, c0, h0, cell)[:3]


def _loop_keeping(products, time_mask, c0, h0, cell):
    """`_loop` and what its gradient needs."""
    outputs, c, h, saved = _forward(
        products, time_mask, c0, h0, cell, keep=True
    )
    return (outputs, c, h), (saved, time_mask, c0, h0, cell)


def _rows(time_mask):
    """`(order, inverse, segments)`: the rows by their last valid step,
    longest first (stable), the permutation back, and `_segments` in that
    order. With one width the rows stay as they are (`order` None)."""
    import jax.numpy as jnp

    steps = jnp.arange(1, time_mask.shape[0] + 1)[:, None]
    last = jnp.max(jnp.where(time_mask[:, :, 0], steps, 0), axis=0)
    widths = _widths(time_mask.shape[1])
    if len(widths) == 1:
        return None, None, [(widths[0], 0, jnp.max(last, initial=0))]
    order = jnp.argsort(-last, stable=True)
    return order, jnp.argsort(order), _segments(widths, last[order])


def _widths(batch):
    """The row counts the loop is compiled for: the batch, then each of
    256, 64, 16, 4 and 1 up to half of it; a batch under 8 rows only.
    One step of the original size (AMD EPYC, AVX-512, 2 cores) took 6.3
    ms on 32 rows, 4.2 on 16, 3.3 on 8, 2.5 on 4 and 1.2 on one (2 rows:
    3.2). Each width is one more loop body to compile (same CPU: 0.15-0.25
    s for the forward loop, 0.25-0.5 s with the gradient's), hence widths
    a factor 4 apart: on the benchmark's batches of 32, those step times
    give widths 16, 4, 1 a saving of 24 % of the loop's time, and 16, 8,
    4, 1 25 % (computed from the step times, not timed)."""
    if batch < 8:
        return [batch]
    return [batch] + [w for w in (256, 64, 16, 4, 1) if 2 * w <= batch]


def _segments(widths, ends):
    """`[(width, start, stop)]`: steps `start..stop-1` need only the first
    `width` rows (in `_rows` order, whose last steps are `ends`); a width
    runs from the step where at most that many rows are left
    (`ends[width]`, the next row's last step) to where the next width's
    segment starts."""
    starts = [0] + [ends[w] for w in widths[1:]]
    stops = starts[1:] + [ends[0]]
    return list(zip(widths, starts, stops))


def _take(x, order, axis=0):
    """`x` along `axis` in `order` (None: as it is)."""
    import jax.numpy as jnp

    if order is None:
        return x
    return jnp.take(x, order, axis=axis, mode="clip")


def _clip(x, limit):
    import jax.numpy as jnp

    return x if limit is None else jnp.clip(x, -limit, limit)


def _pass_through(x, limit):
    """Where the gradient of `_clip(x, limit)` is 1 (as `jnp.clip`'s)."""
    import jax.numpy as jnp

    if limit is None:
        return jnp.ones_like(x)
    return (jnp.abs(x) <= limit).astype(x.dtype)


def _forward(products, time_mask, c0, h0, cell, keep=False):
    """The loop: `(outputs, c_final, h_final, saved)`; with `keep`, saved
    holds per step, in `_rows` order, the gate activations
    (i, tanh j, f, o), the cell and projection before clipping and the
    states after the step."""
    import jax
    import jax.numpy as jnp

    units = c0.shape[1]
    products = products + forget_bias(units, products.dtype)
    order, inverse, segments = _rows(time_mask)
    time_mask = _take(time_mask, order, axis=1)
    kernel, projection = cell.recurrent_kernel, cell.projection

    def step(width, t, carry):
        c, h, buffers = carry
        product = products[t] if order is None else products[t, order[:width]]
        valid = time_mask[t, :width]
        z = (product + h @ kernel).astype("float32")
        i = jax.nn.sigmoid(z[:, :units])
        candidate = jnp.tanh(z[:, units : 2 * units])
        f = jax.nn.sigmoid(z[:, 2 * units : 3 * units])
        o = jax.nn.sigmoid(z[:, 3 * units :])
        cell_raw = f * c + i * candidate
        new_c = _clip(cell_raw, cell.cell_clip)
        m = (o * jnp.tanh(new_c)).astype(h.dtype)
        proj_raw = m if projection is None else m @ projection
        proj_raw = proj_raw.astype(h.dtype)
        new_h = _clip(proj_raw, cell.proj_clip)
        c = jnp.where(valid, new_c, c)
        h = jnp.where(valid, new_h, h)
        values = [jnp.where(valid, new_h, jnp.zeros_like(new_h))]
        if keep:
            gates = jnp.concatenate([i, candidate, f, o], axis=1)
            values += [gates, cell_raw, proj_raw, c, h]
        buffers = [_write(b, t, v) for b, v in zip(buffers, values)]
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
    c, h = _take(c0, order), _take(h0, order)
    for width, start, stop in segments:
        c_rows, h_rows, buffers = jax.lax.fori_loop(
            start,
            stop,
            functools.partial(step, width),
            (c[:width], h[:width], buffers),
        )
        c, h = c.at[:width].set(c_rows), h.at[:width].set(h_rows)
    outputs = _take(buffers[0], inverse, axis=1)
    c, h = _take(c, inverse), _take(h, inverse)
    return outputs, c, h, (tuple(buffers[1:]) if keep else None)


def _write(buffer, t, rows):
    """`buffer[t, :len(rows)] = rows`."""
    import jax

    return jax.lax.dynamic_update_slice(buffer, rows[None], (t, 0, 0))


def _backward(residuals, cotangents):
    """The cotangents of `(products, time_mask, c0, h0, cell)` from those
    of `(outputs, c_final, h_final)`; computed in the forward loop's row
    order, put back in the caller's at the end."""
    import jax
    import jax.numpy as jnp

    saved, time_mask, c0, h0, cell = residuals
    kernel, projection = cell.recurrent_kernel, cell.projection
    gates, _, proj_raw, cells, states = saved
    order, inverse, segments = _rows(time_mask)
    time_mask, d_outputs = (
        _take(x, order, axis=1) for x in (time_mask, cotangents[0])
    )
    c0, h0, d_c, d_h = (_take(x, order) for x in (c0, h0, *cotangents[1:]))
    dtype = proj_raw.dtype
    _, _, f, o = jnp.split(gates, 4, axis=2)
    pass_h, cell_from_m, pass_c, gate_factors, cell_tanh = _reverse_factors(
        saved, time_mask, c0, cell
    )
    # Gradients are carried in float32 under mixed precision too.
    d_outputs = d_outputs.astype("float32")

    def back_step(width, stop, k, carry):
        t = stop - 1 - k
        d_c, d_h, d_z_all, d_proj_raw_all = carry
        d_proj_raw = (d_h + d_outputs[t, :width]) * pass_h[t, :width]
        d_proj_raw = d_proj_raw.astype(dtype)
        d_m = d_proj_raw if projection is None else d_proj_raw @ projection.T
        d_m = d_m.astype("float32")
        d_cell = (d_c + d_m * cell_from_m[t, :width]) * pass_c[t, :width]
        d_z = jnp.concatenate([d_cell, d_cell, d_cell, d_m], axis=1)
        d_z = (d_z * gate_factors[t, :width]).astype(dtype)
        d_h_prev = (d_z @ kernel.T).astype("float32")
        # A masked step left the state as it was: its gradient passes on.
        step_valid = time_mask[t, :width]
        d_h = jnp.where(step_valid, d_h_prev, d_h)
        d_c = jnp.where(step_valid, d_cell * f[t, :width], d_c)
        d_z_all = _write(d_z_all, t, d_z)
        d_proj_raw_all = _write(d_proj_raw_all, t, d_proj_raw)
        return d_c, d_h, d_z_all, d_proj_raw_all

    d_c, d_h = d_c.astype("float32"), d_h.astype("float32")
    d_z = jnp.zeros(gates.shape, dtype)
    d_proj_raw = jnp.zeros(proj_raw.shape, dtype)
    for width, start, stop in reversed(segments):
        d_c_rows, d_h_rows, d_z, d_proj_raw = jax.lax.fori_loop(
            0,
            stop - start,
            functools.partial(back_step, width, stop),
            (d_c[:width], d_h[:width], d_z, d_proj_raw),
        )
        d_c, d_h = d_c.at[:width].set(d_c_rows), d_h.at[:width].set(d_h_rows)
    m = None if projection is None else (o * cell_tanh).astype(dtype)
    return (
        _take(d_z, inverse, axis=1),
        None,
        _take(d_c, inverse).astype(c0.dtype),
        _take(d_h, inverse).astype(h0.dtype),
        _weight_gradients(cell, _previous(h0, states), m, d_z, d_proj_raw),
    )


def _reverse_factors(saved, time_mask, c0, cell):
    """What the reverse step multiplies by that does not depend on the
    gradient it carries, for all steps at once: the pass-through of the
    projection's clip (zero past a row's last valid step), the cell's
    factor from `m`, the pass-through of the cell's clip, the gate
    factors (zero at masked steps), and the clipped cell's tanh."""
    import jax.numpy as jnp

    cell_clip, proj_clip = cell.clips
    gates, cell_raw, proj_raw, cells, _ = saved
    i, candidate, f, o = jnp.split(gates, 4, axis=2)
    valid = time_mask.astype("float32")
    c_prev = _previous(c0, cells)
    cell_tanh = jnp.tanh(_clip(cell_raw, cell_clip))
    # Past a row's last valid step its outputs' cotangents are masked out.
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
    return pass_h, cell_from_m, pass_c, gate_factors, cell_tanh


def _weight_gradients(cell, h_prev, m, d_z, d_proj_raw):
    """The gradient `Cell` of the recurrent kernel (from the states each
    step read, `h_prev`) and of the projection (from its inputs `m`; None
    without one): one large matmul each, over all steps."""
    kernel, projection = cell.recurrent_kernel, cell.projection
    d_kernel = _flat(h_prev).T @ _flat(d_z)
    d_projection = None
    if projection is not None:
        d_projection = _flat(m).T @ _flat(d_proj_raw)
        d_projection = d_projection.astype(projection.dtype)
    return cell._replace(
        recurrent_kernel=d_kernel.astype(kernel.dtype), projection=d_projection
    )


def _flat(x):
    return x.reshape(-1, x.shape[-1])


def _previous(initial, states):
    """The state before each step: `initial`, then `states` but the last."""
    import jax.numpy as jnp

    return jnp.concatenate([initial[None], states], axis=0)[: len(states)]
