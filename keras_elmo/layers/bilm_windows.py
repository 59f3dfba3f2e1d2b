"""A `BiLM` call on windows of continuous text (training only).

In bilm-tf's recipe (`keras_elmo.data.windows`) each direction reads its
own window: the forward LSTMs the forward stream, the backward LSTMs the
reversed-sentence stream, given reversed in time (they walk each row from
its end). Every position is a real token, the sentence boundaries are
tokens of the windows (nothing is added), and each layer starts from the
state the caller carries from the previous window.
"""

from keras import ops

from keras_elmo.layers.projected_lstm import run_lstms

BACKWARD_PREFIX = "backward_"


def is_window_batch(bilm, inputs):
    """True for a window batch: a dict with the backward direction's own
    input (`backward_character_ids`, or `backward_token_ids`)."""
    name = BACKWARD_PREFIX + bilm.encoder.input_name
    return isinstance(inputs, dict) and name in inputs


def window_call(bilm, inputs, initial_states=None, training=None):
    """The top forward and backward LSTM outputs of a window batch and
    each layer's final states.

    Args:
        bilm: a built `BiLM`.
        inputs: dict: the forward window under the encoder's input name,
            the backward one (reversed in time) under `backward_` + it.
        initial_states: None (zeros) or, per layer, `[[c, h], [c, h]]`
            (forward, backward).
        training: bool. Enables dropout.

    Returns:
        A dict: `"forward"`, `"backward"` `(rows, N, P)` and `"states"`,
        per layer `[[c, h], [c, h]]`.
    """
    name = bilm.encoder.input_name
    forward_ids, backward_ids = inputs[name], inputs[BACKWARD_PREFIX + name]
    rows = ops.shape(forward_ids)[0]
    # One pass of the token encoder over both directions' tokens.
    ids = ops.concatenate([forward_ids, backward_ids], axis=0)
    embeddings = bilm.encode_tokens(ops.cast(bilm.encoder.check(ids), "int32"))
    forward_input, backward_input = embeddings[:rows], embeddings[rows:]
    mask = ops.ones(ops.shape(forward_input)[:2], dtype="bool")
    states = []
    for i in range(bilm.num_layers):
        layers = [bilm.forward_layers[i], bilm.backward_layers[i]]
        forward_input = bilm.dropout_layer(forward_input, training=training)
        backward_input = bilm.dropout_layer(backward_input, training=training)
        (forward, backward), final = run_lstms(
            layers,
            [forward_input, backward_input],
            mask,
            None if initial_states is None else initial_states[i],
            training=training,
        )
        states.append(final)
        if bilm.use_skip_connections and i > 0:
            forward = forward + forward_input
            backward = backward + backward_input
        forward_input, backward_input = forward, backward
    return {
        "forward": forward_input,
        "backward": backward_input,
        "states": states,
    }
