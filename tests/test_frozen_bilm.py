"""The frozen copy every export runs: a stateful biLM freezes to its
weights without its carried state, and the copy answers from a zero state
as bilm-tf does."""

import numpy as np
import pytest

import keras_elmo
from keras_elmo.export.frozen_bilm import frozen_bilm
from tests.deploy_helpers import fixture_bilm
from tests.deploy_helpers import fixture_sentences
from tests.deploy_helpers import fixture_top_layer


def _state(bilm):
    return [
        variable
        for per_layer in bilm.state_variables
        for per_direction in per_layer
        for variable in per_direction
    ]


# Large: ~47 s; the stateless biLM freezes by default (test_export)
@pytest.mark.large
def test_a_stateful_bilm_freezes_without_its_carried_state():
    bilm = fixture_bilm(stateful=True)
    ids = keras_elmo.batch_to_ids(fixture_sentences())
    bilm(ids)
    state = _state(bilm)
    assert state and any(np.abs(v.numpy()).max() > 0 for v in state)
    copy = frozen_bilm(bilm, deduplicate_tokens=False)
    assert not copy.stateful and not copy.deduplicate_tokens
    assert not copy.trainable and not _state(copy)
    assert len(copy.weights) == len(bilm.weights) - len(state)
    # From a zero state, whatever the original carried: bilm-tf's top layer.
    top_layers = np.asarray(copy(ids, training=False)["layer_outputs"][-1])
    assert top_layers.dtype == np.float32
    for k in range(3):
        target = fixture_top_layer(k)
        top = top_layers[k, : target.shape[1]]
        np.testing.assert_allclose(
            np.stack([top[:, :16], top[:, 16:]]), target, atol=1e-5, rtol=0
        )
