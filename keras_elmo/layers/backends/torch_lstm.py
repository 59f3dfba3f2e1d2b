"""The LSTM time loop on PyTorch: both directions at once, a hand-written
backward pass.

The ideas of `tensorflow_recurrence.py`, in torch:

- The layers of one call (a BiLM's forward and backward LSTM) run in one
  loop: each step's elementwise ops work on both at once, `(D, B, ...)`,
  so a step costs about a dozen kernels for the pair, not a dozen each.
- Every step writes into buffers allocated once per call (`out=` and
  in-place activations), and no copy of the input products `(T, B, 4H)`
  is made (the forget bias is added to each step's gates), which matters
  for long sequences.
- The recurrent kernel and the projection are packed once per call for
  oneDNN and multiplied by at every step (`torch_matmul.py`): with a
  batch of rows, re-packing a large weight for every product was most of
  a step's time.
- The rows are sorted by length (as AllenNLP does), so step `t` runs on
  the first `n_t` rows only: rows whose sentence has ended are neither
  computed nor updated, which also leaves their final state in place.
- Training runs as a `torch.autograd.Function`: the forward loop keeps the
  gate activations, cells and projections; its backward is one reverse
  loop doing only the sequential products (through the projection and the
  recurrent kernel) and a few multiplies, and the weight gradients are
  single large matmuls over all steps after it. Autograd records one node
  per call instead of a dozen per step and direction, and no longer sums
  a full-size weight gradient every step.
- Without gradients (`torch.no_grad()`, or no input requiring one) the
  same loop runs with one scratch slot per buffer, keeping nothing.

The arithmetic is that of the other backends' loops (float32 gates, clip
after the cell update and after the projection, gradient 1 inside the
clip range and 0 outside, as `clamp`), so the outputs and gradients match
them to float32 rounding.
"""

import numpy as np
import torch

from keras_elmo.layers.backends.cell import FORGET_BIAS
from keras_elmo.layers.backends.torch_matmul import RepeatedMatmul


def grouped_recurrences(runs, time_mask):
    """`backends.lstm_recurrences` on PyTorch, from input products: runs
    of `(products, c0, h0, cell)`. The float32 layers of one shape and
    clip values run together (`recurrences`); a layer in another dtype
    (mixed precision) runs the plain autograd loop of
    `torch_recurrence.py`."""
    results = [None] * len(runs)
    groups = {}
    for index, (products, c0, h0, cell) in enumerate(runs):
        if products.dtype != torch.float32 or h0.dtype != torch.float32:
            from keras_elmo.layers.backends.torch_recurrence import (
                torch_recurrence,
            )

            results[index] = torch_recurrence(products, time_mask, c0, h0, cell)
            continue
        shapes = tuple(
            None if x is None else tuple(x.shape)
            for x in (products, c0, h0, cell.recurrent_kernel, cell.projection)
        )
        groups.setdefault((shapes, cell.clips), []).append(index)
    for indices in groups.values():
        outputs = recurrences([runs[i] for i in indices], time_mask)
        for index, result in zip(indices, outputs):
            results[index] = result
    return results


def recurrences(runs, time_mask):
    """Runs `D` LSTMs of one shape over the same time mask, together.

    Args:
        runs: list of `(products, c0, h0, cell)`, one a layer, in the
            shapes of `torch_recurrence`; all float32, with the same
            shapes and clips (projection all None or none).
        time_mask: bool `(T, B, 1)`, a prefix of each row.

    Returns:
        a list of `(outputs (T, B, P), c_final, h_final)`, one a layer.
    """
    products, c0, h0, cells = zip(*runs)
    lengths = time_mask[:, :, 0].sum(0).cpu().numpy()
    plan = _Plan(lengths, products[0].shape[0], cells)
    tensors = (*products, *c0, *h0, *(c.recurrent_kernel for c in cells))
    if plan.projected:
        tensors += tuple(c.projection for c in cells)
    inputs_need_grad = any(x.requires_grad for x in tensors)
    if torch.is_grad_enabled() and inputs_need_grad:
        outputs, c, h = _Recurrence.apply(plan, *tensors)
    else:
        with torch.no_grad():
            state = _forward(plan, tensors, save=False)
        outputs, c, h = state["outputs"], state["c_final"], state["h_final"]
    return [(outputs[d], c[d], h[d]) for d in range(len(runs))]


