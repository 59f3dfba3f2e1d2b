"""The LSTM time loop on TensorFlow: a `tf.while_loop` with a hand-written
gradient.

On a CPU the cost of an LSTM time loop is mostly the number of small ops
each step runs, not their arithmetic; and automatic differentiation through
`tf.while_loop` stores every intermediate and computes the weight
gradients one small matmul per step. So:

- the forward step runs only what depends on the previous state (about 15
  ops) and keeps the gate activations, the cell before clipping and the
  projection before clipping;
- everything that does not depend on the state, or on the gradient flowing
  back through it, is computed before or after the loops on whole
  `(T, B, ...)` tensors: the input products, the outputs and final states,
  the gate derivatives, and the weight gradients (single large matmuls,
  where CPUs and GPUs are fast);
- the backward step does only the two products that must be sequential
  (through the projection and the recurrent kernel) and a few multiplies.

The state is not masked inside the forward loop: the mask is a prefix of
each sequence (right padding), so the steps past a sequence's end come
after every step that matters, and the outputs and final states are taken
from the valid steps afterwards.

This module uses TensorFlow directly: `keras.ops` has no custom gradients
with loops, and no TensorArrays.
"""

import contextlib
import contextvars

import tensorflow as tf

from keras_elmo.layers.backends.cell import FORGET_BIAS
from keras_elmo.layers.backends.cell import Cell

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


def _clip(x, limit):
    return x if limit is None else tf.clip_by_value(x, -limit, limit)


def _pass_through(x, limit):
    """Where the gradient of `_clip(x, limit)` is 1 (as tf.clip_by_value)."""
    if limit is None:
        return tf.ones_like(x)
    return tf.cast(tf.abs(x) <= limit, x.dtype)


def _flat(x):
    return tf.reshape(x, (-1, tf.shape(x)[-1]))


def _last_valid(sequence, initial, lengths):
    """`sequence[length - 1]` of each row, or `initial` for empty rows."""
    batch = tf.range(tf.shape(lengths)[0])
    index = tf.stack([tf.maximum(lengths - 1, 0), batch], axis=1)
    last = tf.gather_nd(sequence, index)
    return tf.where((lengths > 0)[:, None], last, initial)


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


def _with_forget_bias(products, units):
    # The forget bias joins the input products once, not every step.
    gate = tf.range(4 * units) // units
    return products + tf.cast(
        tf.where(gate == 2, FORGET_BIAS, 0.0), products.dtype
    )


def inference_recurrence(products, time_mask, c0, h0, cell):
    """`recurrence` without the saved activations of the custom gradient:
    the forward pass alone, for inference. Same arguments and results.

    Differentiating it still works (TensorFlow's own loop gradient), only
    slowly; training uses `recurrence`.
    """
    num_steps = tf.shape(products)[0]
    products = _with_forget_bias(products, tf.shape(c0)[1])

    def step(t, c, h, outputs):
        valid = time_mask[t]
        *_, new_c, _, _, new_h = _cell(products[t], c, h, cell)
        output = tf.where(valid, new_h, tf.zeros_like(new_h))
        if concatenate:
            outputs = tf.concat([outputs, tf.expand_dims(output, 0)], 0)
        else:
            outputs = outputs.write(t, output)
        return (
            t + 1,
            tf.where(valid, new_c, c),
            tf.where(valid, new_h, h),
            outputs,
        )

    concatenate = _CONCATENATE_OUTPUTS.get()
    if concatenate:
        outputs = tf.zeros(tf.concat([[0], tf.shape(h0)], 0), products.dtype)
        invariants = {
            "shape_invariants": (
                tf.TensorShape([]),
                c0.shape,
                h0.shape,
                tf.TensorShape([None, *h0.shape]),
            )
        }
    else:
        outputs = tf.TensorArray(products.dtype, size=num_steps)
        invariants = {}
    _, c, h, outputs = tf.while_loop(
        lambda t, *_: t < num_steps,
        step,
        (0, c0, h0, outputs),
        **invariants,
    )
    return (outputs if concatenate else outputs.stack()), c, h


def recurrence(products, time_mask, c0, h0, cell):
    """Runs the LSTM recurrence over precomputed input products.

    Args:
        products: `(T, B, 4H)`, `x_t @ kernel + bias` for every step, in the
            compute dtype; gates ordered (i, j, f, o).
        time_mask: bool `(T, B, 1)`, a prefix of each sequence; at masked
            steps the output is zero and the state is not updated.
        c0: float32 `(B, H)`; h0: `(B, P)` in the compute dtype.
        cell: a `Cell` of tensors (the recurrent kernel, projection and
            clips are read).

    Returns:
        `(outputs (T, B, P), c_final, h_final)`.
    """
    projection = cell.projection
    if projection is None:
        # tf.custom_gradient takes tensors only; an empty stand-in marks
        # "no projection".
        projection = tf.zeros((0, 0), products.dtype)
    return _make_recurrence(*cell.clips)(
        products, time_mask, c0, h0, cell.recurrent_kernel, projection
    )


