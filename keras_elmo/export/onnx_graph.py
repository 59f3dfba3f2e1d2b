"""Graph passes of the ONNX export (`keras_elmo.export.onnx`), each on
protobufs only (no TensorFlow session, no ONNX Runtime):

- `weights_as_initializers`: tf2onnx converts the graph with every
  weight as a graph input (`keras_elmo.export.onnx`), and the weights go
  in as initializers afterwards. Converting the frozen graph with its
  weights as constants made tf2onnx (grappler, its constant folding and
  its own graph copies) peak at 16.4 GB resident for the 357 MB original
  size; without them the conversion holds only the graph structure.
- `hoist_loop_invariants`: what the quantizer needs to see the LSTM
  weights inside `Loop` bodies; `sort_topologically` puts each loop
  after the values its body reads from outside (the quantizer reorders
  nodes without looking inside bodies).
- `name_dimensions`: `batch` / `time` for the dynamic axes of the inputs
  and outputs instead of tf2onnx's `unk__NNNN`.
"""

import re

import numpy as np


def weights_as_initializers(model, weights):
    """Turns the graph inputs named in `weights` (`name:0` or `name`)
    into initializers holding their values (arrays or variables, read one
    at a time); empties `weights`."""
    from onnx import numpy_helper

    by_input = {}
    for name in list(weights):
        by_input[f"{name}:0"] = name
        by_input[name] = name
    kept = []
    for value in model.graph.input:
        name = by_input.get(value.name)
        if name is None:
            kept.append(value)
            continue
        array = np.ascontiguousarray(weights.pop(name), np.float32)
        model.graph.initializer.append(
            numpy_helper.from_array(array, value.name)
        )
        del array
    del model.graph.input[:]
    model.graph.input.extend(kept)
    if weights:
        raise AssertionError(f"weights lost in conversion: {list(weights)}")


def _subgraphs(node):
    for attribute in node.attribute:
        if attribute.g.ByteSize():
            yield attribute.g
        yield from attribute.graphs


def _rename_uses(graph, old, new):
    """Points every node input `old` in `graph` (nested graphs included)
    to `new`; graph outputs are left alone."""
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new
        for subgraph in _subgraphs(node):
            _rename_uses(subgraph, old, new)


def hoist_loop_invariants(graph):
    """Turns pass-through loop-carried values into outer-scope references.

    A value that a `Loop` body returns unchanged (body output k + 1 is body
    input k + 2) is the same in every iteration: the body can read the
    outer value directly, and the loop no longer carries it. Graph outputs
    are never rewritten. Works on nested graphs, in place.

    Returns:
        The number of loop-carried values removed.
    """
    removed = 0
    for node in graph.node:
        for subgraph in _subgraphs(node):
            removed += hoist_loop_invariants(subgraph)
    graph_outputs = {output.name for output in graph.output}
    for node in graph.node:
        if node.op_type != "Loop":
            continue
        body = next(a.g for a in node.attribute if a.name == "body")
        invariant = [
            k
            for k in range(len(node.input) - 2)
            if node.input[k + 2]
            and body.input[k + 2].name == body.output[k + 1].name
            and node.output[k] not in graph_outputs
        ]
        for k in invariant:
            _rename_uses(body, body.input[k + 2].name, node.input[k + 2])
            _rename_uses(graph, node.output[k], node.input[k + 2])
        for k in reversed(invariant):
            del body.input[k + 2]
            del body.output[k + 1]
            del node.input[k + 2]
            del node.output[k]
        removed += len(invariant)
    if removed:
        # A loop now reads values computed in this graph (not only
        # weights) without naming them as inputs: it must come after
        # their nodes.
        sort_topologically(graph)
    return removed


def names_read(node):
    """Every value `node` reads: its inputs and, in its subgraphs, the
    inputs of their nodes (outer-scope references among them)."""
    names = set(node.input)
    for subgraph in _subgraphs(node):
        for inner in subgraph.node:
            names |= names_read(inner)
    return names


def sort_topologically(graph):
    """Reorders `graph.node` so that every node comes after the nodes
    whose values it reads (subgraph references included), otherwise
    keeping their order."""
    nodes = list(graph.node)
    producer = {name: i for i, node in enumerate(nodes) for name in node.output}
    needs = [
        {producer[n] for n in names_read(node) if n in producer} - {i}
        for i, node in enumerate(nodes)
    ]
    done, order = set(), []
    while len(order) < len(nodes):
        ready = next(
            i for i in range(len(nodes)) if i not in done and needs[i] <= done
        )
        done.add(ready)
        order.append(ready)
    del graph.node[:]
    graph.node.extend(nodes[i] for i in order)


def _set_dims(value, names):
    dims = value.type.tensor_type.shape.dim
    for dim, name in zip(dims, names):
        if name is not None:
            dim.ClearField("dim_value")
            dim.dim_param = name


def _clear_unknown_names(graph):
    """Drops tf2onnx's `unk__NNNN` names left on inner values (they stay
    dynamic, unnamed)."""
    for value in [*graph.value_info, *graph.input, *graph.output]:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param.startswith("unk__"):
                dim.ClearField("dim_param")
    for node in graph.node:
        for subgraph in _subgraphs(node):
            _clear_unknown_names(subgraph)


