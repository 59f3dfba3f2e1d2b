"""The LSTM time loop alone, its clips at work, against TensorFlow's.

Every backend's loop has a hand-written gradient
(`keras_elmo/layers/backends/tensorflow_recurrence.py`,
`jax_recurrence.py`, `torch_lstm.py`). The fixture's gradients go through
loops whose clips seldom bind; here they do: large input products drive
the cell past `cell_clip` and the projection past `proj_clip` at many
steps. Two LSTMs of one layer (as a BiLM's two directions, run together
on PyTorch), rows of lengths 0 to 11 of 12 steps, unsorted (the last step
is padding in every row: the JAX loop stops at the last valid one; it
runs steps 0-3 on all 8 rows, 4-8 on the 4 longest and 9-10 on the
longest alone), a carried initial state, and a loss on the outputs and
both final states.
TensorFlow's outputs and the gradients of every argument (inputs, input
kernel and bias, initial states, recurrent kernel, projection) are the
reference.
"""

import numpy as np

STEPS, BATCH, DEPTH, UNITS, PROJECTION = 12, 8, 6, 8, 5
LENGTHS = (9, 1, 7, 0, 4, 11, 3, 6)
CELL_CLIP, PROJ_CLIP = 1.5, 0.8
ARGUMENTS = (
    "inputs",
    "c0",
    "h0",
    "kernel",
    "bias",
    "recurrent_kernel",
    "projection",
)


def problem():
    """`(mask, runs, loss_weights)` as float32 NumPy arrays; `runs` is one
    dict of `ARGUMENTS` per LSTM."""
    rng = np.random.default_rng(11)
    mask = np.arange(STEPS)[:, None, None] < np.array(LENGTHS)[None, :, None]

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype("float32")

    runs = [
        {
            "inputs": normal(STEPS, BATCH, DEPTH),
            "c0": normal(BATCH, UNITS),
            "h0": normal(BATCH, PROJECTION, scale=0.5),
            # Input products about 3 wide: the clips bind.
            "kernel": normal(DEPTH, 4 * UNITS, scale=1.2),
            "bias": normal(4 * UNITS),
            "recurrent_kernel": normal(PROJECTION, 4 * UNITS),
            "projection": normal(UNITS, PROJECTION),
        }
        for _ in range(2)
    ]
    weights = [
        [
            normal(STEPS, BATCH, PROJECTION),
            normal(BATCH, UNITS),
            normal(BATCH, PROJECTION),
        ]
        for _ in range(2)
    ]
    return mask, runs, weights


def _loss(results, weights, total):
    """`sum(result * weight)` over every output and final state."""
    loss = 0.0
    for result, weight in zip(results, weights):
        for x, w in zip(result, weight):
            loss = loss + total(x * w)
    return loss


def _call(mask, tensors):
    from keras_elmo.layers import backends

    runs = [
        (
            t["inputs"],
            t["c0"],
            t["h0"],
            backends.Cell(
                t["kernel"],
                t["bias"],
                t["recurrent_kernel"],
                t["projection"],
                CELL_CLIP,
                PROJ_CLIP,
            ),
        )
        for t in tensors
    ]
    return backends.lstm_recurrences(runs, mask, training=True)


def save_reference(path):
    """TensorFlow's outputs and gradients, to `path` (.npz)."""
    import tensorflow as tf

    mask, runs, weights = problem()
    tensors = [{k: tf.constant(v) for k, v in run.items()} for run in runs]
    with tf.GradientTape() as tape:
        for run in tensors:
            tape.watch(list(run.values()))
        results = _call(tf.constant(mask), tensors)
        loss = _loss(results, weights, tf.reduce_sum)
    grads = tape.gradient(loss, [list(run.values()) for run in tensors])
    saved = {}
    for d, (result, grad) in enumerate(zip(results, grads)):
        for name, value in zip(("outputs", "c", "h"), result):
            saved[f"{d}/{name}"] = value.numpy()
        for name, value in zip(ARGUMENTS, grad):
            saved[f"{d}/d_{name}"] = tf.convert_to_tensor(value).numpy()
    np.savez(path, **saved)


def compare(path):
    """Largest differences to TensorFlow: outputs and final states
    (absolute), gradients (relative to the largest of each argument)."""
    import keras

    reference = np.load(path)
    compute = {"jax": _jax, "torch": _torch}[keras.backend.backend()]
    values = compute(*problem())
    outputs = max(
        float(np.abs(values[k] - reference[k]).max())
        for k in values
        if "/d_" not in k
    )
    relative = max(
        float(np.abs(values[k] - reference[k]).max())
        / float(np.abs(reference[k]).max())
        for k in values
        if "/d_" in k
    )
    return {
        "outputs": outputs,
        "gradients_relative": relative,
        "gradients": sum("/d_" in k for k in values),
    }


def _named(results, grads):
    named = {}
    for d, (result, grad) in enumerate(zip(results, grads)):
        for name, value in zip(("outputs", "c", "h"), result):
            named[f"{d}/{name}"] = np.asarray(value)
        for name, value in zip(ARGUMENTS, grad):
            named[f"{d}/d_{name}"] = np.asarray(value)
    return named


def _jax(mask, runs, weights):
    import jax
    import jax.numpy as jnp

    mask = jnp.asarray(mask)

    def loss(tensors):
        return _loss(_call(mask, tensors), weights, jnp.sum)

    tensors = [{k: jnp.asarray(v) for k, v in run.items()} for run in runs]
    grads = jax.grad(loss)(tensors)
    return _named(
        _call(mask, tensors),
        [[g[name] for name in ARGUMENTS] for g in grads],
    )


def _torch(mask, runs, weights):
    import torch

    tensors = [
        {k: torch.tensor(v, requires_grad=True) for k, v in run.items()}
        for run in runs
    ]
    results = _call(torch.as_tensor(mask), tensors)
    weights = [[torch.as_tensor(w) for w in run] for run in weights]
    _loss(results, weights, torch.sum).backward()
    return _named(
        [[x.detach() for x in result] for result in results],
        [[t[name].grad for name in ARGUMENTS] for t in tensors],
    )
