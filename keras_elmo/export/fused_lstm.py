"""The LSTMs of an export as the runtimes' fused LSTM kernels: LiteRT's
`UNIDIRECTIONAL_SEQUENCE_LSTM` and ONNX's `LSTM` (onnxruntime's
`DynamicQuantizeLSTM` in int8), one op a layer and direction instead of a
loop of a dozen small ops a token.

What is fused: a biLM's LSTMs when they are plain (no projection, no
clip: the `lstm` student kind, `elmo_core.settings.student_kinds`), and
Keras's own `LSTM` layers (also in `Bidirectional`) with its default
activations, returning sequences, no state in or out. ELMo's own cell
(projection, cell clip 3) has no such kernel and keeps its loop.

How: each fused recurrence is traced as `lstm_sequence`, a `tf.function`
carrying the tag by which the TFLite converter recognises a Keras LSTM
(`api_implements` "lstm_...", `time_major`, `go_backwards`: tensorflow's
`prepare_composite_functions_tf.cc`, which replaces its body by the fused
op when the batch and the weights have static shapes and only the
outputs are read; `lstm_utils.cc` writes the op with a cell clip of 10,
which `litert.py` sets back to none). Its body is TensorFlow's
`BlockLSTMV2` op (the same LSTM, one op), which the ONNX export writes as
ONNX `LSTM` (`onnx_lstm.py`). The weights it takes are those of the
layer, in Keras's gate order (i, f, c, o); ELMo's (i, j, f, o) with the
forget bias added at run time are put in that order in the graph, which
both converters fold into constants.

The kernels take no mask. Masks mark a prefix of each row (padding at
the end): a forward LSTM then reads the padding only after every real
token, and a backward one reads each row reversed within its length
(`tf.reverse_sequence`); outputs at padding are set to zero, as the loops
do. Every fused LSTM starts from a zero state, as a stateless biLM and a
Keras LSTM called without `initial_state` do.
"""

import contextlib
import uuid

import keras
import tensorflow as tf

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_flag
from keras_elmo.export.keras_rnns import portable_rnns
from keras_elmo.export.model_function import bilms_of
from keras_elmo.layers.backends.cell import forget_bias
from keras_elmo.layers.backends.tensorflow_recurrence import fused_recurrences


def _block_lstm(inputs, init_h, init_c, kernel, recurrent_kernel, bias):
    """The LSTM over time-major `inputs` `(T, B, D)` as TensorFlow's one
    op; arguments and results in the order and number of a Keras LSTM's
    tagged function (the converter reads them by position)."""
    units = recurrent_kernel.shape[0]
    no_peephole = tf.zeros((units,), inputs.dtype)
    # Gates (i, f, c, o), as Keras's; cell_clip 0 is no clip.
    result = tf.raw_ops.BlockLSTMV2(
        seq_len_max=tf.cast(tf.shape(inputs)[0], tf.int64),
        x=inputs,
        cs_prev=init_c,
        h_prev=init_h,
        w=tf.concat([kernel, recurrent_kernel], 0),
        wci=no_peephole,
        wcf=no_peephole,
        wco=no_peephole,
        b=bias,
        cell_clip=0.0,
        use_peephole=False,
    )
    outputs = result.h
    # Only the outputs are read (the converter's condition for fusing):
    # the final cell state, which ONNX's conversion would need the cell
    # states of every step for, is not computed.
    no_state = tf.zeros_like(init_c)
    runtime = tf.constant(0.0)  # a Keras LSTM's fifth result
    return outputs[-1], outputs, outputs[-1], no_state, runtime


def lstm_sequence(inputs, kernel, recurrent_kernel, bias):
    """A plain LSTM over time-major `inputs` `(T, B, D)` from a zero
    state, traced as one tagged function (see the module docstring).

    Args:
        inputs: float32 `(T, B, D)`; `B` static for LiteRT's fusion.
        kernel: `(D, 4H)`; recurrent_kernel: `(H, 4H)`; bias: `(4H,)`;
            gates in Keras's order (i, f, c, o).

    Returns:
        The outputs `(T, B, H)`.
    """
    units = recurrent_kernel.shape[0]
    batch = inputs.shape[1]
    if batch is None:
        batch = tf.shape(inputs)[1]
    zeros = tf.zeros(tf.stack([batch, units]), inputs.dtype)
    if inputs.shape[1] is not None:
        zeros = tf.zeros((inputs.shape[1], units), inputs.dtype)
    # A name of its own a call: the converter pairs functions by it.
    function = tf.function(
        _block_lstm,
        autograph=False,
        experimental_attributes={
            "api_implements": f"lstm_{uuid.uuid4()}",
            "api_preferred_device": "CPU",
            "time_major": True,
            "go_backwards": False,
        },
    )
    # Values, not variables: a function that reads variables is called
    # as a stateful op, which the converter inlines before fusing.
    weights = [
        tf.convert_to_tensor(w) for w in (kernel, recurrent_kernel, bias)
    ]
    return function(inputs, zeros, zeros, *weights)[1]


def _keras_gates(x):
    """ELMo's gate order (i, j, f, o) on the last axis as Keras's
    (i, f, c, o), j being the candidate."""
    i, j, f, o = tf.split(x, 4, axis=-1)
    return tf.concat([i, f, j, o], axis=-1)


