"""The frozen copy of a biLM that every export runs: stateless, without
dropout, not trainable, float32, with the biLM's weights."""

import numpy as np

from keras_elmo.layers.bilm import BiLM
from keras_elmo.layers.bilm_weights import learned_weights


def frozen_bilm(bilm, **config):
    """A built, stateless float32 copy of `bilm`, its weights copied.

    Args:
        bilm: a built `keras_elmo.layers.BiLM`.
        **config: further entries of the copy's config (e.g.
            `deduplicate_tokens`).

    The copy's variables are created here, so a caller's
    `tf.variable_creator_scope` around this call applies to them.
    """
    config = dict(
        bilm.get_config(),
        stateful=False,
        dropout=0.0,
        trainable=False,
        dtype="float32",
        **config,
    )
    copy = BiLM.from_config(config)
    copy.build()
    copy.set_weights(
        [np.asarray(w.numpy(), "float32") for w in learned_weights(bilm)]
    )
    return copy
