"""A stateful `BiLM`'s carried LSTM state (`stateful=True`): one row a
batch row, up to `max_batch_size`, kept in non-trainable variables
(`bilm.state_variables[layer][direction] -> [c, h]`); each call starts
row `r` from it and writes back where it ended, as bilm-tf does."""

from keras import ops

from keras_elmo.layers import backends


def add_state_variables(bilm):
    """The state variables of the built `bilm`: per layer, per direction
    (forward, backward), `[c, h]` of `max_batch_size` zero rows."""
    variables = []
    for i in range(bilm.num_layers):
        per_layer = []
        for direction in ("forward", "backward"):
            sizes = (
                ("c", bilm.units),
                ("h", bilm.forward_layers[i].output_dim),
            )
            per_layer.append(
                [
                    bilm.add_weight(
                        name=f"{direction}_{i}_state_{part}",
                        shape=(bilm.max_batch_size, size),
                        initializer="zeros",
                        trainable=False,
                        dtype="float32",
                    )
                    for part, size in sizes
                ]
            )
        variables.append(per_layer)
    return variables


def read_states(bilm, layer_index, batch_size):
    """The states layer `layer_index` starts a batch of `batch_size` rows
    from (None for a stateless `bilm`: zeros)."""
    if not bilm.stateful:
        return None
    message = (
        f"A stateful BiLM keeps state for at most {bilm.max_batch_size}"
        " batch rows; use smaller batches or a larger max_batch_size."
    )
    backends.check_at_most(
        batch_size, bilm.max_batch_size, message, "batch_size"
    )
    return [
        [
            ops.slice(
                backends.variable_value(v), (0, 0), (batch_size, v.shape[1])
            )
            for v in state
        ]
        for state in bilm.state_variables[layer_index]
    ]


def write_states(bilm, layer_index, final_states):
    """Keeps the states layer `layer_index` ended a batch with (nothing
    for a stateless `bilm`)."""
    if not bilm.stateful:
        return
    for state, values in zip(bilm.state_variables[layer_index], final_states):
        for variable, value in zip(state, values):
            variable.assign(
                ops.slice_update(
                    backends.variable_value(variable),
                    (0, 0),
                    ops.cast(value, variable.dtype),
                )
            )
