"""The export commands: `keras-elmo export-weights`, `export-savedmodel`,
`export-onnx` and `export-litert`."""

import argparse
import os

from elmo_core.errors import KerasElmoError
from keras_elmo_cli.arguments import QUIET_DONE
from keras_elmo_cli.arguments import add_bilm_source
from keras_elmo_cli.arguments import add_quiet
from keras_elmo_cli.arguments import add_scalar_mix
from keras_elmo_cli.arguments import bilm_source
from keras_elmo_cli.arguments import bilm_vocabulary
from keras_elmo_cli.arguments import output_path
from keras_elmo_cli.arguments import positive_int

# The library's name of what --output gives.
_ARGUMENT_FLAGS = {"path": "--output"}


def add_parser(commands):
    from elmo_core.formats.savedmodel_limits import DEFAULT_MAX_BATCH_TOKENS

    weights = commands.add_parser(
        "export-weights",
        help="write a trained run as official options.json + hdf5",
        description="Writes options.json (n_characters 262) and "
        "weights.hdf5 in the official bilm-tf / AllenNLP layout, the "
        "vocabulary, and softmax.hdf5 (for --init-from).",
    )
    weights.add_argument("--model", required=True, help="training run dir")
    weights.add_argument(
        "--output", type=output_path, required=True, help="directory to write"
    )
    add_quiet(weights, QUIET_DONE)
    weights.set_defaults(
        run=run_export_weights,
        argument_flags={"model_dir": "--model", "output_dir": "--output"},
    )

    serving = commands.add_parser(
        "export-savedmodel",
        help="write a SavedModel that embeds raw text (TF Hub outputs)",
        description="Writes a SavedModel with signatures 'default' "
        "(sentences: tf.string [batch], split on whitespace) and 'tokens' "
        "(tokens: tf.string [batch, max_len], sequence_len: int32 [batch]) "
        "returning word_emb, lstm_outputs1..L, elmo, default and "
        "sequence_len. It runs without keras_elmo installed.",
    )
    add_bilm_source(serving)
    serving.add_argument(
        "--output",
        type=output_path,
        required=True,
        help="directory to write (new or empty)",
    )
    serving.add_argument(
        "--cache-vocab",
        help="precompute the embeddings of these tokens (one a line); they "
        "then skip the char CNN, other tokens use characters, and a "
        "'token_ids' signature takes rows of this vocabulary",
    )
    serving.add_argument(
        "--max-batch-tokens",
        type=positive_int,
        default=DEFAULT_MAX_BATCH_TOKENS,
        help="refuse requests larger than this many token positions, "
        "batch x max_len (default %(default)s)",
    )
    add_quiet(serving, QUIET_DONE)
    serving.set_defaults(
        run=run_export_savedmodel, argument_flags=_ARGUMENT_FLAGS
    )
    _add_deploy_parsers(commands)


def run_export_weights(args):
    from elmo_core.files import check_output_directory
    from keras_elmo.sources.run_folder import RunFolder
    from keras_elmo.training.run_directory import export_weights

    # What the run is read from; the export may go beside it (RUN/export).
    run_inputs = RunFolder(args.model).inputs()
    check_output_directory(args.output, run_inputs, "output")
    export_weights(args.model, args.output)
    _done(
        args,
        "wrote options.json, weights.hdf5, vocab.txt and softmax.hdf5 to "
        f"{args.output}",
    )


def run_export_savedmodel(args):
    from elmo_core.errors import KerasElmoError
    from elmo_core.files import check_output_directory
    from elmo_core.ids.vocabulary import Vocabulary
    from keras_elmo.export.savedmodel import export_savedmodel

    inputs = [args.bilm_vocab, args.cache_vocab]
    check_output_directory(
        args.output, [*inputs, args.options, args.weights], "output"
    )
    source = bilm_source(args)
    inputs += source.inputs()
    check_output_directory(args.output, inputs, "output")
    # A word-input biLM carries its own vocabulary; others may cache one.
    vocabulary = bilm_vocabulary(args, source)
    if vocabulary is not None and args.cache_vocab:
        raise KerasElmoError(
            "--cache-vocab is for biLMs that read characters; a word-input "
            "biLM serves its own vocabulary (its table is the cache)."
        )
    if args.cache_vocab:
        vocabulary = Vocabulary.from_file(args.cache_vocab).tokens
    export_savedmodel(
        source.read().bilm,
        args.output,
        vocabulary=vocabulary,
        max_batch_tokens=args.max_batch_tokens,
    )
    cached = f", {len(vocabulary):,} cached tokens" if args.cache_vocab else ""
    _done(args, f"wrote the SavedModel to {args.output}{cached}")


