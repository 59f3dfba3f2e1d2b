"""ONNX export of a biLM: character ids in, every layer out (float32 or int8).

The model is the function of `keras_elmo.export.portable` converted with
tf2onnx (opset 17), dynamic batch and time (named `batch` and `time`).
The steps that are ours, each where the shipped tools stop short:

- The conversion keeps the weights out of tf2onnx and maps `UniqueV2`
  to ONNX `Unique` (`onnx_conversion`).
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

import keras

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_flag
from elmo_core.errors import check_integer
from elmo_core.errors.backends import require_tensorflow
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
from keras_elmo.export import onnx_conversion
from keras_elmo.export import onnx_graph
from keras_elmo.export import portable
from keras_elmo.export.fused_lstm import fused_choice
from keras_elmo.export.fused_lstm import fused_lstms
from keras_elmo.export.onnx_graph import hoist_loop_invariants

DEFAULT_OPSET = 17
# The opsets the export is made for (its Unique and loops need 11 at
# least; tf2onnx 1.17 writes up to 18).
MINIMUM_OPSET = 13
MAXIMUM_OPSET = 18


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
    model = onnx_conversion.convert(tf2onnx, function, [INPUT_NAME], opset)
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
    model = onnx_conversion.convert(
        tf2onnx, concrete, function.input_names, opset
    )
    summary = function.summary
    del function
    gc.collect()

    def describe(precision, **options):
        return model_function.metadata(summary, ONNX, precision, **options)

    return model, describe, model_function.axis_names(summary)


def check_options(precision, deduplicate_tokens, per_channel, opset):
    """The options of an ONNX export as plain values, once checked: a
    precision it writes, `per_channel` for int8 alone, an opset it
    writes."""
    check_precision(precision, ONNX)
    per_channel = check_flag(per_channel, "per_channel")
    if per_channel and precision != "int8":
        raise KerasElmoError(
            "`per_channel` chooses the scales of int8 weights; with "
            f"`precision` {precision!r} there are none. Set `precision` "
            "to 'int8', or drop `per_channel`.",
            "per_channel",
        )
    return {
        "precision": precision,
        "deduplicate_tokens": check_flag(
            deduplicate_tokens, "deduplicate_tokens"
        ),
        "per_channel": per_channel,
        "opset": check_integer(
            opset, "opset", minimum=MINIMUM_OPSET, maximum=MAXIMUM_OPSET
        ),
    }


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
    """Writes `model`, a character-input `keras_elmo.layers.BiLM` or a
    `keras.Model` holding ELMo, as ONNX to `path`; returns `path`.

    The writer behind `keras_elmo.export.export_onnx`, which documents the
    file and the arguments and also takes a biLM source (`path` is its
    `output`).
    """
    require_tensorflow("The ONNX export", keras.backend.backend())
    options = check_options(precision, deduplicate_tokens, per_channel, opset)
    whole = model_function.is_whole_model(model, scalar_mix, ONNX.title)
    path = check_output_file(check_path(path, "path"))
    options["fused"] = fused_choice(model, fused_lstm, whole, ONNX.title)
    onnx, tf2onnx, quantization = _import_onnx()
    graph, describe, axes = _graph(tf2onnx, model, whole, scalar_mix, options)
    if precision == "int8":
        graph = _in_int8(
            onnx, quantization, graph, whole, options["per_channel"]
        )
    info = describe(
        precision,
        deduplicate_tokens=options["deduplicate_tokens"],
        per_channel=options["per_channel"] if precision == "int8" else None,
        # 7-bit weights (see _quantize).
        reduce_range=True if precision == "int8" else None,
        opset=int(options["opset"]),
        fused_lstm=options["fused"],
    )
    return _write(onnx, graph, axes, info, path)


def _graph(tf2onnx, model, whole, scalar_mix, options):
    """The ONNX graph of `model` (`whole`, or a biLM), its metadata as a
    function of the precision and the export's options, and the names of
    its dynamic axes; the loop invariants hoisted."""
    deduplicate_tokens, opset = options["deduplicate_tokens"], options["opset"]
    if whole:
        graph, describe, axes = _model_graph(
            tf2onnx, model, deduplicate_tokens, opset, options["fused"]
        )
    else:
        graph, describe, axes = _bilm_graph(
            tf2onnx, model, scalar_mix, deduplicate_tokens, opset,
            options["fused"],
        )  # fmt: skip
    # Also saves copying the weights through every iteration in float32.
    hoist_loop_invariants(graph.graph)
    return graph, describe, axes


def _in_int8(onnx, quantization, graph, whole, per_channel):
    """`graph` quantized (`_quantize`), a whole model's stored weights in
    int8 too (`_store_int8`)."""
    graph = _quantize(onnx, quantization, graph, per_channel)
    if whole:
        _store_int8(graph)
    onnx_graph.sort_topologically(graph.graph)
    return graph


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