class _Plan:
    """The row order and the number of rows running at each step; the
    number of layers (`cells`), their clips `(cell_clip, proj_clip)` and
    whether they have a projection."""

    def __init__(self, lengths, num_steps, cells):
        self.num_layers, self.clips = len(cells), cells[0].clips
        self.projected = cells[0].projection is not None
        lengths = np.asarray(lengths, dtype=np.int64)
        order = np.argsort(-lengths, kind="stable")
        self.sorted = bool(np.all(order == np.arange(len(order))))
        self.order = torch.as_tensor(order)
        self.inverse = torch.as_tensor(np.argsort(order))
        sorted_lengths = lengths[order]
        self.lengths = torch.as_tensor(sorted_lengths)
        self.num_steps = num_steps
        steps = int(sorted_lengths.max()) if len(lengths) else 0
        # rows[t]: the sorted rows still running at step t.
        self.rows = [int(np.sum(sorted_lengths > t)) for t in range(steps)]

    def sort(self, x, axis):
        return x if self.sorted else x.index_select(axis, self.order)

    def unsort(self, x, axis):
        return x if self.sorted else x.index_select(axis, self.inverse)


def _split(plan, tensors):
    """`(products, c0, h0, kernels, projections)`, each a list of D."""
    size = plan.num_layers
    groups = [list(tensors[i : i + size]) for i in range(0, len(tensors), size)]
    if not plan.projected:
        groups.append([None] * size)
    return groups


def _forward(plan, tensors, save):
    """The forward loop. Returns its buffers (see `_buffers`), the
    outputs and the final states, in the callers' row order."""
    products, c0, h0, kernels, projections = _split(plan, tensors)
    cell_clip, proj_clip = plan.clips
    num_layers = len(products)
    units = c0[0].shape[1]
    steps, batch = plan.num_steps, products[0].shape[1]
    # In row order (a copy only when the rows are not sorted already).
    inputs = [plan.sort(x, 1) for x in products]
    c = plan.sort(torch.stack(c0), 1).clone()
    h_initial = plan.sort(torch.stack(h0), 1)
    shape = (num_layers, steps, batch)
    buffers = _buffers(shape, units, h0[0].shape[1], plan.projected, save)
    outputs = buffers["outputs"]
    recurrent = [RepeatedMatmul(kernel) for kernel in kernels]
    if plan.projected:
        projections = [RepeatedMatmul(weight) for weight in projections]
    for t, rows in enumerate(plan.rows):
        h = h_initial if t == 0 else outputs[:, t - 1]
        gates = _slot(buffers["gates"], t, save)[:, :rows]
        for d in range(num_layers):
            recurrent[d](h[d, :rows], out=gates[d], add=inputs[d][t, :rows])
        # The forget bias is added here, not to a copy of the products.
        gates[..., 2 * units : 3 * units].add_(FORGET_BIAS)
        gates[..., units : 2 * units].tanh_()
        gates[..., :units].sigmoid_()
        gates[..., 2 * units :].sigmoid_()
        i, j, f, o = gates.unflatten(-1, (4, units)).unbind(-2)
        cell_raw = _slot(buffers["cell_raw"], t, save, c)[:, :rows]
        torch.mul(f, c[:, :rows], out=cell_raw)
        cell_raw.addcmul_(i, j)
        _clip(cell_raw, cell_clip, out=c[:, :rows])
        cell_tanh = _slot(buffers["cell_tanh"], t, save)[:, :rows]
        torch.tanh(c[:, :rows], out=cell_tanh)
        m = _slot(buffers["m"], t, save)[:, :rows]
        torch.mul(o, cell_tanh, out=m)
        if not plan.projected:
            proj_raw = m
        else:
            proj_raw = _slot(buffers["proj_raw"], t, save, outputs[:, t])
            proj_raw = proj_raw[:, :rows]
            for d in range(num_layers):
                projections[d](m[d], out=proj_raw[d])
        _clip(proj_raw, proj_clip, out=outputs[:, t, :rows])
    buffers.update(
        h_initial=h_initial,
        c_initial=plan.sort(torch.stack(c0), 1),
        c_final=plan.unsort(c, 1),
        h_final=plan.unsort(_last_outputs(plan, outputs, h_initial), 1),
        outputs=plan.unsort(outputs, 2),
        sorted_outputs=outputs,
    )
    return buffers


