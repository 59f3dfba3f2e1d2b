"""Token embeddings of unusual character rows, against TensorFlow's.

The JAX backend encodes the distinct rows of a batch inside `jax.jit` in
chunks that read only part of each row (`keras_elmo/layers/backends/
jax_tokens.py`). These rows exercise every case of that: every tail start
from 0 to 50 (every compiled width, and the whole row), tails of any id
(the padding character, 0, 1, any other) and ids of any value before
them, rows repeated far apart, more distinct rows than one chunk holds.
TensorFlow encodes each distinct row at full width (`UniqueV2`); the
other backends must give the same embeddings, and the same gradients of
`sum(e * R)` for the char CNN, highway and projection weights.
"""

import os

import numpy as np

import keras_elmo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
MODEL = os.path.join(ROOT, "tests", "fixtures", "bilm-tf", "model")
ENCODER_WEIGHTS = ("char_cnn", "highway", "token_projection")


def rows():
    """Character ids `(3, 100, 50)`."""
    rng = np.random.default_rng(7)
    out = []
    for i in range(300):
        start = i % 51
        tail = rng.choice([0, 1, 260, 261, int(rng.integers(0, 262))])
        head = rng.integers(0, 262, start)
        out.append(np.concatenate([head, np.full(50 - start, tail)]))
    out = np.stack(out).astype("int32")
    out[230:290] = out[rng.permutation(60)]
    return out.reshape(3, 100, 50)


def _problem():
    bilm = keras_elmo.load_bilm(
        os.path.join(MODEL, "options.json"),
        os.path.join(MODEL, "lm_weights.hdf5"),
    )
    weights = np.random.default_rng(8).standard_normal((3, 100, 16))
    variables = [
        v
        for v in bilm.trainable_variables
        if any(name in v.path for name in ENCODER_WEIGHTS)
    ]
    return bilm, weights.astype("float32"), variables


def _name(variable):
    """The weight's path inside the biLM (whose own name varies)."""
    return variable.path.split("/", 1)[1]


def save_reference(path):
    """TensorFlow's embeddings and gradients, to `path` (.npz)."""
    import tensorflow as tf

    bilm, weights, variables = _problem()
    with tf.GradientTape() as tape:
        embeddings = bilm.encode_tokens(rows())
        loss = tf.reduce_sum(embeddings * weights)
    grads = tape.gradient(loss, variables)
    named = {
        _name(v): tf.convert_to_tensor(g).numpy()
        for v, g in zip(variables, grads)
    }
    np.savez(path, embeddings=embeddings.numpy(), **named)


def compare(path):
    """Largest differences to TensorFlow: embeddings (absolute) and
    gradients (relative to the largest gradient of each weight)."""
    import keras

    reference = np.load(path)
    compute = {"jax": _jax, "torch": _torch}[keras.backend.backend()]
    embeddings, grads = compute()
    relative = max(
        float(np.abs(g - reference[name]).max() / np.abs(reference[name]).max())
        for name, g in grads.items()
    )
    return {
        "embeddings": float(np.abs(embeddings - reference["embeddings"]).max()),
        "gradients_relative": relative,
        "weights": len(grads),
    }


def _jax():
    import jax
    import jax.numpy as jnp
    import keras

    bilm, weights, variables = _problem()
    trainable = [v.value for v in bilm.trainable_variables]
    fixed = [v.value for v in bilm.non_trainable_variables]

    def encode(trainable, ids):
        mapping = list(zip(bilm.trainable_variables, trainable))
        mapping += zip(bilm.non_trainable_variables, fixed)
        with keras.StatelessScope(state_mapping=mapping):
            return bilm.encode_tokens(ids)

    def loss(trainable, ids):
        return jnp.sum(encode(trainable, ids) * weights)

    ids = jnp.asarray(rows())
    embeddings = jax.jit(encode)(trainable, ids)
    grads = jax.jit(jax.grad(loss))(trainable, ids)
    wanted = {id(v) for v in variables}
    return np.asarray(embeddings), {
        _name(v): np.asarray(g)
        for v, g in zip(bilm.trainable_variables, grads)
        if id(v) in wanted
    }


def _torch():
    import torch

    bilm, weights, variables = _problem()
    embeddings = bilm.encode_tokens(torch.as_tensor(rows()))
    (embeddings * torch.as_tensor(weights)).sum().backward()
    return embeddings.detach().numpy(), {
        _name(v): v.value.grad.numpy() for v in variables
    }
