"""Helpers for optimizers that keep `IndexedSlices` gradients sparse."""

import tensorflow as tf
from keras import ops


def merge_duplicates(gradient):
    """Sums the rows of an `IndexedSlices` gradient that share an index."""
    indices, positions = tf.unique(gradient.indices)
    values = tf.math.unsorted_segment_sum(
        gradient.values, positions, tf.shape(indices)[0]
    )
    return tf.IndexedSlices(values, indices, gradient.dense_shape)


def merge_and_clip(grads, global_clipnorm):
    """Merges duplicate rows, then clips all gradients to a global norm
    without densifying the sparse ones."""
    grads = [
        merge_duplicates(g) if isinstance(g, tf.IndexedSlices) else g
        for g in grads
    ]
    if not global_clipnorm:
        return grads
    squares = [ops.sum(ops.square(_values(g))) for g in grads if g is not None]
    norm = ops.sqrt(ops.sum(ops.stack(squares)))
    scale = global_clipnorm / ops.maximum(norm, global_clipnorm)
    return [None if g is None else _scale(g, scale) for g in grads]


def _values(gradient):
    if isinstance(gradient, tf.IndexedSlices):
        return gradient.values
    return gradient


def _scale(gradient, scale):
    if isinstance(gradient, tf.IndexedSlices):
        return tf.IndexedSlices(
            gradient.values * ops.cast(scale, gradient.values.dtype),
            gradient.indices,
            gradient.dense_shape,
        )
    return gradient * ops.cast(scale, gradient.dtype)
