"""The LSTM time loop on TensorFlow: a `tf.while_loop` with a hand-written
gradient, on the rows that are still running.

On a CPU the cost of an LSTM time loop is mostly the number of small ops
each step runs, not their arithmetic; and automatic differentiation through
`tf.while_loop` stores every intermediate and computes the weight
gradients one small matmul per step. So:

- the forward step runs only what depends on the previous state (about 15
  ops) and keeps the gate activations, the cell before clipping and the
  projection before clipping;
- everything that does not depend on the state, or on the gradient flowing
  back through it, is computed before or after the loops on whole
  tensors: the input products, the outputs, the gate derivatives, and the
  weight gradients (single large matmuls, where CPUs and GPUs are fast);
- the backward step does only the two products that must be sequential
  (through the projection and the recurrent kernel) and a few multiplies.

The rows run longest first, and step `t` computes only the rows still
running (`tensorflow_rows.Rows`): the state of a row that ended stays as
it was, which makes it the final state; the loop stops at the longest
row's last step. The input products, the saved activations and the weight
gradients cover real tokens only ("packed" positions), never padding.

This module uses TensorFlow directly: `keras.ops` has no custom gradients
with loops, and no TensorArrays.
"""

import contextlib
import contextvars

import tensorflow as tf

from keras_elmo.layers.backends.cell import FORGET_BIAS

# Set while tracing for a converter (see `concatenated_outputs`).
_CONCATENATE_OUTPUTS = contextvars.ContextVar(
    "concatenate_outputs", default=False
)


@contextlib.contextmanager
def concatenated_outputs():
    """Traces `inference_recurrence` without a TensorArray, in this block.

    The TFLite converter lowers a TensorArray to builtin ops only when its
    element shape is static, and `(batch, units)` with a dynamic batch is
    not. Inside this block the loop collects its outputs by concatenation
    instead: the same values, but the copies grow with the square of the
    length, so TensorFlow itself keeps the TensorArray.
    """
    token = _CONCATENATE_OUTPUTS.set(True)
    try:
        yield
    finally:
        _CONCATENATE_OUTPUTS.reset(token)


# Set while tracing for a converter (see `fused_recurrences`).
_FUSED = contextvars.ContextVar("fused", default=None)


@contextlib.contextmanager
def fused_recurrences(run):
    """In this block, an LSTM without projection or clips (a plain LSTM)
    runs as `run(inputs, time_mask, cell)` -> `(T, B, H)` outputs, zero at
    masked steps, in place of the loops here: an export traces it as the
    runtimes' fused LSTM kernels (`keras_elmo.export.fused_lstm`). It
    returns no final state: only a stateless biLM is traced so."""
    token = _FUSED.set(run)
    try:
        yield
    finally:
        _FUSED.reset(token)


def fused_recurrence(cell):
    """The function of `fused_recurrences` that runs `cell`, or None (no
    such block, or a cell with a projection or a clip)."""
    run = _FUSED.get()
    if run is None or cell.projection is not None:
        return None
    return run if cell.clips == (None, None) else None


def _clip(x, limit):
    return x if limit is None else tf.clip_by_value(x, -limit, limit)


def _pass_through(x, limit):
    """Where the gradient of `_clip(x, limit)` is 1 (as tf.clip_by_value)."""
    if limit is None:
        return tf.ones_like(x)
    return tf.cast(tf.abs(x) <= limit, x.dtype)


def _cell(product, c, h, cell):
    """One LSTM step from `x_t @ kernel + bias` (forget bias included).

    Returns the gate sigmoids, the candidate, the unclipped cell, the new
    cell state, its tanh, the unclipped projection and the new output.
    """
    units = tf.shape(c)[1]
    z = tf.cast(product + tf.matmul(h, cell.recurrent_kernel), tf.float32)
    sigmoids = tf.sigmoid(z)
    i, _, f, o = tf.split(sigmoids, 4, axis=1)
    candidate = tf.tanh(z[:, units : 2 * units])
    cell_raw = f * c + i * candidate
    c = _clip(cell_raw, cell.cell_clip)
    cell_tanh = tf.tanh(c)
    m = tf.cast(o * cell_tanh, h.dtype)
    proj_raw = m if cell.projection is None else tf.matmul(m, cell.projection)
    h = _clip(proj_raw, cell.proj_clip)
    return sigmoids, candidate, cell_raw, c, cell_tanh, proj_raw, h


