"""The seam on TensorFlow (see `keras_elmo.layers.backends`)."""

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import control_flow_util

from keras_elmo.layers.backends import tensorflow_recurrence
from keras_elmo.layers.backends.tensorflow_rows import Rows

# `valid_convolution` is `keras_ops`'s.


def host_values(x):
    """The values in eager mode; None inside a graph (a `tf.function`
    checks with in-graph assertions instead, `checked_in_graph`)."""
    if tf.executing_eagerly() and not isinstance(x, tf.Variable):
        return np.asarray(x)
    return None


def checked_in_graph(x, minimum, maximum, message):
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


def variable_value(x):
    """`x` itself: TensorFlow reads a variable wherever it is used."""
    return x


def takes_host_tokens(inputs):
    """False: string tokens become ids inside the graph."""
    return False


def dense(x):
    """`x`, with a `tf.RaggedTensor` padded to a dense tensor."""
    if isinstance(x, tf.RaggedTensor):
        return x.to_tensor()
    return x


def ensure_shape(x, shape):
    """`x` with its static shape set (TensorFlow loses it in loops)."""
    return tf.ensure_shape(x, shape)


def encode_distinct(x, encode, slack=None, finish=None):
    """The distinct rows by `UniqueV2`, encoded reading only the positions
    that hold every distinct window (`_cut`), gathered back."""
    rows, index = tf.raw_ops.UniqueV2(x=x, axis=[0])
    rows = tf.ensure_shape(rows, (None, x.shape[-1]))
    encoded = encode(rows, _cut(rows, slack))
    if finish is not None:
        encoded = finish(encoded)
    return tf.gather(encoded, index, axis=0)


def _cut(rows, slack):
    """How many leading positions of `rows` `(N, K)` to read: the latest
    tail start plus `slack`, the widest window (as on JAX,
    `jax_tokens.py`: a row's ids are constant from its tail start on, so a
    window of tail ids has one value wherever it starts, and the cut keeps
    one of them). A scalar tensor; None (all of them) without `slack` or
    under XLA, whose shapes cannot depend on values.

    Most words are far shorter than the 50 positions of a token, so the
    char CNN does a fraction of its work, in training and inference."""
    if slack is None or _in_xla():
        return None
    length = tf.shape(rows)[-1]
    positions = tf.cast(tf.range(1, length + 1), rows.dtype)
    starts = tf.where(rows != rows[:, -1:], positions, tf.zeros_like(rows))
    latest = tf.maximum(tf.cast(tf.reduce_max(starts), tf.int32), 0)
    return tf.minimum(latest + slack, length)  # no rows: `slack`


def lstm_recurrences(runs, time_mask, training=None):
    """Each run's `tf.while_loop` over the rows still running
    (`tensorflow_rows.py`); with `training`, the loop with the
    hand-written gradient (`tensorflow_recurrence.py`); inside an
    export's `fused_recurrences`, a plain LSTM's fused kernel (no final
    state)."""
    if _in_xla():
        return [
            tensorflow_recurrence.masked_recurrence(
                inputs, time_mask, c0, h0, cell.converted(tf.convert_to_tensor)
            )
            for inputs, c0, h0, cell in runs
        ]
    loop = tensorflow_recurrence.recurrence
    if not training:
        loop = tensorflow_recurrence.inference_recurrence
    rows = Rows(time_mask)
    results = []
    for inputs, c0, h0, cell in runs:
        cell = cell.converted(tf.convert_to_tensor)
        fused = tensorflow_recurrence.fused_recurrence(cell)
        if fused is not None:  # an export's fused kernel
            results.append((fused(inputs, time_mask, cell), None, None))
        else:
            results.append(loop(inputs, rows, c0, h0, cell))
    return results


def _in_xla():
    """Whether the op being traced is compiled by XLA (`jit_compile`)."""
    return control_flow_util.GraphOrParentsInXlaContext(
        tf.compat.v1.get_default_graph()
    )


def reverse_sequences(x, lengths):
    """`tf.reverse_sequence`."""
    return tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)


def compiled_bilm_call(bilm, inputs, **kwargs):
    """One `tf.function` for every shape (`tensorflow_eager.py`)."""
    from keras_elmo.layers.backends import tensorflow_eager

    return tensorflow_eager.bilm_call(bilm, inputs, **kwargs)