def _add_common(parser, precisions):
    add_bilm_source(parser)
    parser.add_argument(
        "--output", type=output_path, required=True, help="file to write"
    )
    parser.add_argument(
        "--precision",
        choices=precisions,
        default="float32",
        help="weights and arithmetic of the exported model (default "
        "%(default)s)",
    )
    add_scalar_mix(
        parser, "also output 'elmo', the softmax-normalised mix of the layers"
    )
    parser.add_argument(
        "--fused-lstm",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write each plain LSTM (a biLM distilled with --student-kind "
        "lstm; the Keras LSTM layers of a .keras model) as the runtime's "
        "fused LSTM kernel instead of a loop; default: when the biLM's "
        "LSTMs are plain. A LiteRT file with fused LSTMs takes one "
        "sentence a call (elmo_core.runtime feeds a batch row by row)",
    )
    add_quiet(parser, QUIET_DONE)


def _add_deploy_parsers(commands):
    from elmo_core.formats.exported_file import LITERT
    from elmo_core.formats.exported_file import ONNX

    onnx = commands.add_parser(
        "export-onnx",
        help="write the biLM, or a whole .keras model holding ELMo, as "
        "ONNX (float32 or int8)",
        description="Writes an ONNX model over character ids (int32 "
        "[batch, time, 50], dynamic batch and time; elmo_core.runtime."
        "batch_to_ids builds them) with outputs layer_0 ... layer_L "
        "[batch, time, 2 * projection_dim], mask [batch, time] and, with "
        "--scalar-mix, elmo. Run it with elmo_core.runtime.ONNXBiLM or "
        "any ONNX Runtime. With --model FILE.keras, writes the whole "
        "model the file holds (e.g. a tagger around ELMoEmbedding): its "
        "inputs and outputs, ids where it took string tokens; run it with "
        "elmo_core.runtime.ONNXModel, which takes the tokens. Needs: pip "
        "install 'keras-elmo[onnx]'.",
    )
    _add_common(onnx, ONNX.precisions)
    onnx.add_argument(
        "--no-deduplicate",
        action="store_true",
        help="encode every token, not each distinct token of a batch once",
    )
    onnx.add_argument(
        "--per-channel",
        action="store_true",
        help="ONNX int8 only: one scale per weight column instead of one "
        "a matrix",
    )
    onnx.set_defaults(run=run_export_onnx, argument_flags=_ARGUMENT_FLAGS)

    litert = commands.add_parser(
        "export-litert",
        help="write the biLM, or a whole .keras model holding ELMo, as "
        "LiteRT (.tflite)",
        description="Writes a LiteRT (TensorFlow Lite) model, builtin ops "
        "only, over character ids (int32 [batch, time, 50], dynamic "
        "batch and time), signature serving_default, with outputs layer_0 "
        "... layer_L, mask and, with --scalar-mix, elmo. Run it with "
        "elmo_core.runtime.LiteRTBiLM. With --model FILE.keras, writes "
        "the whole model the file holds (e.g. a tagger around "
        "ELMoEmbedding); run it with elmo_core.runtime.LiteRTModel, which "
        "takes the tokens. Needs: pip install 'keras-elmo[litert]'.",
    )
    _add_common(litert, LITERT.precisions)
    litert.set_defaults(run=run_export_litert, argument_flags=_ARGUMENT_FLAGS)


def _export(args, write, **options):
    """The biLM the arguments name, or the whole model of a `.keras` file
    (`--model tagger.keras`), written by `write` (`to_onnx`,
    `to_litert`)."""
    from elmo_core.files import check_output_file

    if args.bilm_vocab:
        raise KerasElmoError(
            f"--bilm-vocab does not apply to {args.command}: the export "
            "takes character ids (elmo_core.runtime.batch_to_ids builds "
            "them), not a vocabulary's word ids; a word-input biLM is "
            "exported in the .keras model that holds it, with its "
            "vocabulary. Drop the flag."
        )
    check_output_file(args.output, [args.options, args.weights], "output")
    source = bilm_source(args)
    check_output_file(args.output, source.inputs(), "output")
    whole = source.kind == "keras"
    write(
        source.load_model() if whole else source.read().bilm,
        args.output,
        precision=args.precision,
        scalar_mix=args.scalar_mix,
        fused_lstm=args.fused_lstm,
        **options,
    )
    size = os.path.getsize(args.output) / 2**20
    _done(
        args,
        f"wrote the {args.precision} model to {args.output} ({size:.1f} MiB)",
    )


def run_export_onnx(args):
    from keras_elmo.export.onnx import to_onnx

    if args.per_channel and args.precision != "int8":
        raise KerasElmoError(
            "--per-channel chooses the scales of int8 weights; with "
            f"--precision {args.precision} there are none. Add --precision "
            "int8, or drop --per-channel."
        )
    _export(
        args,
        to_onnx,
        deduplicate_tokens=not args.no_deduplicate,
        per_channel=args.per_channel,
    )


def run_export_litert(args):
    from keras_elmo.export.litert import to_litert

    _export(args, to_litert)


def _done(args, line):
    if not args.quiet:
        print(line)
