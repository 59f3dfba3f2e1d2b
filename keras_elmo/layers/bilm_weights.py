"""A biLM's weights copied into another `BiLM` of the same sizes.

Two `BiLM`s built from the same sizes create their weights in the same
order (each layer creates its own in one order, and the `BiLM` builds its
layers in one order), whatever else their arguments say (`stateful`,
`dropout`, the dtype policy, `trainable`): so the weights are matched by
the layers that hold them, never by their names. The learned weights are
all of them but a stateful biLM's carried LSTM state, frozen or not: a
frozen biLM (`trainable=False`, as `ELMoEmbedding` holds it unless
`fine_tune=True`) has no *trainable* weights at all.
"""

import itertools

# `BiLM` arguments that never change the shapes or the count of its
# weights (what a reader that builds the biLM straight from a weight file
# may take as given; any other argument is checked against the weights).
SHAPE_FREE_ARGUMENTS = frozenset(
    {
        "activation",
        "cell_clip",
        "deduplicate_tokens",
        "dropout",
        "dtype",
        "max_batch_size",
        "name",
        "proj_clip",
        "stateful",
        "trainable",
        "use_skip_connections",
    }
)


def copy_bilm_weights(target, source):
    """Copies the learned weights of the built `BiLM` `source` into the
    built `BiLM` `target`, all or none of them.

    Returns:
        None once copied; if they do not fit, the first that does not,
        in words (`"forward_lstm_0/kernel has shape (8, 64) there but
        (8, 128)"`, "there" being `source`), and nothing is copied.

    Example:

    >>> source = keras_elmo.layers.BiLM(
    ...     units=16, projection_dim=8, token_encoder="words",
    ...     vocabulary_size=10)
    >>> source.build()
    >>> target = keras_elmo.layers.BiLM(
    ...     units=16, projection_dim=8, token_encoder="words",
    ...     vocabulary_size=10, stateful=True)
    >>> target.build()
    >>> copy_bilm_weights(target, source) is None
    True
    >>> wider = keras_elmo.layers.BiLM(
    ...     units=32, projection_dim=8, token_encoder="words",
    ...     vocabulary_size=10)
    >>> wider.build()
    >>> copy_bilm_weights(wider, source)
    'forward_lstm_0/kernel has shape (8, 64) there but (8, 128)'
    """
    ours, theirs = learned_weights(target), learned_weights(source)
    for mine, other in itertools.zip_longest(ours, theirs):
        if mine is None or other is None:
            return f"{len(theirs)} weights are there but {len(ours)}"
        if tuple(mine.shape) != tuple(other.shape):
            # The path below the biLM (a run's biLM sits in its model).
            name = other.path.split(f"{source.name}/", 1)[-1]
            return (
                f"{name} has shape {tuple(other.shape)} there but "
                f"{tuple(mine.shape)}"
            )
    for mine, other in zip(ours, theirs):
        mine.assign(other.numpy())
    return None


def learned_weights(bilm):
    """Every weight of the built `BiLM` `bilm` but its carried LSTM state
    (`stateful=True`), trainable or frozen, in the order it made them."""
    state = {
        id(variable)
        for per_layer in getattr(bilm, "state_variables", [])
        for per_direction in per_layer
        for variable in per_direction
    }
    return [w for w in bilm.weights if id(w) not in state]