def _products(inputs, rows, cell):
    """The input products at the packed positions, `(N, 4H)`; the forget
    bias joins them here, once, not every step."""
    products = tf.matmul(rows.pack(inputs), cell.kernel) + cell.bias
    return _with_forget_bias(products)


def _with_forget_bias(products):
    units = tf.shape(products)[-1] // 4
    gate = tf.range(4 * units) // units
    return products + tf.cast(
        tf.where(gate == 2, FORGET_BIAS, 0.0), products.dtype
    )


def _part(x, offset, size):
    """Rows `offset .. offset + size - 1` of a packed tensor."""
    return x[offset : offset + size]


def _rejoin(new, old, size):
    """`old` with its first `size` rows replaced by `new`."""
    joined = tf.concat([new, old[size:]], 0)
    joined.set_shape(old.shape)
    return joined


def inference_recurrence(inputs, rows, c0, h0, cell):
    """`recurrence` without the saved activations of the custom gradient:
    the forward pass alone, for inference. Same arguments and results.

    Its outputs are collected a step at a time as `(B, P)` rows (zeros
    past a row's end), which every converter takes. Differentiating it
    still works (TensorFlow's own loop gradient), only slowly; training
    uses `recurrence`.
    """
    products = _products(inputs, rows, cell)
    batch = tf.shape(h0)[0]

    def step(t, c, h, outputs):
        offset, size = rows.step(t)
        *_, new_c, _, _, new_h = _cell(
            _part(products, offset, size), c[:size], h[:size], cell
        )
        output = _padded(new_h, batch)
        output.set_shape(h.shape)
        if concatenate:
            outputs = tf.concat([outputs, tf.expand_dims(output, 0)], 0)
        else:
            outputs = outputs.write(t, output)
        return t + 1, _rejoin(new_c, c, size), _rejoin(new_h, h, size), outputs

    concatenate = _CONCATENATE_OUTPUTS.get()
    if concatenate:
        outputs = tf.zeros(tf.concat([[0], tf.shape(h0)], 0), h0.dtype)
        invariants = {
            "shape_invariants": (
                tf.TensorShape([]),
                c0.shape,
                h0.shape,
                tf.TensorShape([None, *h0.shape]),
            )
        }
    else:
        outputs = tf.TensorArray(
            h0.dtype, size=rows.steps, element_shape=h0.shape
        )
        invariants = {}
    _, c, h, outputs = tf.while_loop(
        lambda t, *_: t < rows.steps,
        step,
        (0, rows.sort(c0), rows.sort(h0), outputs),
        **invariants,
    )
    outputs = outputs if concatenate else outputs.stack()
    outputs = _padded(rows.unsort(outputs, axis=1), tf.shape(inputs)[0])
    return _results(outputs, c, h, inputs, rows)


def _padded(x, length):
    """The first `length` rows of `x` followed by zero rows (a
    concatenation: converters keep the other axes' static sizes, which a
    padding by a computed amount loses)."""
    missing = tf.maximum(length - tf.shape(x)[0], 0)
    shape = tf.concat([[missing], tf.shape(x)[1:]], 0)
    return tf.concat([x[:length], tf.zeros(shape, x.dtype)], 0)


def _results(outputs, c, h, inputs, rows):
    """`(outputs, c_final, h_final)` in the caller's row order, with the
    static shapes they have (a converter keeps shape checks it cannot
    prove)."""
    outputs.set_shape((*inputs.shape[:2], h.shape[1]))
    return outputs, rows.unsort(c), rows.unsort(h)


def recurrence(inputs, rows, c0, h0, cell):
    """Runs the LSTM over the running rows, with the hand-written gradient.

    Args:
        inputs: `(T, B, D)`, time-major, in the compute dtype.
        rows: the `tensorflow_rows.Rows` of the time mask `(T, B, 1)`, a
            prefix of each sequence; at masked steps the output is zero
            and the state is not updated.
        c0: float32 `(B, H)`; h0: `(B, P)` in the compute dtype.
        cell: a `Cell` of tensors; gates ordered (i, j, f, o).

    Returns:
        `(outputs (T, B, P), c_final, h_final)`.
    """
    projection = cell.projection
    if projection is None:
        # tf.custom_gradient takes tensors only; an empty stand-in marks
        # "no projection".
        projection = tf.zeros((0, 0), h0.dtype)
    outputs, c, h = _make_recurrence(rows, cell.clips)(
        _products(inputs, rows, cell),
        rows.sort(c0),
        rows.sort(h0),
        cell.recurrent_kernel,
        projection,
    )
    shape = tf.shape(inputs)
    outputs = rows.unpack(outputs, shape[0], shape[1])
    return _results(outputs, c, h, inputs, rows)


