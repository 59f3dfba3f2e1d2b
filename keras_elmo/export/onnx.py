"""ONNX export of a biLM: character ids in, every layer out (float32 or int8).

The model is the function of `keras_elmo.export.portable` converted with
tf2onnx (opset 17), dynamic batch and time (named `batch` and `time`).
The steps that are ours, each where the shipped tools stop short:

- The weights stay out of the conversion: the function is frozen with
  each variable as a `Placeholder` (`_graph_without_weights`), tf2onnx
  converts the graph structure alone, and the weights go in as ONNX
  initializers afterwards (`onnx_graph.weights_as_initializers`).
  tf2onnx's `from_function` on the frozen weights peaked at 16.4 GB and
  172 s for the 357 MB original size; this path at 3.5 GB and about 30 s.
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
- Plain LSTMs (`fused_lstm`, `keras_elmo.export.fused_lstm`) are traced
  as TensorFlow's `BlockLSTMV2`, which tf2onnx does not convert;
  `onnx_lstm.block_lstm` writes each as ONNX `LSTM`, with its weights as
  initializers, which `quantize_dynamic` turns into `DynamicQuantizeLSTM`.
- A batch without rows or positions runs on one padding position inside
  the graph (ONNX Runtime's ReduceSum returns an empty input unreduced),
  so that plain onnxruntime answers `(1, 0, 50)` too.

int8 is dynamic quantization of the LSTM MatMul weights (input, recurrent
and projection products): signed 7-bit weights (-64..64, so that the
u8 x s8 kernels of CPUs without VNNI cannot saturate: see `_quantize`),
per-tensor by default or per-channel (`per_channel`); onnxruntime
quantizes the activations to uint8 per call. What stays float32, and why:
the char CNN's Conv (the feasibility check of this export found a
quantized Conv, and unsigned weights, slower on CPU), the highway layers
and the token projection (the token layer stays exact; see `_quantize`),
the character embedding (a gather: nothing to gain), and every
elementwise op: the gates, the cell state and its clip, the output clip
(cheap, and where rounding would accumulate over time steps).

float16 is not offered: the converted graph has mixed-type comparisons
that ONNX Runtime refuses to load.
"""

import contextlib
import gc
import logging
import os
import tempfile

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_flag
from elmo_core.errors import check_integer
from elmo_core.files import atomic_output
from elmo_core.files import check_output_file
from elmo_core.files.paths import check_path
from elmo_core.formats.exported_file import INPUT_NAME
from elmo_core.formats.exported_file import METADATA_KEY
from elmo_core.formats.exported_file import ONNX
from elmo_core.formats.exported_file import check_precision
from elmo_core.formats.exported_file import metadata_json
from elmo_core.version import __version__
from keras_elmo.export import model_function
from keras_elmo.export import onnx_graph
from keras_elmo.export import portable
from keras_elmo.export.fused_lstm import fused_choice
from keras_elmo.export.fused_lstm import fused_lstms
from keras_elmo.export.onnx_graph import hoist_loop_invariants
from keras_elmo.export.onnx_lstm import block_lstm
from keras_elmo.export.onnx_lstm import fold_lstm_weights
from keras_elmo.tensorflow_only import require_tensorflow

DEFAULT_OPSET = 17
# The opsets the export is made for (its Unique and loops need 11 at
# least; tf2onnx 1.17 writes up to 18).
MINIMUM_OPSET = 13
MAXIMUM_OPSET = 18
# tf2onnx's switch for running its optimizers on copies (see
# `_quiet_tf2onnx`).
CATCH_ERRORS = "TF2ONNX_CATCH_ERRORS"


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


def _convert(tf2onnx, function, input_names, opset):
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


