"""Checks inside a TensorFlow graph, where values are known only at run
time (the other side of `checked_range` and `check_at_most`)."""

import tensorflow as tf


def guarded_range(x, minimum, maximum, message):
    """`x`, as a tensor that exists only once its range was checked.

    The assertions are control dependencies of the returned identity, so
    every op reading it runs after them (a plain assert beside a gather
    races with it, and on a GPU an out-of-range gather returns zeros).
    """
    x = tf.convert_to_tensor(x)
    checks = [
        tf.debugging.assert_greater_equal(
            x, tf.constant(minimum, x.dtype), message=message
        ),
        tf.debugging.assert_less_equal(
            x, tf.constant(maximum, x.dtype), message=message
        ),
    ]
    with tf.control_dependencies(checks):
        return tf.identity(x)


def assert_at_most(value, limit, message):
    """An in-graph assertion that `value <= limit`."""
    tf.debugging.assert_less_equal(value, limit, message=message)