def masked_recurrence(inputs, time_mask, c0, h0, cell):
    """The LSTM over every row at every step, a row's state kept where
    `time_mask` `(T, B, 1)` is False and its output zero there, TensorFlow
    differentiating the loop: for XLA, whose shapes cannot depend on how
    many rows still run (`recurrence` packs them). The same values as
    `recurrence`, slower on a CPU. Returns `(outputs (T, B, P), c_final,
    h_final)`."""
    products = _with_forget_bias(
        tf.einsum("tbd,dk->tbk", inputs, cell.kernel) + cell.bias
    )
    steps = tf.shape(inputs)[0]
    outputs = tf.TensorArray(h0.dtype, size=steps)

    def step(t, c, h, outputs):
        *_, new_c, _, _, new_h = _cell(products[t], c, h, cell)
        running = time_mask[t]
        c = tf.where(running, new_c, c)
        h = tf.where(running, new_h, h)
        outputs = outputs.write(t, tf.where(running, new_h, tf.zeros_like(h)))
        return t + 1, c, h, outputs

    _, c, h, outputs = tf.while_loop(
        lambda t, *_: t < steps,
        step,
        (0, c0, h0, outputs),
        maximum_iterations=steps,
    )
    outputs = outputs.stack()
    outputs.set_shape((*inputs.shape[:2], h0.shape[1]))
    return outputs, c, h


_SAVED = ("sigmoids", "candidate", "cell_raw", "cell_tanh", "proj_raw")


def _make_recurrence(rows, clips):
    @tf.custom_gradient
    def run(products, c0, h0, recurrent_kernel, projection):
        """Packed products, sorted states -> packed outputs, sorted final
        states."""
        has_projection = projection.shape[0] != 0
        cell = _loop_cell(recurrent_kernel, projection, clips)
        c, h, saved = _forward(products, rows, c0, h0, cell)
        states = _clip(saved["proj_raw"], clips[1])

        def grad(d_outputs, d_c_final, d_h_final):
            # (Gathers give IndexedSlices gradients.)
            d_c = tf.zeros_like(c0)
            if d_c_final is not None:
                d_c = tf.convert_to_tensor(d_c_final)
            d_h = tf.zeros(tf.shape(h0), tf.float32)
            if d_h_final is not None:
                d_h = tf.cast(tf.convert_to_tensor(d_h_final), tf.float32)
            d_outputs = tf.convert_to_tensor(d_outputs)
            d_z, d_proj_raw, d_c0, d_h0 = _backward(
                saved, rows, c0, cell, (d_outputs, d_c, d_h)
            )
            # Weight gradients: one large matmul each, over all tokens.
            h_prev = tf.gather(tf.concat([h0, states], 0), rows.previous)
            d_recurrent = tf.matmul(h_prev, d_z, transpose_a=True)
            d_projection = tf.zeros_like(projection)
            if has_projection:
                o = tf.split(saved["sigmoids"], 4, axis=1)[3]
                m = tf.cast(o * saved["cell_tanh"], products.dtype)
                d_projection = tf.matmul(m, d_proj_raw, transpose_a=True)
            return (
                d_z,
                d_c0,
                tf.cast(d_h0, h0.dtype),
                tf.cast(d_recurrent, recurrent_kernel.dtype),
                tf.cast(d_projection, projection.dtype),
            )

        return (states, c, h), grad

    return run


def _loop_cell(recurrent_kernel, projection, clips):
    from keras_elmo.layers.backends.cell import Cell

    projection = projection if projection.shape[0] != 0 else None
    return Cell(None, None, recurrent_kernel, projection, *clips)