def _buffers(shape, units, output_dim, projected, save):
    """The loop's buffers: `(D, T, B, ...)` (`shape` and a width) when
    saved for the backward pass, one step's `(D, B, ...)` slot otherwise.

    Rows past a sentence's end are never written: the outputs and the
    cell outputs `m` (which meet zero gradients in the weight gradients'
    matmuls) start at zero, the others are never read there.
    """
    widths = {"gates": 4 * units, "cell_tanh": units, "m": units}
    if save:
        widths["cell_raw"] = units
        if projected:
            widths["proj_raw"] = output_dim
    slot = shape if save else (shape[0], shape[2])
    buffers = {"cell_raw": None, "proj_raw": None}
    for name, width in widths.items():
        make = torch.zeros if name == "m" and save else torch.empty
        buffers[name] = make((*slot, width))
    buffers["outputs"] = torch.zeros((*shape, output_dim))
    return buffers


def _slot(buffer, t, save, scratch=None):
    """Step `t`'s `(D, B, ...)` view of a buffer; `scratch` (or the single
    slot) when nothing is saved."""
    if buffer is None:
        return scratch
    return buffer[:, t] if save else buffer


def _clip(x, limit, out):
    if limit is None:
        return out.copy_(x) if out.data_ptr() != x.data_ptr() else out
    return torch.clamp(x, -limit, limit, out=out)


def _last_outputs(plan, outputs, h_initial):
    """Each sorted row's output at its last step, or its initial `h` for
    an empty row (the final `h`)."""
    lengths = plan.lengths
    if not len(lengths):
        return h_initial
    rows = torch.arange(len(lengths))
    last = outputs[:, (lengths - 1).clamp(min=0), rows]
    return torch.where((lengths > 0)[None, :, None], last, h_initial)


class _Recurrence(torch.autograd.Function):
    """The recurrence with its hand-written gradient (module docstring)."""

    @staticmethod
    def forward(ctx, plan, *tensors):
        state = _forward(plan, tensors, save=True)
        ctx.plan, ctx.state = plan, state
        ctx.save_for_backward(*tensors)
        return state["outputs"], state["c_final"], state["h_final"]

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, d_outputs, d_c_final, d_h_final):
        tensors = ctx.saved_tensors
        upstream = (d_outputs, d_c_final, d_h_final)
        grads = _backward(ctx.plan, ctx.state, tensors, upstream)
        del ctx.state
        return (None, *grads)