def _quantize(onnx, quantization, model, per_channel):
    """Dynamic int8 quantization of the MatMul weights of `model`, which
    is emptied: the quantizer reads it from a file and writes another, so
    that the float32 model is not also held in memory meanwhile.

    Weights are 7-bit (`reduce_range`: symmetric, -64..64), whatever the
    CPU, so that the model is as accurate on every x86-64 CPU as on the
    one that exported it. ONNX Runtime multiplies the uint8 activations
    (0..255, from `DynamicQuantizeLinear`) by the int8 weights; on AVX2
    without VNNI (and AVX-512 without VNNI) its kernel multiplies adjacent
    pairs with `vpmaddubsw`, which adds two u8 * s8 products into a
    saturating int16. With 8-bit weights a pair reaches 2 * 255 * 127 =
    64770 and saturates at 32767 (on such CPUs the original-size export was
    22 % off); with |w| <= 64 a pair is at most 2 * 255 * 64 = 32640 <=
    32767, so no sum saturates and the result is exact integer arithmetic
    on every kernel (VNNI's `vpdpbusd` adds in int32 and never saturated).
    The cost: half the weight resolution (about twice the quantization
    error, docs/benchmarks.md). tests/test_export_onnx.py checks the
    bound on every exported weight tensor.

    The highway layers and the token projection stay float32: with 7-bit
    weights they put 1.7-2.1 % mean relative error on layer 0 of the
    original size (random weights), and every LSTM layer inherits it; in
    float32 layer 0 is exact and the LSTM layers stay near 1.4 %. They run
    once per distinct token of a batch, not once per time step and
    direction, so this costs about 5 % of int8 throughput.
    """
    keep_float = onnx_graph.token_encoder_matmuls(model.graph)
    with tempfile.TemporaryDirectory() as directory:
        source = os.path.join(directory, "float32.onnx")
        target = os.path.join(directory, "int8.onnx")
        onnx.save(model, source)
        model.Clear()
        # It logs advice to pre-process (shape inference for static
        # shapes), which does not apply to our dynamic shapes.
        logging.disable(logging.WARNING)
        try:
            quantization.quantize_dynamic(
                source,
                target,
                weight_type=quantization.QuantType.QInt8,
                op_types_to_quantize=["MatMul", "LSTM"],
                per_channel=per_channel,
                reduce_range=True,
                nodes_to_exclude=keep_float,
                extra_options={
                    "EnableSubgraph": True,
                    "MatMulConstBOnly": True,
                    "WeightSymmetric": True,
                },
            )
        finally:
            logging.disable(logging.NOTSET)
        return onnx.load(target)


def _store_int8(model):
    """A whole model's int8 file: also the weights the arithmetic keeps in
    float32, stored int8 (`onnx_graph.weights_in_int8`): the biLM's token
    encoder (highway layers and projection) and the large embedding
    tables (a tagger's word embeddings). A biLM's own file keeps them
    float32 (its token layer exact); in a tagger they would make the int8
    file more than a third of the float32 one (measured with the main
    job's biLM: 54 %). 8-bit weights, one scale per output column (per
    table), dequantized to float32 before the MatMul (after the lookup):
    no integer arithmetic, so no kernel can saturate, on any CPU; the
    error is the weights' rounding, not the activations' (dynamic uint8
    activations are what `_quantize` keeps the token layer away from).
    """
    matmuls = set(onnx_graph.token_encoder_matmuls(model.graph))
    onnx_graph.weights_in_int8(model, matmuls)


def _tracing(fused, model=None):
    """The block a graph is traced in: with fused LSTM kernels or not."""
    return fused_lstms(model) if fused else contextlib.nullcontext()


def _bilm_graph(tf2onnx, bilm, scalar_mix, deduplicate_tokens, opset, fused):
    """The ONNX graph of a biLM, and its metadata as a function of the
    precision and the export's options."""
    module = portable.CharacterIdModel(
        bilm,
        deduplicate_tokens,
        scalar_mix,
        ONNX.title,
        pad_empty_batches=True,
    )
    with _tracing(fused):
        function = module.embed.get_concrete_function()
    model = _convert(tf2onnx, function, [INPUT_NAME], opset)
    outputs = module.output_names()
    has_mix = module.scalar_mix is not None
    # The frozen copy of the biLM (its variables live in a reference
    # cycle with its traced function): 357 MB at original size.
    del module
    gc.collect()

    def describe(precision, **options):
        return portable.metadata(
            bilm,
            ONNX,
            precision,
            scalar_mix=has_mix,
            outputs=outputs,
            **options,
        )

    return model, describe, {}


def _model_graph(tf2onnx, keras_model, deduplicate_tokens, opset, fused):
    """The ONNX graph of a whole Keras model holding ELMo, its metadata
    as a function of the precision and the export's options, and the
    names of the dynamic axes of its inputs and outputs."""
    function = model_function.ModelFunction(
        keras_model, ONNX.title, deduplicate_tokens
    )
    with _tracing(fused, function.model):
        concrete = function.serve.get_concrete_function()
    model = _convert(tf2onnx, concrete, function.input_names, opset)
    summary = function.summary
    del function
    gc.collect()

    def describe(precision, **options):
        return model_function.metadata(summary, ONNX, precision, **options)

    return model, describe, model_function.axis_names(summary)


def _check_options(deduplicate_tokens, per_channel, opset):
    """`to_onnx`'s switches as plain values, and an opset it writes."""
    return (
        check_flag(deduplicate_tokens, "deduplicate_tokens"),
        check_flag(per_channel, "per_channel"),
        check_integer(
            opset, "opset", minimum=MINIMUM_OPSET, maximum=MAXIMUM_OPSET
        ),
    )


