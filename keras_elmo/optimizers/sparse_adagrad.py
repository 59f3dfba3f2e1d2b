import keras
from keras import ops

from elmo_core.errors import check_number
from keras_elmo.optimizers.sparse_updates import SparseOptimizer
from keras_elmo.optimizers.sparse_updates import is_sparse


@keras.saving.register_keras_serializable(package="keras_elmo")
class SparseAdagrad(SparseOptimizer):
    """Adagrad that keeps sparse gradients sparse.

    Keras 3 optimizers other than SGD apply `IndexedSlices` gradients densely,
    so a step over a large softmax would touch every row of the accumulator
    and the weights. This optimizer merges duplicate indices, clips by the
    global norm without densifying, and updates only the rows that have a
    gradient:

        accumulator[rows] += g ** 2
        variable[rows] -= learning_rate * g / sqrt(accumulator[rows] + epsilon)

    Dense gradients get the same update on every element. Under a
    `tf.distribute` strategy the merge and the clip apply to the gradient
    summed over the replicas, as on one device. The defaults are the
    original ELMo training recipe.

    Args:
        learning_rate: float or schedule. Defaults to `0.2`.
        initial_accumulator_value: float. Defaults to `1.0`.
        epsilon: float. Defaults to `1e-7`.
        global_clipnorm: float or None. Clip all gradients together to this
            global norm. Defaults to `10.0`.
        **kwargs: other `keras.optimizers.Optimizer` arguments.

    Example:

    >>> optimizer = keras_elmo.optimizers.SparseAdagrad()
    >>> var = keras.Variable(np.zeros((4, 2), "float32"))
    >>> grad = tf.IndexedSlices(
    ...     tf.ones((2, 2)), tf.constant([1, 1]), tf.constant([4, 2]))
    >>> optimizer.apply([grad], [var])
    >>> # Row 1 got the merged gradient 2: -0.2 * 2 / sqrt(1 + 2 ** 2).
    >>> round(float(var.numpy()[1, 0]), 4), bool(var.numpy()[[0, 2, 3]].any())
    (-0.1789, False)

    Reference:
        Duchi et al. 2011, "Adaptive Subgradient Methods for Online Learning
        and Stochastic Optimization".
    """

    def __init__(
        self,
        learning_rate=0.2,
        initial_accumulator_value=1.0,
        epsilon=1e-7,
        global_clipnorm=10.0,
        name="sparse_adagrad",
        **kwargs,
    ):
        initial_accumulator_value = check_number(
            initial_accumulator_value, "initial_accumulator_value", minimum=0.0
        )
        epsilon = check_number(epsilon, "epsilon", minimum=0.0)
        super().__init__(
            dict(
                initial_accumulator_value=initial_accumulator_value,
                epsilon=epsilon,
            ),
            learning_rate=learning_rate,
            global_clipnorm=global_clipnorm,
            name=name,
            **kwargs,
        )

    def build_slots(self, var_list):
        self._accumulators = self.add_optimizer_variables(
            var_list,
            "accumulator",
            initializer=keras.initializers.Constant(
                self.initial_accumulator_value
            ),
        )

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        accumulator = self._accumulators[self._get_variable_index(variable)]
        if is_sparse(gradient):
            import tensorflow as tf

            values = ops.cast(gradient.values, variable.dtype)
            indices = gradient.indices
            self.assign_add(
                accumulator,
                tf.IndexedSlices(ops.square(values), indices),
            )
            rows = tf.gather(accumulator.value, indices)
            step = lr * values / ops.sqrt(rows + self.epsilon)
            self.assign_sub(variable, tf.IndexedSlices(step, indices))
            return
        gradient = ops.cast(gradient, variable.dtype)
        self.assign_add(accumulator, ops.square(gradient))
        self.assign_sub(
            variable, lr * gradient / ops.sqrt(accumulator + self.epsilon)
        )
