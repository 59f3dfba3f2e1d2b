"""Keras's own recurrent layers (`LSTM`, `GRU`, `SimpleRNN`, any
`keras.layers.RNN`, also inside `Bidirectional`) traced for the LiteRT
export without a TensorArray.

A tagger around ELMo usually has a BiLSTM. On TensorFlow, Keras runs an
RNN layer's time loop in `tf.while_loop` with `TensorArray`s whose element
shape `(batch, units)` is not static, which the TFLite converter cannot
lower to builtin ops (the biLM's own loop has the same problem, solved in
`tensorflow_recurrence.concatenated_outputs`). Inside `portable_rnns`,
each RNN layer of a model runs its `inner_loop` (the public method an RNN
layer runs its cell's steps in; Keras's LSTM uses it for cuDNN) as
`concatenating_rnn`: the same steps of the same cell, with Keras's masking
rules, that reads each step's input by position and collects the outputs by
concatenation. The values are the same; the copies grow with the square
of the length (sentences, not documents), so it is used for the export
only.
"""

import contextlib
import inspect

import keras
import tensorflow as tf

from elmo_core.errors import KerasElmoError


def concatenating_rnn(
    step,
    inputs,
    initial_states,
    go_backwards=False,
    mask=None,
    zero_output_for_mask=False,
    return_all_outputs=True,
):
    """Keras's RNN loop (its TensorFlow `rnn`, not unrolled, batch major,
    one input tensor) without TensorArrays, in builtin LiteRT ops only
    (no `x[None]`: a strided slice with a new axis is not one; and
    `x[t]`, not `tf.gather(x, t)`, which the interpreter's WHILE fails to
    run).

    Args:
        step: `step(input_t, states)` -> `(output_t, new_states)`.
        inputs: `(batch, time, features)`.
        initial_states: list of `(batch, ...)` tensors.
        go_backwards: bool. Run from the last step to the first; the
            outputs are in that order (as Keras's).
        mask: None or bool `(batch, time)`: a masked step keeps the
            previous states, and outputs zeros (`zero_output_for_mask`)
            or the previous output.
        zero_output_for_mask: bool.
        return_all_outputs: bool. All steps' outputs, else the last one's.

    Returns:
        `(last_output, outputs, new_states)` as Keras's `rnn`: `outputs`
        `(batch, time or 1, units)`.
    """
    # Time major, as Keras runs it.
    swap = [1, 0, *range(2, len(inputs.shape))]
    sequence = tf.transpose(inputs, swap)
    if mask is not None:
        mask = tf.expand_dims(tf.transpose(tf.cast(mask, tf.bool), [1, 0]), -1)
    if go_backwards:
        sequence = tf.reverse(sequence, [0])
        mask = None if mask is None else tf.reverse(mask, [0])
    num_steps = tf.shape(sequence)[0]
    # Keras computes one step at time 0 to learn the output's shape.
    zero_output, _ = step(sequence[0], list(initial_states))
    zero_output = tf.zeros_like(zero_output)

    def body(t, outputs, previous, *states):
        output, new_states = step(sequence[t], list(states))
        new_states = keras.tree.flatten(new_states)
        if mask is not None:
            valid = mask[t]
            kept = zero_output if zero_output_for_mask else previous
            output = tf.where(valid, output, kept)
            new_states = [
                tf.where(_like(valid, new), new, old)
                for new, old in zip(new_states, states)
            ]
        if return_all_outputs:
            outputs = tf.concat([outputs, tf.expand_dims(output, 0)], 0)
        else:
            outputs = tf.expand_dims(output, 0)
        return (t + 1, outputs, output, *new_states)

    states = keras.tree.flatten(initial_states)
    outputs = tf.zeros(
        tf.concat([[0], tf.shape(zero_output)], 0), zero_output.dtype
    )
    _, outputs, _, *states = tf.while_loop(
        lambda t, *_: t < num_steps,
        body,
        (0, outputs, zero_output, *states),
        shape_invariants=(
            tf.TensorShape([]),
            tf.TensorShape([None, *zero_output.shape]),
            zero_output.shape,
            *[s.shape for s in states],
        ),
    )
    last_output = outputs[-1]
    swap = [1, 0, *range(2, len(outputs.shape))]
    return last_output, tf.transpose(outputs, swap), states


def _like(mask, x):
    """`mask` `(batch, 1)` with as many axes as `x`."""
    for _ in range(len(x.shape) - len(mask.shape)):
        mask = tf.expand_dims(mask, -1)
    return mask


def _inner_loop(layer):
    """`layer.inner_loop` (see `keras.layers.RNN`) as `concatenating_rnn`:
    Keras's own step (the cell on one step's input and the states)."""
    takes_training = "training" in inspect.signature(layer.cell.call).parameters

    def inner_loop(sequences, initial_state, mask, training=False):
        if keras.tree.is_nested(mask):
            mask = mask[0]
        kwargs = {"training": training} if takes_training else {}

        def step(inputs, states):
            output, new_states = layer.cell(inputs, states, **kwargs)
            if not keras.tree.is_nested(new_states):
                new_states = [new_states]
            return output, new_states

        if not keras.tree.is_nested(initial_state):
            initial_state = [initial_state]
        return concatenating_rnn(
            step,
            sequences,
            initial_state,
            go_backwards=layer.go_backwards,
            mask=mask,
            zero_output_for_mask=layer.zero_output_for_mask,
            return_all_outputs=layer.return_sequences,
        )

    return inner_loop


def rnn_layers(layer):
    """Every `keras.layers.RNN` that `layer` is or holds (in a model, a
    `Bidirectional` or another wrapper)."""
    if isinstance(layer, keras.layers.RNN):
        yield layer
    children = list(getattr(layer, "layers", None) or [])
    for name in ("layer", "forward_layer", "backward_layer"):
        child = getattr(layer, name, None)
        if isinstance(child, keras.layers.Layer):
            children.append(child)
    for child in children:
        yield from rnn_layers(child)


@contextlib.contextmanager
def portable_rnns(model, fmt):
    """In this block, every RNN layer of `model` runs its steps in
    `concatenating_rnn` (see the module docstring)."""
    layers = list({id(x): x for x in rnn_layers(model)}.values())
    for layer in layers:
        if layer.stateful:
            raise KerasElmoError(
                f"{fmt} export: the RNN layer {layer.name!r} is stateful (it "
                "carries its state between calls in variables), which the "
                "exported file cannot; export a copy built with "
                "stateful=False."
            )
    try:
        for layer in layers:
            # On the instance, over the class's method, until the end of
            # the block.
            object.__setattr__(layer, "inner_loop", _inner_loop(layer))
        yield
    finally:
        for layer in layers:
            if "inner_loop" in vars(layer):
                object.__delattr__(layer, "inner_loop")
