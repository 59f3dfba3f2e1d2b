"""Fine-tuning gradients: one problem, solved on each backend.

`ELMoEmbedding(fine_tune=True)` over the bilm-tf fixture biLM, loss
`sum(outputs * R)` for a fixed `R`: its gradients reach every weight (the
scalar mix, gamma, the char CNN, highway, projection and both LSTM
stacks). On TensorFlow they come from the hand-written LSTM gradient
(`keras_elmo/layers/backends/tensorflow_recurrence.py`), on JAX from
`jax.grad` of a jitted
`stateless_call`, on PyTorch from `loss.backward()`.
"""

import os

import keras
import numpy as np

import keras_elmo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
MODEL = os.path.join(ROOT, "tests", "fixtures", "bilm-tf", "model")
SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["ELMo", "runs", "on", "three", "backends"],
    ["Hi"],
    ["Five", "rows", "of", "unequal", "lengths", "end", "apart"],
    ["so", "that", "rows", "stop", "at", "different", "steps", "too"],
]
# Largest |gradient difference| / largest |gradient|, per weight.
RELATIVE_TOLERANCE = 1e-4


def problem():
    """`(embedding, ids, R)`; the embedding is built."""
    bilm = keras_elmo.load_bilm(
        os.path.join(MODEL, "options.json"),
        os.path.join(MODEL, "lm_weights.hdf5"),
    )
    embedding = keras_elmo.ELMoEmbedding(
        bilm, fine_tune=True, dropout=0.0, do_layer_norm=True
    )
    ids = keras_elmo.batch_to_ids(SENTENCES)
    out = embedding(ids)
    weights = np.random.default_rng(0).standard_normal(out.shape)
    # Move the mix off its zero start so its gradient is not symmetric.
    mix = embedding.scalar_mixes[0]
    mix.scalar_weights.assign(np.float32([0.3, -0.2, 0.5]))
    return embedding, ids, weights.astype("float32")


def tensorflow_gradients():
    import tensorflow as tf

    embedding, ids, weights = problem()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(embedding(ids, training=True) * weights)
    grads = tape.gradient(loss, embedding.trainable_variables)
    return _named(embedding, grads)


def backend_gradients(embedding, ids, weights):
    """The gradients of `sum(embedding(ids) * weights)` (computed in
    float32) for every trainable weight, on this process's backend: JAX's
    `jax.grad` of a jitted `stateless_call`, PyTorch's `loss.backward()`."""
    if keras.backend.backend() == "jax":
        import jax
        import jax.numpy as jnp

        trainable = [v.value for v in embedding.trainable_variables]
        fixed = [v.value for v in embedding.non_trainable_variables]

        def loss(trainable, fixed, ids):
            out, _ = embedding.stateless_call(
                trainable, fixed, ids, training=True
            )
            return jnp.sum(out.astype("float32") * weights)

        return jax.jit(jax.grad(loss))(trainable, fixed, jnp.asarray(ids))
    import torch

    out = embedding(ids, training=True).float()
    (out * torch.as_tensor(weights)).sum().backward()
    return [v.value.grad for v in embedding.trainable_variables]


def _named(embedding, grads):
    # Paths without the layer prefixes, which count instances per process.
    return {
        v.path.split("/", 1)[1]: keras.ops.convert_to_numpy(g)
        for v, g in zip(embedding.trainable_variables, grads)
    }


def save_reference(path):
    np.savez(path, **tensorflow_gradients())


def compare(reference_path):
    """Largest relative and absolute gradient differences to TensorFlow."""
    reference = dict(np.load(reference_path))
    embedding, ids, weights = problem()
    ours = _named(embedding, backend_gradients(embedding, ids, weights))
    if sorted(ours) != sorted(reference):
        raise AssertionError(f"weights {sorted(ours)} != {sorted(reference)}")
    relative = {
        name: float(
            np.abs(ours[name] - ref).max() / max(np.abs(ref).max(), 1e-30)
        )
        for name, ref in reference.items()
    }
    return {
        "max_relative": max(relative.values()),
        "max_absolute": max(
            float(np.abs(ours[n] - r).max()) for n, r in reference.items()
        ),
        "weights": len(reference),
        "worst_weight": max(relative, key=relative.get),
        "all_nonzero": all(np.abs(r).max() > 0 for r in reference.values()),
    }


def jax_fit_tagger():
    """`model.fit` of a small tagger on JAX: the loss goes down."""
    embedding, ids, _ = problem()
    inputs = keras.Input(shape=(None, 50), dtype="int32")
    x = embedding(inputs)
    tags = keras.layers.Dense(3)(x)
    model = keras.Model(inputs, tags)
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    labels = (ids[:, :, 1] % 3).astype("int32")
    # One batch a step: one shape to compile.
    history = model.fit(ids, labels, epochs=12, batch_size=len(ids), verbose=0)
    losses = history.history["loss"]
    if not losses[-1] < 0.8 * losses[0]:
        raise AssertionError(f"the loss did not fall: {losses}")
    return {"first_loss": losses[0], "last_loss": losses[-1]}


def torch_finetune_example():
    """The plain PyTorch loop of examples/pytorch_finetune.py, quick mode."""
    import importlib.util

    path = os.path.join(ROOT, "examples", "pytorch_finetune.py")
    spec = importlib.util.spec_from_file_location("pytorch_finetune", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(["--quick"])


def backend_checks():
    """The backend's own fine-tuning checks, by name."""
    if keras.backend.backend() == "jax":
        return {"jax_fit_tagger": jax_fit_tagger}
    return {
        "torch_finetune_example": torch_finetune_example,
        "torch_packed_products": torch_packed_products,
    }


def pack_every_torch_weight():
    """On PyTorch, the LSTM loop packs its weights for oneDNN only from a
    size the fixture models do not reach (`torch_matmul.py`): the checks
    run with every weight packed, and `torch_unpacked_gradients` once
    with none."""
    from keras_elmo.layers.backends import torch_matmul

    torch_matmul.MIN_PACKED_ELEMENTS = 0


def torch_unpacked_gradients(reference_path):
    """`compare` with no weight packed (plain `torch.mm`)."""
    from keras_elmo.layers.backends import torch_matmul

    with torch_matmul.packing_from(float("inf")):
        return compare(reference_path)


def torch_packed_products():
    """Whether the packed (oneDNN) products ran here, so that the parity
    and gradient checks went through them."""
    from keras_elmo.layers.backends import torch_matmul

    return {"available": torch_matmul.onednn_available()}
