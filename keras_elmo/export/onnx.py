"""ONNX export of a biLM: character ids in, every layer out (float32 or int8).

The model is the function of `keras_elmo.export.portable` converted with
tf2onnx (opset 17), dynamic batch and time. Two steps are ours, each where
the shipped tools stop short:

- `UniqueV2` (the distinct-token deduplication of `BiLM.encode_tokens`) has
  no tf2onnx converter; `_unique_v2` maps it to ONNX `Unique` (axis 0,
  order of first appearance, exactly TensorFlow's result).
- int8 uses onnxruntime's `quantize_dynamic`, but it quantizes only MatMuls
  whose weights are initializers of the graph that holds the MatMul (or,
  with `EnableSubgraph`, of an enclosing graph). tf2onnx passes the LSTM
  weights into each `Loop` body as loop-carried values, so the quantizer
  silently leaves every recurrent and projection MatMul in float32.
  `hoist_loop_invariants` turns every value that a Loop body passes through
  unchanged into an outer-scope reference first; the quantizer then finds
  the weights.

int8 is dynamic quantization of the MatMul weights only, signed int8
(onnxruntime quantizes the activations to uint8 per call), per-tensor by
default or per-channel (`per_channel`). What stays float32, and why: the
char CNN's Conv (the feasibility check of this export found a quantized
Conv, and unsigned weights, slower on CPU), the character embedding (a
gather: nothing to gain), and every elementwise op: the gates, the cell
state and its clip, the output clip (cheap, and where rounding would
accumulate over time steps).

ONNX Runtime cannot reduce an empty time axis: the model needs at least
one token position (`keras_elmo.runtime.ONNXBiLM` answers empty batches
itself). float16 is not offered: the converted graph has mixed-type
comparisons that ONNX Runtime refuses to load.
"""

import logging
import os
import tempfile

from keras_elmo.backend import require_tensorflow
from keras_elmo.errors import KerasElmoError
from keras_elmo.export import portable
from keras_elmo.files import atomic_output
from keras_elmo.files import check_output_file

PRECISIONS = ("float32", "int8")
DEFAULT_OPSET = 17


def _import_onnx():
    try:
        import onnx
        import tf2onnx
        from onnxruntime import quantization
    except ImportError as error:
        raise KerasElmoError(
            f"ONNX export needs tf2onnx, onnx and onnxruntime ({error}); "
            'install them with: pip install "keras-elmo[onnx]"'
        ) from None
    return onnx, tf2onnx, quantization


def _unique_v2(ctx, node, name, args):
    """tf2onnx handler: TF `UniqueV2(x, axis)` as ONNX `Unique(axis)`."""
    from onnx import TensorProto

    axis = int(node.inputs[1].get_tensor_value(as_list=True)[0])
    values, index = node.output
    index_dtype = node.get_attr_value("out_idx")
    dtype = ctx.get_dtype(node.input[0])
    source = node.input[0]
    ctx.remove_node(node.name)
    # onnxruntime's Unique has no int32 kernel.
    source = ctx.make_node(
        "Cast", [source], attr={"to": TensorProto.INT64}
    ).output[0]
    unique = ctx.make_node(
        "Unique",
        [source],
        attr={"sorted": 0, "axis": axis},
        output_count=4,
        op_name_scope=name,
    )
    new_values = ctx.make_node(
        "Cast", [unique.output[0]], attr={"to": dtype}
    ).output[0]
    new_index = ctx.make_node(
        "Cast", [unique.output[2]], attr={"to": index_dtype}
    ).output[0]
    ctx.replace_all_inputs(values, new_values)
    ctx.replace_all_inputs(index, new_index)


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
    return removed


def _quantize(onnx, quantization, model, per_channel):
    # quantize_dynamic reads and writes files (its shape inference needs
    # them for models over 2 GB; ours are smaller, but the API is one).
    with tempfile.TemporaryDirectory() as directory:
        source = os.path.join(directory, "float32.onnx")
        target = os.path.join(directory, "int8.onnx")
        onnx.save(model, source)
        # It logs advice to pre-process (shape inference for static
        # shapes), which does not apply to our dynamic shapes.
        logging.disable(logging.WARNING)
        try:
            quantization.quantize_dynamic(
                source,
                target,
                weight_type=quantization.QuantType.QInt8,
                op_types_to_quantize=["MatMul"],
                per_channel=per_channel,
                extra_options={
                    "EnableSubgraph": True,
                    "MatMulConstBOnly": True,
                },
            )
        finally:
            logging.disable(logging.NOTSET)
        return onnx.load(target)


def to_onnx(
    bilm,
    path,
    precision="float32",
    scalar_mix=None,
    deduplicate_tokens=True,
    per_channel=False,
    opset=DEFAULT_OPSET,
):
    """Writes the biLM as an ONNX model over character ids.

    Input `character_ids` int32 `(batch, time, 50)` (from
    `keras_elmo.runtime.batch_to_ids`), dynamic batch and time; outputs
    `layer_0` ... `layer_L` float32 `(batch, time, 2 * projection_dim)`,
    `mask` bool `(batch, time)` and, with `scalar_mix`, `elmo`. The
    metadata property `keras_elmo` holds the options of the export as JSON.
    Run it with `keras_elmo.runtime.ONNXBiLM`.

    Args:
        bilm: a character-input `keras_elmo.layers.BiLM`.
        path: str. The `.onnx` file to write (atomically).
        precision: `"float32"` (matches TensorFlow to ~1e-6) or `"int8"`
            (MatMul weights int8, dynamic quantization). Defaults to
            `"float32"`.
        scalar_mix: None, a built `keras_elmo.layers.ScalarMix` or a list
            of `num_layers + 1` scalar weights: adds the output `elmo`.
            Defaults to `None`.
        deduplicate_tokens: bool. Encode each distinct token of a batch
            once (ONNX `Unique`). Defaults to `True`.
        per_channel: bool. int8 only: one scale per weight column instead
            of one per matrix. Defaults to `False`.
        opset: int. ONNX opset. Defaults to `17`.

    Returns:
        `path`.
    """
    require_tensorflow("The ONNX export")
    portable.check_precision(precision, PRECISIONS, "ONNX")
    portable.check_bilm(bilm, "ONNX")
    path = check_output_file(os.fspath(path))
    onnx, tf2onnx, quantization = _import_onnx()
    module = portable.CharacterIdModel(
        bilm, deduplicate_tokens, scalar_mix, fmt="ONNX"
    )
    model, _ = tf2onnx.convert.from_function(
        module.embed,
        input_signature=module.embed.input_signature,
        opset=int(opset),
        custom_op_handlers={"UniqueV2": (_unique_v2, [])},
    )
    # Also saves copying the weights through every iteration in float32.
    hoist_loop_invariants(model.graph)
    if precision == "int8":
        model = _quantize(onnx, quantization, model, per_channel)
    info = portable.metadata(
        bilm,
        "onnx",
        precision,
        deduplicate_tokens=bool(deduplicate_tokens),
        per_channel=bool(per_channel) if precision == "int8" else None,
        opset=int(opset),
        scalar_mix=module.scalar_mix is not None,
        outputs=module.output_names(),
    )
    del model.metadata_props[:]
    onnx.helper.set_model_props(
        model, {portable.METADATA_KEY: portable.metadata_json(info)}
    )
    model.producer_name = "keras-elmo"
    with atomic_output(path) as temporary:
        onnx.save(model, temporary)
    return path
