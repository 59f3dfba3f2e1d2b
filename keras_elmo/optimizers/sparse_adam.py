import keras
from keras import ops

from elmo_core.errors import check_number
from keras_elmo.optimizers.sparse_updates import SparseOptimizer
from keras_elmo.optimizers.sparse_updates import is_sparse


@keras.saving.register_keras_serializable(package="keras_elmo")
class SparseAdam(SparseOptimizer):
    """Adam that updates only the rows a sparse gradient touches ("lazy").

    For dense gradients this is Keras's Adam. For an `IndexedSlices`
    gradient (a softmax or embedding row gather) the duplicate indices are
    merged and only those rows of the moments and the variable are updated,
    with the bias correction of the global step; rows without a gradient
    keep their moments instead of decaying them. As in `SparseAdagrad`,
    gradients are clipped to `global_clipnorm` (after the sum over the
    replicas of a `tf.distribute` strategy). Use it for short pretraining
    runs, where Adagrad's small early steps are too slow (the main job's CPU
    demo); the original recipe is `SparseAdagrad`.

    Args:
        learning_rate: float or schedule. Defaults to `0.001`.
        beta_1: float. Defaults to `0.9`.
        beta_2: float. Defaults to `0.999`.
        epsilon: float. Defaults to `1e-7`.
        global_clipnorm: float or None. Defaults to `10.0`.
        **kwargs: other `keras.optimizers.Optimizer` arguments.

    Example:

    >>> optimizer = keras_elmo.optimizers.SparseAdam(learning_rate=0.1)
    >>> var = keras.Variable(np.zeros((3, 2), "float32"))
    >>> grad = tf.IndexedSlices(
    ...     tf.ones((1, 2)), tf.constant([2]), tf.constant([3, 2]))
    >>> optimizer.apply([grad], [var])
    >>> # The first Adam step moves a row by the learning rate.
    >>> [round(float(x), 4) for x in var.numpy()[:, 0]]
    [0.0, 0.0, -0.1]

    Reference:
        Kingma and Ba 2015, "Adam: A Method for Stochastic Optimization".
    """

    def __init__(
        self,
        learning_rate=0.001,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-7,
        global_clipnorm=10.0,
        name="sparse_adam",
        **kwargs,
    ):
        beta_1 = check_number(beta_1, "beta_1", minimum=0.0, maximum=1.0)
        beta_2 = check_number(beta_2, "beta_2", minimum=0.0, maximum=1.0)
        epsilon = check_number(epsilon, "epsilon", minimum=0.0)
        super().__init__(
            dict(beta_1=beta_1, beta_2=beta_2, epsilon=epsilon),
            learning_rate=learning_rate,
            global_clipnorm=global_clipnorm,
            name=name,
            **kwargs,
        )

    def build_slots(self, var_list):
        self._momentums, self._velocities = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"]
        )

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        step = ops.cast(self.iterations + 1, variable.dtype)
        lr = ops.cast(learning_rate, variable.dtype)
        lr = lr * ops.sqrt(1.0 - ops.power(self.beta_2, step))
        lr = lr / (1.0 - ops.power(self.beta_1, step))
        if is_sparse(gradient):
            import tensorflow as tf

            indices = gradient.indices
            g = ops.cast(gradient.values, variable.dtype)
            new_m = self.beta_1 * tf.gather(m.value, indices)
            new_m += (1.0 - self.beta_1) * g
            new_v = self.beta_2 * tf.gather(v.value, indices)
            new_v += (1.0 - self.beta_2) * ops.square(g)
            self.assign(m, tf.IndexedSlices(new_m, indices))
            self.assign(v, tf.IndexedSlices(new_v, indices))
            update = lr * new_m / (ops.sqrt(new_v) + self.epsilon)
            self.assign_sub(variable, tf.IndexedSlices(update, indices))
            return
        g = ops.cast(gradient, variable.dtype)
        self.assign_add(m, (g - m) * (1.0 - self.beta_1))
        self.assign_add(v, (ops.square(g) - v) * (1.0 - self.beta_2))
        self.assign_sub(variable, lr * m / (ops.sqrt(v) + self.epsilon))
