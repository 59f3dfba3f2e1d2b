"""The distinct-token step of the token encoders, per backend.

Text repeats its words (a batch of 3,000 tokens holds about 1,000 distinct
ones) and padding tokens are all alike, so the encoders run their char CNN
once per distinct token and gather the results back. The results are the
same as without it; only the work changes.

- TensorFlow: `UniqueV2` over the rows, as always.
- PyTorch: `torch.unique(dim=0)`; the ids carry no gradient, and the
  gather back (`ops.take`) is differentiable as usual.
- JAX: no deduplication. `jax.jit` needs static shapes, so the number of
  distinct rows would have to be sized for the worst case (every token),
  which saves nothing (XLA on TensorFlow behaves the same way).
"""

import keras
from keras import ops


def distinct_rows(x):
    """`(rows, index)` with `rows[index] == x`, or None where not done.

    Args:
        x: int tensor `(N, K)`, one token's ids a row.
    """
    name = keras.backend.backend()
    if name == "tensorflow":
        import tensorflow as tf

        rows, index = tf.raw_ops.UniqueV2(x=x, axis=[0])
        return tf.ensure_shape(rows, (None, x.shape[-1])), index
    if name == "torch":
        import torch

        rows, index = torch.unique(x, dim=0, return_inverse=True)
        return rows, index
    return None


def gather_rows(x, index):
    """`x[index]`, the encoder's results back at every token."""
    return x if index is None else ops.take(x, index, axis=0)
