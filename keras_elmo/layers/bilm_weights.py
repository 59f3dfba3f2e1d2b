"""A biLM's weights copied into another `BiLM` of the same sizes.

Two `BiLM`s built from the same sizes create their trainable weights in
the same order (each layer creates its own in one order, and the `BiLM`
builds its layers in one order), whatever else their arguments say
(`stateful`, `dropout`, the dtype policy): so the weights are matched by
the layers that hold them, never by their names.
"""

import itertools


def copy_bilm_weights(target, source):
    """Copies the trainable weights of the built `BiLM` `source` into the
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
    ours, theirs = target.trainable_weights, source.trainable_weights
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
