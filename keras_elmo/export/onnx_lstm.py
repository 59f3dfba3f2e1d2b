"""The fused LSTMs of an export (`keras_elmo.export.fused_lstm`) as ONNX
`LSTM` nodes.

The traced graph runs each fused LSTM as TensorFlow's `BlockLSTMV2`,
which tf2onnx does not convert; `block_lstm` (a tf2onnx handler, as
`onnx.py`'s for `UniqueV2`) writes it as one forward ONNX `LSTM`. The
graph is converted with its weights as graph inputs (`onnx.py`), so the
handler puts them in ONNX's layout with ONNX ops (transposed, gates from
Keras's (i, f, c, o) to ONNX's (i, o, f, c), the bias beside a zero
recurrent bias); `fold_lstm_weights` then computes those ops once, on the
initializers, so that each LSTM reads its weights as initializers: what
onnxruntime's `quantize_dynamic` needs to write `DynamicQuantizeLSTM`.
"""

import numpy as np

from elmo_core.errors import KerasElmoError
from keras_elmo.export.onnx_graph import names_read
from keras_elmo.export.onnx_graph import sort_topologically

# BlockLSTMV2's inputs and its output of the hidden states (the others,
# the gates and cell states of every step, are not read by the graph
# `fused_lstm` traces).
_X, _W, _B = 1, 4, 8
_H = 6
# ONNX's gate order (i, o, f, c) as indices of Keras's (i, f, c, o).
_ONNX_GATES = (0, 3, 1, 2)


def _gate_rows(units):
    """The row order that puts Keras's gates in ONNX's order."""
    return np.concatenate(
        [np.arange(g * units, (g + 1) * units) for g in _ONNX_GATES]
    ).astype(np.int64)


def block_lstm(ctx, node, name, args):
    """tf2onnx handler: `BlockLSTMV2(x (T, B, D), w (D + H, 4H), b)` from
    a zero state as ONNX `LSTM`, its hidden states `(T, B, H)` the node's
    output `h`."""
    from onnx import TensorProto
    from tf2onnx.graph_builder import GraphBuilder
    from tf2onnx.utils import make_name

    def const(what, value):
        return ctx.make_const(make_name(f"{name}/{what}"), value).output[0]

    for k, output in enumerate(node.output):
        if k != _H and ctx.find_output_consumers(output):
            raise KerasElmoError(
                f"ONNX export: {node.name} reads a BlockLSTMV2 output other "
                "than its hidden states, which ONNX's LSTM does not give."
            )
    x, w, b = node.input[_X], node.input[_W], node.input[_B]
    inputs = ctx.get_shape(x)[-1]
    units = ctx.get_shape(b)[-1] // 4
    builder = GraphBuilder(ctx)
    rows = const("gate_rows", _gate_rows(units))
    zero = const("zero", np.array([0], np.int64))

    def gates(value):  # `(4H, ...)` in ONNX's gate order, with a leading 1
        ordered = ctx.make_node("Gather", [value, rows], attr={"axis": 0})
        return builder.make_unsqueeze({"data": ordered.output[0], "axes": [0]})

    def columns(start, end):
        bounds = [
            const(k, np.array([v], np.int64))
            for k, v in (("start", start), ("end", end))
        ]
        part = ctx.make_node("Slice", [w, *bounds, zero])
        return ctx.make_node("Transpose", [part.output[0]]).output[0]

    kernel = gates(columns(0, inputs))
    recurrent = gates(columns(inputs, inputs + units))
    no_bias = const("recurrent_bias", np.zeros((1, 4 * units), np.float32))
    bias = ctx.make_node(
        "Concat", [gates(b), no_bias], attr={"axis": 1}
    ).output[0]
    lstm = ctx.make_node(
        "LSTM",
        [x, kernel, recurrent, bias],
        attr={"hidden_size": units, "direction": "forward"},
        output_count=1,
        op_name_scope=name,
        dtypes=[TensorProto.FLOAT],
    )
    hidden = builder.make_squeeze({"data": lstm.output[0], "axes": [1]})
    ctx.replace_all_inputs(node.output[_H], hidden)
    ctx.remove_node(node.name)


def _evaluate(name, producers, constants, opset):
    """The value of `name`, computed by the nodes that lead to it from
    `constants` (`{name: array}`) alone."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    nodes, pending, seen = {}, [name], set()
    while pending:
        value = pending.pop()
        if value in seen or value in constants or not value:
            continue
        seen.add(value)
        if value not in producers:
            raise KerasElmoError(
                f"ONNX export: an LSTM's weight {name!r} depends on "
                f"{value!r}, which is not a weight of the graph."
            )
        node = producers[value]
        nodes[id(node)] = node
        pending.extend(node.input)
    read = {n for node in nodes.values() for n in node.input}
    graph = onnx.helper.make_graph(
        list(nodes.values()),
        "fold",
        [],
        [onnx.helper.make_empty_tensor_value_info(name)],
        [
            onnx.numpy_helper.from_array(array, key)
            for key, array in constants.items()
            if key in read
        ],
    )
    sort_topologically(graph)
    return ReferenceEvaluator(graph, opsets={"": opset}).run(None, {})[0]


def fold_lstm_weights(model):
    """Turns the weights, recurrent weights and bias of every `LSTM` of
    the top graph into initializers holding their values, then drops the
    nodes and initializers nothing reads any more."""
    from onnx import numpy_helper

    graph = model.graph
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    producers = {out: node for node in graph.node for out in node.output}
    opset = next(
        o.version for o in model.opset_import if o.domain in ("", "ai.onnx")
    )
    for node in graph.node:
        if node.op_type != "LSTM":
            continue
        for name in node.input[1:4]:
            if name and name not in constants:
                value = np.ascontiguousarray(
                    _evaluate(name, producers, constants, opset), np.float32
                )
                constants[name] = value
                graph.initializer.append(numpy_helper.from_array(value, name))
    # The nodes that computed them give way to the initializers.
    kept = [n for n in graph.node if not set(n.output) & set(constants)]
    del graph.node[:]
    graph.node.extend(kept)
    _drop_unread(graph)


def _drop_unread(graph):
    """Removes the nodes whose outputs nothing reads (in turn), then the
    initializers nothing reads."""
    while True:
        read = {o.name for o in graph.output}
        for node in graph.node:
            read |= names_read(node)
        kept = [n for n in graph.node if any(o in read for o in n.output)]
        if len(kept) == len(graph.node):
            break
        del graph.node[:]
        graph.node.extend(kept)
    kept = [t for t in graph.initializer if t.name in read]
    del graph.initializer[:]
    graph.initializer.extend(kept)
