"""The export commands: `keras-elmo export-weights`, `export-savedmodel`,
`export-onnx` and `export-litert`, each `keras_elmo.export`'s function of
its name (`export_weights`, ...) with the flags, and a closing line."""

import argparse
import os

from elmo_core.errors import KerasElmoError
from keras_elmo_cli.arguments import QUIET_DONE
from keras_elmo_cli.arguments import add_bilm_source
from keras_elmo_cli.arguments import add_quiet
from keras_elmo_cli.arguments import add_scalar_mix
from keras_elmo_cli.arguments import library_arguments
from keras_elmo_cli.arguments import output_path
from keras_elmo_cli.arguments import positive_int
from keras_elmo_cli.arguments import source_arguments


def add_parser(commands):
    from elmo_core.formats.savedmodel_limits import DEFAULT_MAX_BATCH_TOKENS

    weights = commands.add_parser(
        "export-weights",
        help="write a trained run as official options.json + hdf5",
        description="Writes options.json (n_characters 262) and "
        "weights.hdf5 in the official bilm-tf / AllenNLP layout, the "
        "vocabulary, and softmax.hdf5 (for --init-from). "
        "keras_elmo.export.export_weights(...) from Python.",
    )
    weights.add_argument("--model", required=True, help="training run dir")
    weights.add_argument(
        "--output", type=output_path, required=True, help="directory to write"
    )
    add_quiet(weights, QUIET_DONE)
    weights.set_defaults(run=run_export_weights)

    serving = commands.add_parser(
        "export-savedmodel",
        help="write a SavedModel that embeds raw text (TF Hub outputs)",
        description="Writes a SavedModel with signatures 'default' "
        "(sentences: tf.string [batch], split on whitespace) and 'tokens' "
        "(tokens: tf.string [batch, max_len], sequence_len: int32 [batch]) "
        "returning word_emb, lstm_outputs1..L, elmo, default and "
        "sequence_len. It runs without keras_elmo installed. "
        "keras_elmo.export.export_savedmodel(...) from Python.",
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
    # --bilm-vocab gives the library's `vocabulary`.
    serving.set_defaults(
        run=run_export_savedmodel,
        argument_flags={"vocabulary": "--bilm-vocab"},
    )
    _add_deploy_parsers(commands)


def run_export_weights(args):
    """Runs `keras-elmo export-weights`: `export_weights` with the flags."""
    from keras_elmo.export import export_weights

    output = export_weights(**library_arguments(args, export_weights))
    _done(
        args,
        "wrote options.json, weights.hdf5, vocab.txt and softmax.hdf5 to "
        f"{output}",
    )


def run_export_savedmodel(args):
    """Runs `keras-elmo export-savedmodel`: `export_savedmodel` with the
    flags (`--bilm-vocab` its `vocabulary`)."""
    from elmo_core.ids.vocabulary import Vocabulary
    from keras_elmo.export import export_savedmodel

    arguments = {
        **library_arguments(args, export_savedmodel),
        **source_arguments(args),
        "vocabulary": args.bilm_vocab,
    }
    output = export_savedmodel(**arguments)
    cached = ""
    if args.cache_vocab:
        count = len(Vocabulary.from_file(args.cache_vocab).tokens)
        cached = f", {count:,} cached tokens"
    _done(args, f"wrote the SavedModel to {output}{cached}")


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
        "install 'keras-elmo[onnx]'. keras_elmo.export.export_onnx(...) "
        "from Python.",
    )
    _add_common(onnx, ONNX.precisions)
    onnx.add_argument(
        "--no-deduplicate",
        dest="deduplicate_tokens",
        action="store_false",
        help="encode every token, not each distinct token of a batch once",
    )
    onnx.add_argument(
        "--per-channel",
        action="store_true",
        help="ONNX int8 only: one scale per weight column instead of one "
        "a matrix",
    )
    onnx.set_defaults(run=run_export_onnx)

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
        "takes the tokens. Needs: pip install 'keras-elmo[litert]'. "
        "keras_elmo.export.export_litert(...) from Python.",
    )
    _add_common(litert, LITERT.precisions)
    litert.set_defaults(run=run_export_litert)


def _deploy_arguments(args, function):
    """The arguments of `export_onnx` or `export_litert` (`function`) that
    the flags give. `--bilm-vocab` gives none: it is refused here."""
    if args.bilm_vocab:
        raise KerasElmoError(
            f"--bilm-vocab does not apply to {args.command}: the export "
            "takes character ids (elmo_core.runtime.batch_to_ids builds "
            "them), not a vocabulary's word ids; a word-input biLM is "
            "exported in the .keras model that holds it, with its "
            "vocabulary. Drop the flag."
        )
    return {**library_arguments(args, function), **source_arguments(args)}


def _deployed(args, output):
    size = os.path.getsize(output) / 2**20
    _done(
        args,
        f"wrote the {args.precision} model to {output} ({size:.1f} MiB)",
    )


def run_export_onnx(args):
    """Runs `keras-elmo export-onnx`: `export_onnx` with the flags."""
    from keras_elmo.export import export_onnx

    _deployed(args, export_onnx(**_deploy_arguments(args, export_onnx)))


def run_export_litert(args):
    """Runs `keras-elmo export-litert`: `export_litert` with the flags."""
    from keras_elmo.export import export_litert

    _deployed(args, export_litert(**_deploy_arguments(args, export_litert)))


def _done(args, line):
    if not args.quiet:
        print(line)