def _forward(products, rows, c0, h0, cell):
    """The forward loop: the final states and, packed, what the gradient
    needs (`_SAVED`)."""
    widths = {
        "sigmoids": products.shape[1],
        "proj_raw": h0.shape[1],
    }
    arrays = {
        name: tf.TensorArray(
            h0.dtype if name == "proj_raw" else tf.float32,
            size=rows.steps,
            infer_shape=False,
            element_shape=tf.TensorShape([None, widths.get(name, c0.shape[1])]),
        )
        for name in _SAVED
    }

    def step(t, c, h, arrays):
        offset, size = rows.step(t)
        sigmoids, candidate, cell_raw, new_c, cell_tanh, proj_raw, new_h = (
            _cell(_part(products, offset, size), c[:size], h[:size], cell)
        )
        values = (sigmoids, candidate, cell_raw, cell_tanh, proj_raw)
        arrays = {
            name: arrays[name].write(t, value)
            for name, value in zip(_SAVED, values)
        }
        return t + 1, _rejoin(new_c, c, size), _rejoin(new_h, h, size), arrays

    _, c, h, arrays = tf.while_loop(
        lambda t, *_: t < rows.steps, step, (0, c0, h0, arrays)
    )
    return c, h, {name: array.concat() for name, array in arrays.items()}


def _backward(saved, rows, c0, cell, upstream):
    """The reverse loop: `(d_z, d_proj_raw)` packed, and the gradients of
    the sorted initial states, from those of the packed outputs and the
    final states (`upstream`)."""
    cell_clip, proj_clip = cell.clips
    dtype = saved["proj_raw"].dtype
    i, _, f, o = tf.split(saved["sigmoids"], 4, axis=1)
    candidate, cell_tanh = saved["candidate"], saved["cell_tanh"]
    cells = _clip(saved["cell_raw"], cell_clip)
    c_prev = tf.gather(tf.concat([c0, cells], 0), rows.previous)
    # Everything the reverse step needs that does not depend on the
    # gradient it carries, for all tokens at once.
    proj_raw = tf.cast(saved["proj_raw"], tf.float32)
    pass_h = _pass_through(proj_raw, proj_clip)
    cell_from_m = o * (1.0 - cell_tanh * cell_tanh)
    pass_c = _pass_through(saved["cell_raw"], cell_clip)
    gate_factors = tf.concat(
        [
            candidate * i * (1.0 - i),
            i * (1.0 - candidate * candidate),
            c_prev * f * (1.0 - f),
            cell_tanh * o * (1.0 - o),
        ],
        axis=1,
    )
    # Gradients are carried in float32 under mixed precision too.
    d_outputs, d_c, d_h = upstream
    d_outputs = tf.cast(d_outputs, tf.float32)
    # The step's products with the kernels' transposes, transposed once
    # here: a float32 `(rows, 4H) x (4H, P)` product of a few rows runs
    # about 3x faster from a contiguous transpose than with `transpose_b`
    # (oneDNN on CPU).
    recurrent_t = tf.transpose(cell.recurrent_kernel)
    projection_t = None
    if cell.projection is not None:
        projection_t = tf.transpose(cell.projection)
    arrays = {
        name: tf.TensorArray(
            dtype,
            size=rows.steps,
            infer_shape=False,
            element_shape=tf.TensorShape([None, width]),
        )
        for name, width in (("z", i.shape[1] * 4), ("proj_raw", d_h.shape[1]))
    }

    def back_step(t, d_c, d_h, arrays):
        offset, size = rows.step(t)

        def part(x):
            return _part(x, offset, size)

        d_proj_raw = tf.cast(
            (d_h[:size] + part(d_outputs)) * part(pass_h), dtype
        )
        d_m = d_proj_raw
        if projection_t is not None:
            d_m = tf.matmul(d_proj_raw, projection_t)
        d_m = tf.cast(d_m, tf.float32)
        d_cell = (d_c[:size] + d_m * part(cell_from_m)) * part(pass_c)
        d_z = tf.concat([d_cell, d_cell, d_cell, d_m], axis=1)
        d_z = tf.cast(d_z * part(gate_factors), dtype)
        d_h_prev = tf.cast(
            tf.matmul(d_z, recurrent_t),
            tf.float32,
        )
        # A row that ended before this step keeps its gradient: its state
        # was not updated.
        d_h = _rejoin(d_h_prev, d_h, size)
        d_c = _rejoin(d_cell * part(f), d_c, size)
        arrays = {
            "z": arrays["z"].write(t, d_z),
            "proj_raw": arrays["proj_raw"].write(t, d_proj_raw),
        }
        return t - 1, d_c, d_h, arrays

    _, d_c, d_h, arrays = tf.while_loop(
        lambda t, *_: t >= 0, back_step, (rows.steps - 1, d_c, d_h, arrays)
    )
    return arrays["z"].concat(), arrays["proj_raw"].concat(), d_c, d_h