def to_onnx(
    model,
    path,
    precision="float32",
    scalar_mix=None,
    deduplicate_tokens=True,
    per_channel=False,
    opset=DEFAULT_OPSET,
    fused_lstm=None,
):
    """Writes a biLM, or a whole Keras model holding ELMo, as ONNX.

    A biLM: input `character_ids` int32 `(batch, time, 50)` (from
    `elmo_core.runtime.batch_to_ids`), dynamic batch and time; outputs
    `layer_0` ... `layer_L` float32 `(batch, time, 2 * projection_dim)`,
    `mask` bool `(batch, time)` and, with `scalar_mix`, `elmo`. Run it
    with `elmo_core.runtime.ONNXBiLM`.

    A whole model (a functional or Sequential `keras.Model` with
    `ELMoEmbedding` or `BiLM` layers, e.g. a tagger): the model's inputs
    and outputs by name, except that a string input read by ELMo takes
    the ids ELMo computes from the tokens (character ids, or a word-input
    biLM's word ids; see `elmo_core.formats.exported_model`). Run it
    with `elmo_core.runtime.ONNXModel`, which takes the tokens.

    The metadata property `keras_elmo` holds the options of the export as
    JSON.

    Args:
        model: a character-input `keras_elmo.layers.BiLM`, or a
            `keras.Model` holding ELMo.
        path: str. The `.onnx` file to write (atomically).
        precision: `"float32"` (matches TensorFlow to ~1e-6) or `"int8"`
            (MatMul weights 7-bit int8, dynamic quantization; as accurate
            on every x86-64 CPU; the biLM's token encoder stays float32).
            Defaults to `"float32"`.
        scalar_mix: None, a built `keras_elmo.layers.ScalarMix` or a list
            of `num_layers + 1` scalar weights: adds the output `elmo`
            (a biLM only: a model's ELMoEmbedding holds its own mixes).
            Defaults to `None`.
        deduplicate_tokens: bool. Encode each distinct token of a batch
            once (ONNX `Unique`). Defaults to `True`.
        per_channel: bool. int8 only: one scale per weight column instead
            of one per matrix. Defaults to `False`.
        opset: int. ONNX opset. Defaults to `17`.
        fused_lstm: bool or None. Each plain LSTM (an `lstm` student's, a
            model's Keras `LSTM`s) as an ONNX `LSTM` node, not a loop; None:
            when there is a biLM of plain LSTMs. Defaults to `None`.

    Returns:
        `path`.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "elmo-int8.onnx")
    >>> bilm = keras_elmo.load_bilm("tests/fixtures/bilm-tf/model")
    >>> _ = keras_elmo.export.to_onnx(bilm, path, precision="int8")
    >>> import onnxruntime  # any ONNX Runtime runs the file
    >>> session = onnxruntime.InferenceSession(path)
    >>> ids = elmo_core.runtime.batch_to_ids([["Hello", "world"]])
    >>> mask, = session.run(["mask"], {"character_ids": ids})
    >>> mask.tolist()
    [[True, True]]
    """
    require_tensorflow("The ONNX export")
    check_precision(precision, ONNX)
    whole = model_function.is_whole_model(model, scalar_mix, ONNX.title)
    path = check_output_file(check_path(path, "path"))
    deduplicate_tokens, per_channel, opset = _check_options(
        deduplicate_tokens, per_channel, opset
    )
    fused = fused_choice(model, fused_lstm, whole, ONNX.title)
    onnx, tf2onnx, quantization = _import_onnx()
    if whole:
        graph, describe, axes = _model_graph(
            tf2onnx, model, deduplicate_tokens, opset, fused
        )
    else:
        graph, describe, axes = _bilm_graph(
            tf2onnx, model, scalar_mix, deduplicate_tokens, opset, fused
        )
    # Also saves copying the weights through every iteration in float32.
    hoist_loop_invariants(graph.graph)
    if precision == "int8":
        graph = _quantize(onnx, quantization, graph, per_channel)
        if whole:
            _store_int8(graph)
        onnx_graph.sort_topologically(graph.graph)
    info = describe(
        precision,
        deduplicate_tokens=bool(deduplicate_tokens),
        per_channel=bool(per_channel) if precision == "int8" else None,
        # 7-bit weights (see _quantize).
        reduce_range=True if precision == "int8" else None,
        opset=int(opset),
        fused_lstm=fused,
    )
    return _write(onnx, graph, axes, info, path)


def _write(onnx, graph, axes, info, path):
    """Names the dynamic axes, stamps the metadata and the producer,
    and saves `graph` atomically to `path`."""
    onnx_graph.name_dimensions(graph, axes)
    del graph.metadata_props[:]
    onnx.helper.set_model_props(graph, {METADATA_KEY: metadata_json(info)})
    graph.producer_name = "keras-elmo"
    graph.producer_version = __version__
    with atomic_output(path) as temporary:
        onnx.save(graph, temporary)
    return path
