"""`keras-elmo export-weights` and `keras-elmo export-savedmodel`."""

from keras_elmo.cli.arguments import add_bilm_source
from keras_elmo.cli.arguments import bilm_source
from keras_elmo.cli.arguments import bilm_vocabulary
from keras_elmo.cli.arguments import positive_int


def add_parser(commands):
    from keras_elmo.export.savedmodel import DEFAULT_MAX_BATCH_TOKENS

    weights = commands.add_parser(
        "export-weights",
        help="write a trained run as official options.json + hdf5",
        description="Writes options.json (n_characters 262) and "
        "weights.hdf5 in the official bilm-tf / AllenNLP layout, the "
        "vocabulary, and softmax.hdf5 (for --init-from).",
    )
    weights.add_argument("--model", required=True, help="training run dir")
    weights.add_argument("--output", required=True, help="directory to write")
    weights.set_defaults(run=run_export_weights)

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
        "--output", required=True, help="directory to write (new or empty)"
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
    serving.set_defaults(run=run_export_savedmodel)


def run_export_weights(args):
    from keras_elmo.files import check_output_directory
    from keras_elmo.run_directory import export_weights

    check_output_directory(args.output, inputs=[args.model])
    export_weights(args.model, args.output)
    print(
        f"wrote options.json, weights.hdf5, vocab.txt and softmax.hdf5 to "
        f"{args.output}"
    )


def run_export_savedmodel(args):
    from keras_elmo.data.vocabulary import Vocabulary
    from keras_elmo.errors import KerasElmoError
    from keras_elmo.export.savedmodel import export_savedmodel
    from keras_elmo.files import check_output_directory

    source = bilm_source(args)
    check_output_directory(
        args.output, inputs=[args.model, source.options, source.weights]
    )
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
        source.bilm(),
        args.output,
        vocabulary=vocabulary,
        max_batch_tokens=args.max_batch_tokens,
    )
    cached = f", {len(vocabulary):,} cached tokens" if args.cache_vocab else ""
    print(f"wrote the SavedModel to {args.output}{cached}")