def _backward(plan, state, tensors, upstream):
    products, c0, h0, kernels, projections = _split(plan, tensors)
    cell_clip, proj_clip = plan.clips
    num_layers = len(products)
    units = c0[0].shape[1]
    d_outputs, d_c, d_h = upstream
    steps, batch = plan.num_steps, products[0].shape[1]
    d_outputs = _sorted_or_zeros(plan, d_outputs, state["outputs"], 2)
    d_c = _sorted_or_zeros(plan, d_c, state["c_final"], 1).clone()
    d_h = _sorted_or_zeros(plan, d_h, state["h_final"], 1).clone()
    gates, cell_raw = state["gates"], state["cell_raw"]
    cell_tanh, proj_raw = state["cell_tanh"], state["proj_raw"]
    d_z = torch.zeros((num_layers, steps, batch, 4 * units))
    output_dim = d_h.shape[-1]
    d_proj_raw = torch.zeros((num_layers, steps, batch, output_dim))
    recurrent = [RepeatedMatmul(kernel.t()) for kernel in kernels]
    if plan.projected:
        projections = [RepeatedMatmul(weight.t()) for weight in projections]
    for t in reversed(range(len(plan.rows))):
        rows = plan.rows[t]
        g = gates[:, t, :rows].unflatten(-1, (4, units))
        i, j, f, o = g.unbind(-2)
        tanh_c = cell_tanh[:, t, :rows]
        # Through the clip of the projection, then the projection.
        d_p = d_proj_raw[:, t, :rows]
        torch.add(d_h[:, :rows], d_outputs[:, t, :rows], out=d_p)
        raw = (state["m"] if proj_raw is None else proj_raw)[:, t, :rows]
        _zero_outside(d_p, raw, proj_clip)
        d_m = d_p
        if plan.projected:
            d_m = torch.empty((num_layers, rows, units))
            for d in range(num_layers):
                projections[d](d_p[d], out=d_m[d])
        # Through the cell: d_cell = (d_c + d_m * o * (1 - tanh^2)) * clip.
        d_cell = tanh_c * tanh_c
        d_cell.neg_().add_(1).mul_(o).mul_(d_m).add_(d_c[:, :rows])
        _zero_outside(d_cell, cell_raw[:, t, :rows], cell_clip)
        c_prev = _previous_cell(state, t, rows, cell_clip)
        dz = d_z[:, t, :rows].unflatten(-1, (4, units))
        d_i, d_j, d_f, d_o = dz.unbind(-2)
        # Sigmoid derivatives s (1 - s) of i, f, o; tanh's 1 - j^2.
        torch.mul(i, i, out=d_i).neg_().add_(i).mul_(j).mul_(d_cell)
        torch.mul(j, j, out=d_j).neg_().add_(1).mul_(i).mul_(d_cell)
        torch.mul(f, f, out=d_f).neg_().add_(f).mul_(c_prev).mul_(d_cell)
        torch.mul(o, o, out=d_o).neg_().add_(o).mul_(tanh_c).mul_(d_m)
        for d in range(num_layers):
            recurrent[d](d_z[d, t, :rows], out=d_h[d, :rows])
        torch.mul(d_cell, f, out=d_c[:, :rows])
    return _weight_gradients(plan, state, tensors, d_z, d_proj_raw, d_c, d_h)


def _sorted_or_zeros(plan, gradient, like, axis):
    if gradient is None:
        return torch.zeros_like(like)
    return plan.sort(gradient, axis)


def _zero_outside(gradient, raw, limit):
    """Zeros the gradient where the clip was active (`|raw| > limit`)."""
    if limit is not None:
        gradient.masked_fill_(raw.abs() > limit, 0.0)


def _previous_cell(state, t, rows, cell_clip):
    """The (clipped) cell state that step `t` started from."""
    if t == 0:
        return state["c_initial"][:, :rows]
    previous = state["cell_raw"][:, t - 1, :rows]
    if cell_clip is None:
        return previous
    return previous.clamp(-cell_clip, cell_clip)


def _weight_gradients(plan, state, tensors, d_z, d_proj_raw, d_c, d_h):
    """The gradients of every input: one large matmul a weight, over all
    steps and rows; the products' gradient is `d_z` itself."""
    products, c0, h0, kernels, projections = _split(plan, tensors)
    num_layers = len(products)
    outputs = state["sorted_outputs"]
    h_prev = torch.cat([state["h_initial"][:, None], outputs[:, :-1]], 1)
    d_kernels, d_projections = [], []
    for d in range(num_layers):
        d_flat = d_z[d].flatten(0, 1)
        d_kernels.append(h_prev[d].flatten(0, 1).t() @ d_flat)
        if plan.projected:
            m = state["m"][d].flatten(0, 1)
            d_projections.append(m.t() @ d_proj_raw[d].flatten(0, 1))
    d_products = [plan.unsort(d_z[d], 1) for d in range(num_layers)]
    d_c0 = list(plan.unsort(d_c, 1))
    d_h0 = list(plan.unsort(d_h, 1))
    return (*d_products, *d_c0, *d_h0, *d_kernels, *d_projections)