def _make_recurrence(cell_clip, proj_clip):
    @tf.custom_gradient
    def run(products, time_mask, c0, h0, recurrent_kernel, projection):
        has_projection = projection.shape[0] != 0
        dtype = products.dtype
        num_steps = tf.shape(products)[0]
        lengths = tf.reduce_sum(tf.cast(time_mask[:, :, 0], tf.int32), 0)
        products = _with_forget_bias(products, tf.shape(c0)[1])
        names = ("sigmoids", "candidate", "cell_raw", "cell_tanh", "proj_raw")
        arrays = {
            name: tf.TensorArray(
                dtype if name == "proj_raw" else tf.float32, size=num_steps
            )
            for name in names
        }
        cell = Cell(
            None,
            None,
            recurrent_kernel,
            projection if has_projection else None,
            cell_clip,
            proj_clip,
        )

        def step(t, c, h, arrays):
            sigmoids, candidate, cell_raw, c, cell_tanh, proj_raw, h = _cell(
                products[t], c, h, cell
            )
            values = (sigmoids, candidate, cell_raw, cell_tanh, proj_raw)
            arrays = {
                name: arrays[name].write(t, value)
                for name, value in zip(names, values)
            }
            return t + 1, c, h, arrays

        _, _, _, arrays = tf.while_loop(
            lambda t, *_: t < num_steps, step, (0, c0, h0, arrays)
        )
        saved = {name: array.stack() for name, array in arrays.items()}
        cells = _clip(saved["cell_raw"], cell_clip)
        states = _clip(saved["proj_raw"], proj_clip)
        outputs = tf.where(time_mask, states, tf.zeros_like(states))
        c_final = _last_valid(cells, c0, lengths)
        h_final = _last_valid(states, h0, lengths)

        def grad(d_outputs, d_c_final, d_h_final):
            valid = tf.cast(time_mask, tf.float32)
            i, _, f, o = tf.split(saved["sigmoids"], 4, axis=2)
            candidate, cell_tanh = saved["candidate"], saved["cell_tanh"]
            c_prev = tf.concat([c0[None], cells[:-1]], axis=0)
            # Everything the backward step needs that does not depend on the
            # gradient it carries, for all steps at once.
            proj_raw = tf.cast(saved["proj_raw"], tf.float32)
            pass_h = _pass_through(proj_raw, proj_clip) * valid
            cell_from_m = o * (1.0 - cell_tanh * cell_tanh)
            pass_c = _pass_through(saved["cell_raw"], cell_clip)
            gate_factors = valid * tf.concat(
                [
                    candidate * i * (1.0 - i),
                    i * (1.0 - candidate * candidate),
                    c_prev * f * (1.0 - f),
                    cell_tanh * o * (1.0 - o),
                ],
                axis=2,
            )
            # Gradients are carried in float32 under mixed precision too.
            d_outputs = tf.cast(d_outputs, tf.float32)
            d_c = tf.zeros_like(c0) if d_c_final is None else d_c_final
            d_h = tf.zeros(tf.shape(h0), tf.float32)
            if d_h_final is not None:
                d_h = tf.cast(d_h_final, tf.float32)
            d_arrays = {
                "z": tf.TensorArray(dtype, size=num_steps),
                "proj_raw": tf.TensorArray(dtype, size=num_steps),
            }

            def back_step(t, d_c, d_h, d_arrays):
                d_proj_raw = tf.cast((d_h + d_outputs[t]) * pass_h[t], dtype)
                if has_projection:
                    d_m = tf.matmul(d_proj_raw, projection, transpose_b=True)
                else:
                    d_m = d_proj_raw
                d_m = tf.cast(d_m, tf.float32)
                d_cell = (d_c + d_m * cell_from_m[t]) * pass_c[t]
                d_z = tf.concat([d_cell, d_cell, d_cell, d_m], axis=1)
                d_z = tf.cast(d_z * gate_factors[t], dtype)
                d_h_prev = tf.cast(
                    tf.matmul(d_z, recurrent_kernel, transpose_b=True),
                    tf.float32,
                )
                # Past a sequence's end the state was not updated: the
                # gradient of the final state passes through unchanged.
                step_valid = time_mask[t]
                d_h = tf.where(step_valid, d_h_prev, d_h)
                d_c = tf.where(step_valid, d_cell * f[t], d_c)
                d_arrays = {
                    "z": d_arrays["z"].write(t, d_z),
                    "proj_raw": d_arrays["proj_raw"].write(t, d_proj_raw),
                }
                return t - 1, d_c, d_h, d_arrays

            _, d_c0, d_h0, d_arrays = tf.while_loop(
                lambda t, *_: t >= 0,
                back_step,
                (num_steps - 1, d_c, d_h, d_arrays),
            )
            d_z = d_arrays["z"].stack()
            # Weight gradients: one large matmul each, over all steps.
            h_prev = tf.concat([h0[None], states[:-1]], axis=0)
            d_recurrent = tf.matmul(_flat(h_prev), _flat(d_z), transpose_a=True)
            if has_projection:
                m = tf.cast(o * cell_tanh, dtype)
                d_projection = tf.matmul(
                    _flat(m),
                    _flat(d_arrays["proj_raw"].stack()),
                    transpose_a=True,
                )
            else:
                d_projection = tf.zeros_like(projection)
            return (
                d_z,
                None,
                d_c0,
                tf.cast(d_h0, h0.dtype),
                tf.cast(d_recurrent, recurrent_kernel.dtype),
                tf.cast(d_projection, projection.dtype),
            )

        return (outputs, c_final, h_final), grad

    return run
