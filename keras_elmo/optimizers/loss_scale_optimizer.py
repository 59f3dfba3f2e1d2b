import keras
from keras import ops

from elmo_core.errors import check_instance
from keras_elmo.optimizers.sparse_updates import is_sparse
from keras_elmo.optimizers.sparse_updates import num_replicas


@keras.saving.register_keras_serializable(package="keras_elmo")
class LossScaleOptimizer(keras.optimizers.LossScaleOptimizer):
    """Dynamic loss scaling for float16 training with sparse gradients.

    `keras.optimizers.LossScaleOptimizer` (halve the scale and skip the step
    when a gradient overflows, double it after `dynamic_growth_steps` good
    steps), with a finite check that suits this package:

    - it reads only the rows an `IndexedSlices` gradient holds; Keras's
      check turns it into a dense `(V, P)` tensor at every step;
    - under a `tf.distribute` strategy the replicas agree: a step is skipped
      on every replica when any replica overflowed. Keras's check looks at
      each replica's own gradient, so the replicas could take different
      branches and wait for each other's all-reduce forever.

    The wrapped optimizer (`SparseAdagrad`, `SparseAdam`) sees the unscaled
    gradients, so its clipping is unchanged.

    Args:
        inner_optimizer: the `keras.optimizers.Optimizer` to wrap.
        initial_scale: float. Defaults to `2 ** 15`.
        dynamic_growth_steps: int. Defaults to `2000`.

    Example:

    >>> from keras_elmo.optimizers.loss_scale_optimizer import (
    ...     LossScaleOptimizer)
    >>> optimizer = LossScaleOptimizer(keras_elmo.optimizers.SparseAdagrad())
    >>> grad = tf.IndexedSlices(
    ...     tf.constant([[1.0, float("inf")]]), tf.constant([1]),
    ...     tf.constant([3, 2]))
    >>> bool(optimizer.check_finite([grad, tf.ones((2,))]))
    False
    """

    def __init__(self, inner_optimizer, *args, **kwargs):
        check_instance(
            inner_optimizer,
            keras.optimizers.Optimizer,
            "inner_optimizer",
            expected="a keras.optimizers.Optimizer, e.g. "
            "keras_elmo.optimizers.SparseAdagrad()",
        )
        super().__init__(inner_optimizer, *args, **kwargs)

    def check_finite(self, grads):
        values = [
            g.values if is_sparse(g) else g for g in grads if g is not None
        ]
        finite = ops.all(ops.stack([ops.all(ops.isfinite(v)) for v in values]))
        if num_replicas() > 1:
            import tensorflow as tf

            context = tf.distribute.get_replica_context()
            overflowed = context.all_reduce(
                "sum", ops.cast(ops.logical_not(finite), "float32")
            )
            finite = ops.equal(overflowed, 0.0)
        return finite