def _plain_cell(inputs, time_mask, cell):
    """A biLM's plain LSTM (`fused_recurrences`): time-major `inputs`
    (a backward layer's already reversed within each row), its outputs
    zero at masked steps."""
    bias = cell.bias + forget_bias(cell.units, cell.bias.dtype)
    outputs = lstm_sequence(
        inputs,
        _keras_gates(cell.kernel),
        _keras_gates(cell.recurrent_kernel),
        _keras_gates(bias),
    )
    return outputs * tf.cast(time_mask, outputs.dtype)


def fusable(layer):
    """Whether `layer` is a Keras `LSTM` the fused kernels compute exactly
    (the standard activations and bias; the whole sequence out; no state
    in variables)."""
    if not isinstance(layer, keras.layers.LSTM):
        return False
    cell = layer.cell
    return (
        cell.activation is keras.activations.tanh
        and cell.recurrent_activation is keras.activations.sigmoid
        and cell.use_bias
        and layer.return_sequences
        and not layer.return_state
        and not layer.stateful
        and not layer.unroll
    )


def _fused_inner_loop(layer):
    """`layer.inner_loop` (see `keras.layers.RNN`) as one fused LSTM:
    Keras's results for a mask that marks a prefix of each row, from a
    zero state (its `initial_state` is not read)."""
    cell = layer.cell

    def inner_loop(sequences, initial_state, mask, training=False):
        if keras.tree.is_nested(mask):
            mask = mask[0]
        x = tf.transpose(sequences, [1, 0, 2])
        steps, batch = tf.shape(x)[0], tf.shape(x)[1]
        if mask is None:
            lengths = tf.fill([batch], steps)
        else:
            lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
        if layer.go_backwards:
            x = tf.reverse_sequence(x, lengths, seq_axis=0, batch_axis=1)
        y = lstm_sequence(x, cell.kernel, cell.recurrent_kernel, cell.bias)
        valid = tf.transpose(tf.sequence_mask(lengths, steps, y.dtype))
        y = y * tf.expand_dims(valid, -1)
        if layer.go_backwards:
            # Back in place, then in Keras's order: the last step first.
            y = tf.reverse_sequence(y, lengths, seq_axis=0, batch_axis=1)
            y = tf.reverse(y, [0])
        outputs = tf.transpose(y, [1, 0, 2])
        # The states are not read (no return_state, not stateful).
        return outputs[:, -1], outputs, initial_state

    return inner_loop


def _called_without_state(layer):
    """Whether `layer`, called once in its model, took one tensor besides
    its mask (so no `initial_state`)."""
    try:
        inputs = keras.tree.flatten(layer.input)
    except (AttributeError, ValueError):  # not called once in a model
        return False
    return len([x for x in inputs if x.dtype != "bool"]) == 1


def keras_lstms(model):
    """The Keras LSTM layers of `model` that run fused: `fusable` ones
    that are the model's layers, or the halves of its `Bidirectional`
    layers, called without a state."""
    found = []
    for layer in getattr(model, "layers", []):
        halves = [layer]
        if isinstance(layer, keras.layers.Bidirectional):
            halves = [layer.forward_layer, layer.backward_layer]
        if all(fusable(half) for half in halves):
            if _called_without_state(layer):
                found.extend(halves)
    return found


def has_plain_lstms(bilm):
    """Whether the LSTMs of the `BiLM` `bilm` are plain (no projection,
    no clips): the `lstm` student kind."""
    return (
        bilm.cell_clip is None
        and bilm.proj_clip is None
        and bilm.units == bilm.projection_dim
    )


def fused_choice(model, fused_lstm, whole, fmt):
    """Whether an export of `model` (a biLM, or a whole Keras model when
    `whole`) runs fused kernels: `fused_lstm` if given, else (None) when
    it is or holds a biLM of plain LSTMs. True for a model with no LSTM
    they compute is refused."""
    bilms = list(bilms_of(model)) if whole else [model]
    plain = any(has_plain_lstms(bilm) for bilm in bilms)
    if fused_lstm is None:
        return plain
    fused_lstm = check_flag(fused_lstm, "fused_lstm")
    if fused_lstm and not plain and not (whole and keras_lstms(model)):
        raise KerasElmoError(
            f"{fmt} export: `fused_lstm` runs LSTMs as the runtime's fused "
            "kernel, and this model has none it computes: its biLM's LSTMs "
            "have ELMo's projection and clips (distil a student with "
            "student_kind='lstm' for plain ones), and it has no Keras "
            "LSTM layer with the default activations returning sequences. "
            "Leave `fused_lstm` out.",
            "fused_lstm",
            received=fused_lstm,
        )
    return fused_lstm


@contextlib.contextmanager
def fused_lstms(model=None, portable_loops=None):
    """In this block, a biLM's plain LSTMs and the `keras_lstms` of
    `model` (a Keras model, or None) trace as fused kernels;
    `portable_loops` (a format's title, or None) runs every other RNN
    layer of `model` in `keras_rnns.portable_rnns`, as LiteRT needs."""
    layers = keras_lstms(model) if model is not None else []
    with contextlib.ExitStack() as stack:
        stack.enter_context(fused_recurrences(_plain_cell))
        if portable_loops is not None:
            stack.enter_context(portable_rnns(model, portable_loops))
        for layer in layers:
            # On the instance (after portable_rnns'), until the end.
            object.__setattr__(layer, "inner_loop", _fused_inner_loop(layer))
        try:
            yield
        finally:
            for layer in layers:
                if "inner_loop" in vars(layer):
                    object.__delattr__(layer, "inner_loop")