def name_dimensions(model, axes=None):
    """Names on the dynamic axes of every graph input and output: those
    of `axes` (`{value name: (name or None, ...)}`, None leaving an axis
    as it is), `batch` and `time` for the others; no `unk__` names
    anywhere."""
    axes = axes or {}
    for value in [*model.graph.input, *model.graph.output]:
        _set_dims(value, axes.get(value.name, ("batch", "time")))
    _clear_unknown_names(model.graph)


# The Keras layers of the token encoder after the char CNN (layer names of
# keras_elmo.layers.token_encoders.character_encoder, as tf2onnx scopes
# them: "bi_lm_1/highway_0_1/MatMul").
_TOKEN_ENCODER_SCOPE = re.compile(
    r"(^|/)(highway_\d+|token_projection)(_\d+)?/"
)


def token_encoder_matmuls(graph):
    """The names of the top-level MatMuls of the highway layers and the
    token projection (the int8 export keeps them float32)."""
    return [
        node.name
        for node in graph.node
        if node.op_type == "MatMul" and _TOKEN_ENCODER_SCOPE.search(node.name)
    ]


# A whole model's int8 file stores embedding tables at least this large
# as int8 (a task's word embeddings, a word-input biLM's table); smaller
# ones (the character embedding, 262 x 16) stay float32.
MIN_INT8_TABLE = 1 << 16


def _int8(weights, axis):
    """Symmetric 8-bit `(values, scales)` of `weights`, one scale per
    index of `axis` (None: one for the whole tensor)."""
    keep = tuple(i for i in range(weights.ndim) if i != axis)
    largest = np.abs(weights).max(axis=keep if axis is not None else None)
    scales = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
    shape = [1] * weights.ndim
    if axis is not None:
        shape[axis] = -1
    values = np.rint(weights / scales.reshape(shape)).clip(-127, 127)
    return values.astype(np.int8), scales


def _dequantize(name, source, scales, axis, output):
    """The initializers `name_scale`, `name_zero` and the
    `DequantizeLinear` node that turns int8 `source` into `output`."""
    from onnx import helper
    from onnx import numpy_helper

    zero = np.zeros(scales.shape, np.int8)
    tensors = [
        numpy_helper.from_array(scales, f"{name}_scale"),
        numpy_helper.from_array(zero, f"{name}_zero"),
    ]
    attributes = {} if axis is None else {"axis": axis}
    node = helper.make_node(
        "DequantizeLinear",
        [source, *(t.name for t in tensors)],
        [output],
        name=f"{name}_dequantize",
        **attributes,
    )
    return tensors, node


def _uses(graph, counts):
    for node in graph.node:
        for name in node.input:
            counts[name] = counts.get(name, 0) + 1
        for subgraph in _subgraphs(node):
            _uses(subgraph, counts)
    return counts


def weights_in_int8(model, matmuls):
    """Stores weights int8 that the arithmetic still uses in float32: the
    kernels of the top-level MatMuls named in `matmuls` (one scale per
    output column, dequantized before the MatMul) and the embedding
    tables of at least `MIN_INT8_TABLE` values (one scale per table, the
    looked-up rows dequantized after the Gather). Each weight must be an
    initializer read by that node alone; others are left as they are.
    In place.

    Returns:
        The names of the weights stored int8.
    """
    from onnx import numpy_helper

    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    uses = _uses(graph, {})
    nodes = []
    stored = []
    for node in graph.node:
        weight = _int8_weight(node, matmuls, initializers, uses)
        if weight is None:
            nodes.append(node)
            continue
        array = numpy_helper.to_array(initializers[weight])
        graph.initializer.remove(initializers.pop(weight))
        stored.append(weight)
        if node.op_type == "MatMul":
            # The kernel, dequantized under its own name before the MatMul.
            axis = array.ndim - 1
            values, scales = _int8(array, axis)
            source, output = f"{weight}_int8", weight
            after = False
        else:
            # The looked-up rows, dequantized under the Gather's output.
            axis = None
            values, scales = _int8(array, axis)
            scales = scales.reshape(())
            source, output = f"{node.output[0]}_int8", node.output[0]
            node.input[0] = f"{weight}_int8"
            node.output[0] = source
            after = True
        tensors, dequantize = _dequantize(weight, source, scales, axis, output)
        graph.initializer.append(
            numpy_helper.from_array(values, f"{weight}_int8")
        )
        graph.initializer.extend(tensors)
        nodes += [node, dequantize] if after else [dequantize, node]
    del graph.node[:]
    graph.node.extend(nodes)
    return stored


def _int8_weight(node, matmuls, initializers, uses):
    """The float32 initializer `node` reads that `weights_in_int8` stores
    int8, or None."""
    if node.op_type == "MatMul" and node.name in matmuls:
        weight = node.input[1]
    elif node.op_type == "Gather":
        weight = node.input[0]
    else:
        return None
    tensor = initializers.get(weight)
    if tensor is None or uses.get(weight) != 1 or tensor.data_type != 1:
        return None
    if node.op_type == "Gather" and np.prod(tensor.dims) < MIN_INT8_TABLE:
        return None
    return weight
