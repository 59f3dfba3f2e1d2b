"""`keras-elmo export-onnx` and `keras-elmo export-litert`, and the runtime
choice of `keras-elmo embed` (`--runtime`, `--precision`)."""

import os
import tempfile

from keras_elmo.cli.arguments import add_bilm_source
from keras_elmo.cli.arguments import bilm_source
from keras_elmo.errors import KerasElmoError

RUNTIMES = ("tensorflow", "onnx", "litert")
PRECISIONS = ("float32", "float16", "int8")
_SUFFIX = {"onnx": ".onnx", "litert": ".tflite"}


def _scalar_mix(text):
    """argparse type: comma-separated floats, e.g. `0,0,0`."""
    import argparse

    try:
        return [float(w) for w in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            "expected comma-separated numbers, one a biLM layer (e.g. "
            f"0,0,0 for equal weights); received {text!r}"
        ) from None


def _add_common(parser, precisions):
    add_bilm_source(parser)
    parser.add_argument("--output", required=True, help="file to write")
    parser.add_argument(
        "--precision",
        choices=precisions,
        default="float32",
        help="weights and arithmetic of the exported model (default "
        "%(default)s)",
    )
    parser.add_argument(
        "--scalar-mix",
        type=_scalar_mix,
        metavar="W0,W1,...",
        help="also output 'elmo', the scalar mix with these weights (one "
        "a layer, softmax-normalised; 0,0,0 averages the layers)",
    )


def add_parser(commands):
    from keras_elmo.export.litert import PRECISIONS as LITERT
    from keras_elmo.export.onnx import PRECISIONS as ONNX

    onnx = commands.add_parser(
        "export-onnx",
        help="write the biLM as an ONNX model (float32 or int8)",
        description="Writes an ONNX model over character ids (int32 "
        "[batch, time, 50], dynamic batch and time; keras_elmo.runtime."
        "batch_to_ids builds them) with outputs layer_0 ... layer_L "
        "[batch, time, 2 * projection_dim], mask [batch, time] and, with "
        "--scalar-mix, elmo. Run it with keras_elmo.runtime.ONNXBiLM or "
        "any ONNX Runtime. Needs: pip install 'keras-elmo[onnx]'.",
    )
    _add_common(onnx, ONNX)
    onnx.add_argument(
        "--no-deduplicate",
        action="store_true",
        help="encode every token, not each distinct token of a batch once",
    )
    onnx.add_argument(
        "--per-channel",
        action="store_true",
        help="int8: one scale per weight column instead of one a matrix",
    )
    onnx.set_defaults(run=run_export_onnx)

    litert = commands.add_parser(
        "export-litert",
        help="write the biLM as a LiteRT (.tflite) model",
        description="Writes a LiteRT (TensorFlow Lite) model, builtin ops "
        "only, over character ids (int32 [batch, time, 50], dynamic "
        "batch and time), signature serving_default, with outputs layer_0 "
        "... layer_L, mask and, with --scalar-mix, elmo. Run it with "
        "keras_elmo.runtime.LiteRTBiLM. Needs: pip install "
        "'keras-elmo[litert]'.",
    )
    _add_common(litert, LITERT)
    litert.set_defaults(run=run_export_litert)


def add_runtime_arguments(parser):
    """`--runtime` and `--precision`, for commands that run a biLM."""
    group = parser.add_argument_group("runtime")
    group.add_argument(
        "--runtime",
        choices=RUNTIMES,
        default="tensorflow",
        help="run the biLM in TensorFlow (default), or export it first and "
        "run it with ONNX Runtime or LiteRT",
    )
    group.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="float32",
        help="with --runtime onnx (float32, int8) or litert (all): the "
        "precision of the export (default %(default)s)",
    )


def runtime_bilm(bilm, runtime, precision):
    """`bilm` itself, or its export run by ONNX Runtime or LiteRT."""
    if runtime == "tensorflow":
        if precision != "float32":
            raise KerasElmoError(
                f"--precision {precision} needs --runtime onnx or litert; "
                "the TensorFlow runtime runs the biLM in float32."
            )
        return bilm
    from keras_elmo import export
    from keras_elmo import runtime as runtimes

    write = {"onnx": export.to_onnx, "litert": export.to_litert}[runtime]
    load = {"onnx": runtimes.ONNXBiLM, "litert": runtimes.LiteRTBiLM}
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, f"bilm{_SUFFIX[runtime]}")
        write(bilm, path, precision=precision)
        # Both runtimes hold the model once loaded; the file can go.
        return load[runtime](path)


def _export(args, write, **options):
    from keras_elmo.files import check_output_file

    source = bilm_source(args)
    check_output_file(
        args.output, inputs=[args.model, source.options, source.weights]
    )
    write(
        source.bilm(),
        args.output,
        precision=args.precision,
        scalar_mix=args.scalar_mix,
        **options,
    )
    size = os.path.getsize(args.output) / 2**20
    print(f"wrote the {args.precision} model to {args.output} ({size:.1f} MiB)")


def run_export_onnx(args):
    from keras_elmo.export.onnx import to_onnx

    _export(
        args,
        to_onnx,
        deduplicate_tokens=not args.no_deduplicate,
        per_channel=args.per_channel,
    )


def run_export_litert(args):
    from keras_elmo.export.litert import to_litert

    _export(args, to_litert)
