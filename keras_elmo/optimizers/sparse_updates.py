"""Helpers for optimizers that keep `IndexedSlices` gradients sparse.

Only TensorFlow makes `tf.IndexedSlices`: on another backend every
gradient is dense, and nothing here imports TensorFlow for it.
"""

import sys

import keras
from keras import ops

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_number


def is_sparse(gradient):
    """Whether `gradient` is a `tf.IndexedSlices` (none is, without
    TensorFlow imported)."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(gradient, tf.IndexedSlices)


def merge_duplicates(gradient):
    """Sums the rows of an `IndexedSlices` gradient that share an index."""
    import tensorflow as tf

    indices, positions = tf.unique(gradient.indices)
    values = tf.math.unsorted_segment_sum(
        gradient.values, positions, tf.shape(indices)[0]
    )
    return tf.IndexedSlices(values, indices, gradient.dense_shape)


def num_replicas():
    """Replicas that each hold a part of the gradient (1 off distribution,
    and off TensorFlow)."""
    tf = sys.modules.get("tensorflow")
    if tf is None or keras.backend.backend() != "tensorflow":
        return 1
    context = tf.distribute.get_replica_context()
    return 1 if context is None else context.num_replicas_in_sync


def merge_and_clip(grads, global_clipnorm):
    """Merges duplicate rows, then clips all gradients to a global norm
    without densifying the sparse ones."""
    import tensorflow as tf

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


def clip_before_all_reduce(grads, global_clipnorm):
    """What Keras's `_clip_gradients` hook does: the whole merge and clip
    on one device; under replication only the merge, which shrinks what
    the all-reduce sends (see `clip_after_all_reduce`)."""
    if num_replicas() > 1:
        if not hasattr(keras.optimizers.Optimizer, "_all_reduce_sum_gradients"):
            # Without the hook the clip would act on parts of the gradient.
            raise RuntimeError(
                "This Keras version has no Optimizer._all_reduce_sum_gradients"
                " (Keras 3 with TensorFlow has it), which the sparse "
                "optimizers need to clip the summed gradient under a "
                "tf.distribute strategy. Use Keras 3.x with TensorFlow."
            )
        return merge_and_clip(grads, None)
    return merge_and_clip(grads, global_clipnorm)


def clip_after_all_reduce(grads_and_vars, global_clipnorm):
    """Merge and clip of the summed gradient, under replication.

    Keras's TensorFlow optimizer clips each replica's gradient and only
    then sums them over replicas, so the clip would act on parts of the
    gradient, and the sum of sparse gradients concatenates their rows
    again. This runs on the sum instead: every replica gets the same
    global gradient, merged and clipped, as on one device.
    """
    if num_replicas() == 1:
        return grads_and_vars
    grads = merge_and_clip([g for g, _ in grads_and_vars], global_clipnorm)
    return [(g, v) for g, (_, v) in zip(grads, grads_and_vars)]


def _values(gradient):
    if is_sparse(gradient):
        return gradient.values
    return gradient


def _scale(gradient, scale):
    if is_sparse(gradient):
        import tensorflow as tf

        return tf.IndexedSlices(
            gradient.values * ops.cast(scale, gradient.values.dtype),
            gradient.indices,
            gradient.dense_shape,
        )
    return gradient * ops.cast(scale, gradient.dtype)


def _check_optimizer_arguments(learning_rate, global_clipnorm, name):
    """The arguments every sparse optimizer takes, checked before Keras
    sees them: a positive finite rate (or a schedule or callable), a
    clip norm >= 0 or None, a name without "/"."""
    if not isinstance(
        learning_rate, keras.optimizers.schedules.LearningRateSchedule
    ) and not callable(learning_rate):
        learning_rate = check_number(
            learning_rate, "learning_rate", minimum=0.0, above=True
        )
    if global_clipnorm is not None:
        global_clipnorm = check_number(
            global_clipnorm, "global_clipnorm", minimum=0.0
        )
    if (
        not isinstance(name, str)
        or not name
        or not name.isprintable()
        or ("/" in name)
    ):
        raise KerasElmoError(
            "`name` must be a non-empty str without '/'.",
            "name",
            received=name,
        )
    return learning_rate, global_clipnorm, name


class SparseOptimizer(keras.optimizers.Optimizer):
    """The base of the sparse optimizers: merges duplicate rows of
    `IndexedSlices` gradients and clips the global norm without densifying
    them, on the summed gradient under a `tf.distribute` strategy.

    A kind passes its own arguments (besides Keras's) as `hyperparameters`:
    each is kept as a float attribute of its name and saved by
    `get_config`.
    """

    def __init__(
        self, hyperparameters, learning_rate, global_clipnorm, name, **kwargs
    ):
        learning_rate, global_clipnorm, name = _check_optimizer_arguments(
            learning_rate, global_clipnorm, name
        )
        super().__init__(
            learning_rate=learning_rate,
            global_clipnorm=global_clipnorm,
            name=name,
            **kwargs,
        )
        self._hyperparameters = tuple(hyperparameters)
        for key, value in hyperparameters.items():
            setattr(self, key, float(value))

    def build(self, var_list):
        """Builds once (Keras may call it again on a built optimizer)."""
        if not self.built:
            super().build(var_list)
            self.build_slots(var_list)

    def build_slots(self, var_list):
        """Creates the kind's variables of each of `var_list`."""
        raise NotImplementedError

    def get_config(self):
        config = super().get_config()
        names = self._hyperparameters
        config.update({key: getattr(self, key) for key in names})
        return config

    # Private Keras hooks (TF backend), overridden because Keras clips before
    # the replicas' gradients are summed; a public "clip after all-reduce"
    # option of keras.optimizers.Optimizer would replace both.
    def _clip_gradients(self, grads):
        return clip_before_all_reduce(grads, self.global_clipnorm)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        # Keras's TensorFlow optimizer sums the replicas' gradients here,
        # after `_clip_gradients`: the clip must see the sum.
        grads_and_vars = super()._all_reduce_sum_gradients(grads_and_vars)
        return clip_after_all_reduce(grads_and_vars, self.global_clipnorm)
