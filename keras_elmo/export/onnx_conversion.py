"""A TensorFlow function as an ONNX graph (`convert`): tf2onnx on the
graph structure alone, with two steps of ours where the shipped tool
stops short.

- The weights stay out of the conversion: the function is frozen with
  each variable as a `Placeholder` (`_graph_without_weights`), tf2onnx
  converts the graph structure alone, and the weights go in as ONNX
  initializers afterwards (`onnx_graph.weights_as_initializers`).
  tf2onnx's `from_function` on the frozen weights peaked at 16.4 GB and
  172 s for the 357 MB original size; this path at 3.5 GB and about 30 s.
- `UniqueV2` (the distinct-token deduplication of `BiLM.encode_tokens`) has
  no tf2onnx converter; `_unique_v2` maps it to ONNX `Unique` (axis 0,
  order of first appearance, exactly TensorFlow's result).
- `BlockLSTMV2` (a plain LSTM traced as a fused kernel) has none either;
  `keras_elmo.export.onnx_lstm.block_lstm` writes it as ONNX `LSTM`.
"""

import contextlib
import logging
import os

from keras_elmo.export import onnx_graph
from keras_elmo.export.onnx_lstm import block_lstm
from keras_elmo.export.onnx_lstm import fold_lstm_weights

# tf2onnx's switch for running its optimizers on copies (see
# `_quiet_tf2onnx`).
CATCH_ERRORS = "TF2ONNX_CATCH_ERRORS"


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


def _graph_without_weights(function, input_names):
    """The concrete `function` as a GraphDef in which every variable is a
    `Placeholder`, with its input and output tensor names, the renames to
    `input_names` and the names of its dict of outputs (`character_ids`,
    `layer_k`, ...), and `{placeholder name: variable}`.

    Built as TensorFlow freezes a function (`convert_variables_to_
    constants_v2`: functions inlined, `While` loops kept, resource reads
    turned into value reads, the same internals as tf2onnx's own
    `large_model` path), except that each variable becomes a one-element
    stand-in constant, then a `Placeholder` of the variable's shape: no
    copy of the weights is serialised into the graph. Freezing the 357 MB
    original size with its weights peaked at 5.3 GB of the export's 16.4.
    """
    import numpy as np
    from tensorflow.python.framework import convert_to_constants as freeze

    stand_ins = {}

    class Converter(freeze._FunctionConverterDataInEager):
        def _eval(self, tensor):
            if not hasattr(tensor, "handle"):  # a captured constant
                return super()._eval(tensor)
            stand_in = np.zeros((1,), tensor.dtype.as_numpy_dtype)
            stand_ins[id(stand_in)] = tensor
            return stand_in

    data = Converter(
        func=function, lower_control_flow=False, aggressive_inlining=True
    )
    variables = {
        name: stand_ins[id(entry.numpy)]
        for name, entry in data.tensor_data.items()
        if id(entry.numpy) in stand_ins
    }
    graph_def, _ = freeze._replace_variables_by_constants(data)
    for node in graph_def.node:
        if node.name in variables:
            shape = variables[node.name].shape
            node.op = "Placeholder"
            del node.attr["value"]
            node.attr["shape"].shape.CopyFrom(shape.as_proto())
    inputs = [t.name for t in function.inputs if t.dtype.name != "resource"]
    renames = dict(zip(inputs, input_names))
    for name, tensor in function.structured_outputs.items():
        renames[tensor.name] = name
    outputs = [t.name for t in function.outputs]
    return graph_def, inputs, outputs, renames, variables


@contextlib.contextmanager
def _quiet_tf2onnx():
    """tf2onnx without its two costs that do nothing for us.

    - It calls TensorFlow's deprecated freezing functions, which log a
      deprecation notice each, and freezing a graph that read a lookup
      table (a word-input biLM's vocabulary) logs a warning about an
      empty `table_initializer` collection: nothing for the user to do.
    - It runs each graph optimizer on a deep copy of the graph, to carry
      on without it if it fails (`TF2ONNX_CATCH_ERRORS`, its documented
      switch); none does on our graphs, and the copies took 23 of the 50
      s of a tagger's conversion (the result is the same without them;
      an optimizer that failed would now fail the export, loudly).
    """
    tf_logger = logging.getLogger("tensorflow")
    level = tf_logger.level
    previous = os.environ.get(CATCH_ERRORS)
    tf_logger.setLevel(logging.ERROR)
    os.environ[CATCH_ERRORS] = "FALSE"
    try:
        yield
    finally:
        tf_logger.setLevel(level)
        if previous is None:
            os.environ.pop(CATCH_ERRORS, None)
        else:
            os.environ[CATCH_ERRORS] = previous


def convert(tf2onnx, function, input_names, opset):
    """tf2onnx on the graph of the concrete `function` with its weights as
    graph inputs, the weights then put in as initializers (see
    `onnx_graph`)."""
    with _quiet_tf2onnx():
        graph_def, inputs, outputs, renames, variables = _graph_without_weights(
            function, input_names
        )
        model, _ = tf2onnx.convert.from_graph_def(
            graph_def,
            input_names=inputs + [f"{name}:0" for name in variables],
            output_names=outputs,
            opset=int(opset),
            custom_op_handlers={
                "UniqueV2": (_unique_v2, []),
                "BlockLSTMV2": (block_lstm, []),
            },
            tensors_to_rename=renames,
        )
    del graph_def
    onnx_graph.weights_as_initializers(model, variables)
    fold_lstm_weights(model)
    return model
