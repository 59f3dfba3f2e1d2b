"""Batches with nothing (or little) to run, on every backend.

A batch of no rows, one whose every row is empty (with and without a
time axis) and ones where some rows are empty, through the bilm-tf
fixture biLM: inference, the training call's outputs and the gradients
of a loss on them (every weight), and a stateful biLM called on each
between two ordinary batches. `results` computes them on this process's
backend; `tests/test_empty_batches.py` checks TensorFlow's against facts
that need no reference (each row alone, a state left alone) and
`tests/test_backends.py` those of JAX and PyTorch against TensorFlow's.
"""

import os

import keras
import numpy as np

import keras_elmo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
MODEL = os.path.join(ROOT, "tests", "fixtures", "bilm-tf", "model")
# Token lists, or the shape of all-padding ids.
CASES = {
    "no_rows": (0, 0),
    "no_rows_with_steps": (0, 3),
    "empty_rows": [[], []],
    "empty_rows_with_steps": (2, 3),
    "some_empty": [["The", "cat"], [], ["sat"]],
    "some_empty_first": [[], ["on", "the", "mat"], [], ["Hi"]],
}
# The cases JAX and PyTorch run (each new shape costs JAX a compile).
COMPARED = ("no_rows", "empty_rows", "some_empty_first")
# Called before and after each case on the stateful biLM.
ORDINARY = [["ELMo", "runs"], ["on"], ["three", "backends", "."]]
MAX_BATCH_SIZE = 4
# The fixture's layer outputs: two directions of 16.
WIDTH = 32


def ids(case):
    """The character ids of a case."""
    if isinstance(case, tuple):
        return np.zeros((*case, 50), "int32")
    return keras_elmo.batch_to_ids(case)


def bilm(**kwargs):
    """The fixture biLM, without dropout."""
    return keras_elmo.load_bilm(MODEL, dropout=0.0, **kwargs)


def loss_weights(batch, steps, seed=0):
    """Fixed weights `(3, B, T, WIDTH)` of the loss
    `sum(layers * weights)`."""
    rng = np.random.default_rng(seed)
    shape = (3, batch, steps, WIDTH)
    return rng.standard_normal(shape).astype("float32")


def _numpy(x):
    if hasattr(x, "detach"):  # a torch tensor of a training call
        x = x.detach()
    return np.asarray(keras.ops.convert_to_numpy(x))


def layers(out):
    """`(3, B, T, D)` float32 layer outputs and the `(B, T)` mask."""
    stacked = np.stack([_numpy(x) for x in out["layer_outputs"]])
    return stacked.astype("float32"), _numpy(out["mask"])


def gradients(model, inputs, weights):
    """`{weight path: gradient}` of `sum(layer_outputs * weights)` over
    a training call, on this process's backend."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = _loss(model(inputs, training=True), weights)
        grads = tape.gradient(loss, model.trainable_variables)
    elif keras.backend.backend() == "jax":
        import jax

        trainable = [v.value for v in model.trainable_variables]
        fixed = [v.value for v in model.non_trainable_variables]

        def loss(trainable):
            out, _ = model.stateless_call(
                trainable, fixed, inputs, training=True
            )
            return _loss(out, weights)

        grads = jax.jit(jax.grad(loss))(trainable)
    else:
        for v in model.trainable_variables:
            v.value.grad = None
        loss = _loss(model(inputs, training=True), weights)
        if loss.requires_grad:
            loss.backward()
        grads = [v.value.grad for v in model.trainable_variables]
    return {
        v.path.split("/", 1)[1]: (
            np.zeros(v.shape, "float32") if g is None else _numpy(g)
        )
        for v, g in zip(model.trainable_variables, grads)
    }


def _loss(out, weights):
    ops = keras.ops
    return sum(
        ops.sum(ops.cast(x, "float32") * ops.convert_to_tensor(weights[k]))
        for k, x in enumerate(out["layer_outputs"])
    )


def state(model):
    """The carried state, `(MAX_BATCH_SIZE, width)`: every layer's and
    direction's `c` and `h` side by side."""
    carried = [v for v in model.non_trainable_variables if "state" in v.path]
    return np.concatenate([_numpy(v) for v in carried], axis=1)


def stateful_run(model, case):
    """Outputs of `ORDINARY`, `case` and `ORDINARY` again, and the state
    after each, on a fresh stateful `model`."""
    model.reset_states()
    found = {}
    for step, batch in enumerate((ids(ORDINARY), ids(case), ids(ORDINARY))):
        found[f"layers_{step}"], _ = layers(model(batch))
        found[f"state_{step}"] = state(model)
    return found


def results(names=tuple(CASES)):
    """`{case/name: array}` of the cases `names` on this process's
    backend."""
    found = {}
    plain = bilm()
    stateful = bilm(stateful=True, max_batch_size=MAX_BATCH_SIZE)
    for name in names:
        case = CASES[name]
        inputs = ids(case)
        weights = loss_weights(*inputs.shape[:2])
        found[f"{name}/layers"], found[f"{name}/mask"] = layers(plain(inputs))
        trained, _ = layers(plain(inputs, training=True))
        found[f"{name}/training_layers"] = trained
        for path, grad in gradients(plain, inputs, weights).items():
            found[f"{name}/gradient/{path}"] = grad
        for key, value in stateful_run(stateful, case).items():
            found[f"{name}/stateful/{key}"] = value
    return found


def save_reference(path):
    np.savez(path, **results(COMPARED))


def compare(reference_path):
    """Largest differences to TensorFlow's: outputs absolute, gradients
    relative to the largest of each weight; the shapes must agree."""
    reference = dict(np.load(reference_path))
    ours = results(COMPARED)
    if sorted(ours) != sorted(reference):
        raise AssertionError(f"{sorted(set(ours) ^ set(reference))}")
    outputs, relative = 0.0, 0.0
    for key, want in reference.items():
        got = ours[key]
        if got.shape != want.shape or got.dtype != want.dtype:
            raise AssertionError(f"{key}: {got.shape} {got.dtype}, {want}")
        if not want.size:
            continue
        difference = float(np.abs(got.astype("float64") - want).max())
        if "/gradient/" in key:
            scale = max(float(np.abs(want).max()), 1e-30)
            relative = max(relative, difference / scale)
        else:
            outputs = max(outputs, difference)
    return {"outputs": outputs, "gradients_relative": relative}
