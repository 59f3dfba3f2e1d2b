import keras
import numpy as np
import tensorflow as tf

from keras_elmo.optimizers import SparseAdagrad
from keras_elmo.optimizers import SparseAdam
from tests.helpers import TestCase


class SparseAdagradTest(TestCase):
    def _apply(self, optimizer, grads, values):
        variables = [keras.Variable(v) for v in values]
        for step_grads in grads:
            optimizer.apply(step_grads, variables)
        return [v.numpy() for v in variables], optimizer

    def test_sparse_updates_equal_dense_adagrad(self):
        rng = np.random.RandomState(0)
        table = rng.randn(6, 3).astype("float32")
        dense_var = rng.randn(4).astype("float32")
        steps = []
        for _ in range(3):
            # Duplicate indices, merged before the update.
            indices = tf.constant([4, 1, 4, 0])
            values = tf.constant(rng.randn(4, 3).astype("float32"))
            steps.append(
                (
                    tf.IndexedSlices(values, indices, tf.constant([6, 3])),
                    tf.constant(rng.randn(4).astype("float32")),
                )
            )
        for clip in (None, 1.0):
            sparse, optimizer = self._apply(
                SparseAdagrad(learning_rate=0.3, global_clipnorm=clip),
                [list(s) for s in steps],
                [table, dense_var],
            )
            dense, _ = self._apply(
                keras.optimizers.Adagrad(
                    learning_rate=0.3,
                    initial_accumulator_value=1.0,
                    epsilon=1e-7,
                    global_clipnorm=clip,
                ),
                [[tf.convert_to_tensor(g), d] for g, d in steps],
                [table, dense_var],
            )
            for got, want in zip(sparse, dense):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        # Rows without gradients are untouched, accumulators included.
        np.testing.assert_array_equal(sparse[0][[2, 3, 5]], table[[2, 3, 5]])
        accumulator = optimizer._accumulators[0].numpy()
        np.testing.assert_array_equal(accumulator[[2, 3, 5]], 1.0)

    def test_serialization(self):
        optimizer = SparseAdagrad(learning_rate=0.1, global_clipnorm=5.0)
        revived = SparseAdagrad.from_config(optimizer.get_config())
        self.assertEqual(revived.get_config(), optimizer.get_config())


class SparseAdamTest(TestCase):
    def test_rows_with_gradients_follow_adam_and_others_stay(self):
        rng = np.random.RandomState(1)
        table = rng.randn(5, 3).astype("float32")
        sparse_var = keras.Variable(table)
        dense_var = keras.Variable(table)
        sparse = SparseAdam(learning_rate=0.05, global_clipnorm=None)
        dense = keras.optimizers.Adam(learning_rate=0.05, epsilon=1e-7)
        for _ in range(4):
            # The same rows every step: lazy Adam then equals Adam on them.
            values = rng.randn(3, 3).astype("float32")
            indices = tf.constant([3, 0, 3])
            grad = tf.IndexedSlices(
                tf.constant(values), indices, tf.constant([5, 3])
            )
            sparse.apply([grad], [sparse_var])
            dense.apply([tf.convert_to_tensor(grad)], [dense_var])
        got, want = sparse_var.numpy(), dense_var.numpy()
        np.testing.assert_allclose(got[[0, 3]], want[[0, 3]], rtol=1e-5)
        # Dense Adam moves untouched rows too (zero gradient, zero moment:
        # no move); lazy Adam leaves them exactly as they were.
        np.testing.assert_array_equal(got[[1, 2, 4]], table[[1, 2, 4]])

    def test_dense_gradients_equal_keras_adam(self):
        values = np.arange(6, dtype="float32").reshape(2, 3)
        a, b = keras.Variable(values), keras.Variable(values)
        sparse = SparseAdam(learning_rate=0.1, global_clipnorm=1.0)
        dense = keras.optimizers.Adam(learning_rate=0.1, global_clipnorm=1.0)
        for step in range(3):
            grad = tf.constant(np.full((2, 3), step - 1.5, "float32"))
            sparse.apply([grad], [a])
            dense.apply([grad], [b])
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)
