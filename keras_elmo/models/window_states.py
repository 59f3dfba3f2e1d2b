"""The LSTM state an `ELMoLanguageModel` carries from one window batch to
the next (training on continuous text, `keras_elmo.data.windows`).

One non-trainable float32 variable per layer, direction and part (`c`,
`h`), one row per row of the global batch, saved with the model's other
variables, so that a resumed run goes on from the state it stopped at.
Under a `tf.distribute` strategy each replica holds rows
`[replica x rows, (replica + 1) x rows)` of the global batch (its part,
in order): it reads its slice, and writes its slice in a tensor of zeros
that the variable sums over the replicas.
"""

from keras import ops


def build_window_states(model, rows):
    """Adds the state variables of `rows` global rows to `model` (an
    `ELMoLanguageModel` with a built `bilm`); `[layer][direction][part]`."""
    bilm = model.bilm
    states = []
    for i in range(bilm.num_layers):
        per_layer = []
        for direction in ("forward", "backward"):
            size = bilm.forward_layers[i].output_dim
            per_layer.append(
                [
                    model.add_weight(
                        name=f"window_{direction}_{i}_{part}",
                        shape=(rows, width),
                        initializer="zeros",
                        trainable=False,
                        dtype="float32",
                        # The cell state stays float32 in mixed precision.
                        autocast=False,
                        aggregation="sum",
                    )
                    for part, width in (("c", bilm.units), ("h", size))
                ]
            )
        states.append(per_layer)
    return states


def _first_row(rows):
    """The first global row of this replica's `rows`."""
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return 0
    return context.replica_id_in_sync_group * rows


def read_window_states(states, rows):
    """This replica's `rows` of the carried `states`, as `initial_states`
    of `BiLM` (per layer `[[c, h], [c, h]]`)."""
    first = _first_row(rows)
    return [
        [
            [ops.slice(v, (first, 0), (rows, v.shape[1])) for v in part]
            for part in per_layer
        ]
        for per_layer in states
    ]


def write_window_states(states, values, rows):
    """Stores this replica's final `values` (as `BiLM` returns them) in
    its rows of `states`; the other rows get zeros, which the variables'
    sum over the replicas leaves to their own replicas."""
    first = _first_row(rows)
    for per_layer, per_values in zip(states, values):
        for part, value in zip(per_layer, per_values):
            for variable, new in zip(part, value):
                whole = ops.zeros(variable.shape, "float32")
                whole = ops.slice_update(
                    whole, (first, 0), ops.cast(new, "float32")
                )
                variable.assign(whole)
