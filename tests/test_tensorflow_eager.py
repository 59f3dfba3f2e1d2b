"""Eager BiLM calls on TensorFlow run one compiled function
(`keras_elmo/layers/backends/tensorflow_eager.py`): traced once for
every batch shape, the numbers of the op-by-op call, the same errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from elmo_core.errors import KerasElmoError
from keras_elmo.layers import BiLM
from tests.helpers import assert_gradients_close

SIZE = dict(
    filters=[[1, 4], [2, 8]],
    char_embedding_dim=4,
    num_highway_layers=1,
    units=16,
    projection_dim=8,
    cell_clip=1.0,
    proj_clip=1.0,
)
BATCHES = (
    [["The", "cat", "sat"], ["Hi"]],
    [["One"], ["two", "words"], ["and", "three", "more", "here"]],
    [["alone"]],
)


def _traces(bilm):
    functions = vars(bilm).get("_tf_functions", {})
    return sum(f.experimental_get_tracing_count() for f in functions.values())


def _op_by_op(bilm, ids, **kwargs):
    """The call without the compiled function: `call` itself, eagerly."""
    return bilm.call(tf.constant(ids), **kwargs)


def test_one_trace_for_every_batch_shape_same_numbers():
    bilm = BiLM(**SIZE)
    for sentences in BATCHES:
        ids = keras_elmo.batch_to_ids(sentences)
        got = bilm(ids)
        want = _op_by_op(bilm, ids)
        for a, b in zip(got["layer_outputs"], want["layer_outputs"]):
            np.testing.assert_allclose(a, b, atol=1e-6)
        np.testing.assert_array_equal(got["mask"], want["mask"])
    assert _traces(bilm) == 1
    # Other call arguments are another function, traced once too.
    bilm(ids, keep_boundaries=True)
    bilm(keras_elmo.batch_to_ids(BATCHES[0]), keep_boundaries=True)
    assert _traces(bilm) == 2


def test_gradients_through_the_compiled_call():
    bilm = BiLM(**SIZE)
    ids = keras_elmo.batch_to_ids(BATCHES[1])

    def gradients(call):
        with tf.GradientTape() as tape:
            outputs = call()
            loss = sum(tf.reduce_sum(x * x) for x in outputs["layer_outputs"])
        return tape.gradient(loss, bilm.trainable_variables)

    got = gradients(lambda: bilm(ids, training=True))
    want = gradients(lambda: _op_by_op(bilm, ids, training=True))
    assert _traces(bilm) == 1
    for a, b, v in zip(got, want, bilm.trainable_variables):
        assert_gradients_close(
            tf.convert_to_tensor(a), tf.convert_to_tensor(b), v.path
        )


def test_stateful_state_carried_and_batch_limit_checked():
    compiled = BiLM(**SIZE, stateful=True, max_batch_size=3)
    plain = BiLM(**SIZE, stateful=True, max_batch_size=3)
    compiled.build()
    plain.build()
    plain.set_weights(compiled.get_weights())
    ids = keras_elmo.batch_to_ids(BATCHES[1])
    for _ in range(2):  # the second call starts from the first's state
        got = compiled(ids)["layer_outputs"][-1]
        want = _op_by_op(plain, ids)["layer_outputs"][-1]
        np.testing.assert_allclose(got, want, atol=1e-6)
    with pytest.raises(KerasElmoError, match="at most 3 batch rows"):
        compiled(keras_elmo.batch_to_ids([["a"]] * 4))


def test_bad_ids_are_the_eager_error():
    bilm = BiLM(**SIZE)
    ids = keras_elmo.batch_to_ids(BATCHES[0])
    ids[0, 0, 3] = 262
    with pytest.raises(KerasElmoError, match=r"0\.\.261.*from 0 to 262"):
        bilm(ids)


def test_elmo_embedding_runs_its_biLM_compiled():
    bilm = BiLM(**SIZE)
    embedding = keras_elmo.ELMoEmbedding(bilm, dropout=0.0)
    for sentences in BATCHES:
        embedding(keras_elmo.batch_to_ids(sentences))
    assert _traces(bilm) == 1


def test_traced_calls_run_as_they_are():
    bilm = BiLM(**SIZE)
    inputs = keras.Input((None, 50), dtype="int32")
    model = keras.Model(inputs, bilm(inputs)["layer_outputs"][-1])
    assert _traces(bilm) == 0  # built symbolically
    ids = keras_elmo.batch_to_ids(BATCHES[0])
    tf.function(lambda x: bilm(x)["mask"])(ids)
    assert _traces(bilm) == 0
    # The functional model called eagerly calls the biLM eagerly.
    np.testing.assert_allclose(
        model(ids), _op_by_op(bilm, ids)["layer_outputs"][-1], atol=1e-6
    )
    assert _traces(bilm) == 1
