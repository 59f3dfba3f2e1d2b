"""The `keras-elmo` command line. Parses arguments and delegates."""

import argparse
import os
import sys


def _add_weights_arguments(parser):
    parser.add_argument(
        "--options", required=True, help="official options.json of the biLM"
    )
    parser.add_argument(
        "--weights", required=True, help="official hdf5 weights of the biLM"
    )


def _embed(args):
    from keras_elmo.checkpoints import load_bilm
    from keras_elmo.dump import embed_file

    bilm = load_bilm(args.options, args.weights)
    count = embed_file(
        bilm,
        args.input,
        args.output,
        batch_size=args.batch_size,
        verbose=0 if args.quiet else 1,
    )
    print(f"Wrote the biLM layers of {count} sentences to {args.output}")


def _dump_token_embeddings(args):
    from keras_elmo.checkpoints import load_bilm
    from keras_elmo.dump import dump_token_embeddings

    bilm = load_bilm(args.options, args.weights)
    count = dump_token_embeddings(
        bilm,
        args.vocab,
        args.output,
        batch_size=args.batch_size,
        verbose=0 if args.quiet else 1,
    )
    print(f"Wrote {count} token embeddings to {args.output}")


_SIZE_FLAGS = {
    "units": int,
    "projection_dim": int,
    "num_layers": int,
    "num_highway_layers": int,
    "char_embedding_dim": int,
    "cell_clip": float,
    "proj_clip": float,
}


def _bilm_config(args, init_source):
    """Model size: --options, else --preset plus single flags; with
    --init-from and no size flags, the source's own size."""
    from keras_elmo.checkpoints import _read_options
    from keras_elmo.checkpoints import options_to_config
    from keras_elmo.training import PRESETS
    from keras_elmo.training import init_source_bilm_config

    flags = {
        name: getattr(args, name)
        for name in list(_SIZE_FLAGS) + ["filters"]
        if getattr(args, name) is not None
    }
    if args.no_skip_connections:
        flags["use_skip_connections"] = False
    explicit = flags or args.preset or args.options
    if init_source is not None and not explicit:
        return init_source_bilm_config(init_source)
    if args.options:
        config = dict(PRESETS["cpu"])
        config.update(options_to_config(_read_options(args.options)))
    else:
        config = dict(PRESETS[args.preset or "cpu"])
    config.update(flags)
    return config


def _train(args):
    import json

    from keras_elmo.data.datasets import resolve_files
    from keras_elmo.data.vocabulary import Vocabulary
    from keras_elmo.training import TrainingConfig
    from keras_elmo.training import read_init_source
    from keras_elmo.training import train

    train_files = resolve_files(args.train)
    validation_files = (
        resolve_files(args.validation) if args.validation else None
    )
    existing_vocab = os.path.join(args.output, "vocab.txt")
    if args.vocab:
        vocabulary = Vocabulary.from_file(args.vocab)
    elif args.build_vocab and os.path.exists(existing_vocab):
        vocabulary = Vocabulary.from_file(existing_vocab)
    elif args.build_vocab:
        vocabulary = Vocabulary.from_corpus(
            train_files, min_count=args.min_count, max_size=args.max_vocab_size
        )
        print(f"built a vocabulary of {len(vocabulary):,} tokens")
    else:
        raise ValueError(
            "Give the output vocabulary with --vocab VOCAB.txt (one token a "
            "line, <S> </S> <UNK> first), or --build-vocab to build it from "
            "the training files."
        )
    init_source = read_init_source(args.init_from) if args.init_from else None
    if args.filters is not None:
        args.filters = json.loads(args.filters)
    config = TrainingConfig(
        train_files=train_files,
        validation_files=validation_files,
        bilm=_bilm_config(args, init_source),
        vocabulary_size=len(vocabulary),
        tokens_per_batch=args.tokens_per_batch,
        max_length=args.max_length,
        num_sampled=args.num_sampled,
        dropout=args.dropout,
        optimizer=args.optimizer,
        learning_rate=args.learning_rate,
        learning_rate_schedule=args.lr_schedule,
        initial_accumulator_value=args.initial_accumulator,
        clip_norm=args.clip_norm,
        seed=args.seed,
        on_bad_line=args.on_bad_line,
        mixed_precision=args.mixed_precision,
    )
    train(
        args.output,
        config,
        vocabulary,
        epochs=args.epochs,
        steps=args.steps,
        checkpoint_every=args.checkpoint_every,
        validate_every=args.validate_every,
        init_from=init_source,
        verbose=0 if args.quiet else 1,
        strategy=args.strategy,
        cluster_timeout=args.cluster_timeout,
        jit_compile={"auto": "auto", "on": True, "off": False}[
            args.jit_compile
        ],
    )
    print(f"training done; the run is in {args.output}")


def _evaluate(args):
    from keras_elmo.training import evaluate

    results = evaluate(args.model, args.data, verbose=0 if args.quiet else 1)
    print(
        f"held-out perplexity {results['perplexity']:.2f} (forward "
        f"{results['forward_perplexity']:.2f}, backward "
        f"{results['backward_perplexity']:.2f}) on "
        f"{results['tokens']:,} tokens, {results['sentences']:,} sentences"
    )


def _export_weights(args):
    from keras_elmo.training import export_weights

    export_weights(args.model, args.output)
    print(
        f"wrote options.json, weights.hdf5, vocab.txt and softmax.hdf5 to "
        f"{args.output}"
    )


def _export_savedmodel(args):
    from keras_elmo.checkpoints import load_bilm
    from keras_elmo.data.vocabulary import Vocabulary
    from keras_elmo.export import export_savedmodel
    from keras_elmo.training import load_run

    if args.model and (args.options or args.weights):
        raise ValueError("Give either --model or --options/--weights.")
    if args.model:
        bilm = load_run(args.model)[0].bilm
    elif args.options and args.weights:
        bilm = load_bilm(args.options, args.weights)
    else:
        raise ValueError(
            "Give the biLM with --options OPTIONS.json --weights "
            "WEIGHTS.hdf5, or --model RUN_DIR (a keras-elmo train output)."
        )
    vocabulary = None
    if args.cache_vocab:
        vocabulary = Vocabulary.from_file(args.cache_vocab).tokens
    export_savedmodel(
        bilm,
        args.output,
        vocabulary=vocabulary,
        max_batch_tokens=args.max_batch_tokens,
    )
    cached = f", {len(vocabulary):,} cached tokens" if vocabulary else ""
    print(f"wrote the SavedModel to {args.output}{cached}")


def _add_train_parser(commands):
    from keras_elmo.distribute import DEFAULT_CLUSTER_TIMEOUT
    from keras_elmo.distribute import STRATEGIES
    from keras_elmo.training import PRESETS

    parser = commands.add_parser(
        "train",
        help="pretrain a biLM on your corpus (resumable)",
        description="Trains an ELMo biLM with model.fit on text files of one "
        "whitespace-tokenised sentence a line (.gz allowed). Running the "
        "same command again on the same --output resumes from the last "
        "checkpoint, optimizer state and data position included.",
    )
    data = parser.add_argument_group("data")
    data.add_argument(
        "--train",
        nargs="+",
        required=True,
        metavar="PATTERN",
        help="training files or quoted globs, e.g. 'data/*.txt'",
    )
    data.add_argument(
        "--validation",
        nargs="+",
        metavar="PATTERN",
        help="held-out files, evaluated once an epoch",
    )
    data.add_argument("--vocab", help="output vocabulary file")
    data.add_argument(
        "--build-vocab",
        action="store_true",
        help="build the vocabulary from the training files",
    )
    data.add_argument(
        "--min-count",
        type=int,
        default=1,
        help="with --build-vocab: minimum count (1)",
    )
    data.add_argument(
        "--max-vocab-size",
        type=int,
        help="with --build-vocab: at most this many tokens",
    )
    data.add_argument("--output", required=True, help="run directory")
    data.add_argument(
        "--tokens-per-batch",
        type=int,
        default=4096,
        help="token budget of a batch on one device (4096); a step trains "
        "on this many tokens times the replicas",
    )
    data.add_argument(
        "--max-length",
        type=int,
        default=100,
        help="longer sentences are split evenly (100)",
    )
    data.add_argument(
        "--on-bad-line",
        choices=["error", "skip"],
        default="error",
        help="a line that is not UTF-8: stop (default) or skip",
    )
    size = parser.add_argument_group("model size")
    size.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="cpu (default): a small CPU-friendly biLM; small, "
        "medium, original: the published ELMo sizes",
    )
    size.add_argument(
        "--options", help="take the size from an official options.json"
    )
    for name, kind in _SIZE_FLAGS.items():
        size.add_argument("--" + name.replace("_", "-"), type=kind)
    size.add_argument(
        "--filters", help="char CNN filters as JSON, e.g. '[[1,32],[2,64]]'"
    )
    size.add_argument("--no-skip-connections", action="store_true")
    fit = parser.add_argument_group("training")
    fit.add_argument(
        "--epochs", type=float, help="passes over the data (default 1)"
    )
    fit.add_argument("--steps", type=int, help="total steps instead")
    fit.add_argument(
        "--num-sampled",
        type=int,
        default=8192,
        help="sampled-softmax negatives (8192, capped at V)",
    )
    fit.add_argument("--dropout", type=float, default=0.1)
    fit.add_argument(
        "--optimizer",
        choices=["adagrad", "adam"],
        default="adagrad",
        help="adagrad (the original recipe) or adam; both update only the "
        "softmax rows a batch touches",
    )
    fit.add_argument(
        "--learning-rate",
        type=float,
        help="default 0.2 for adagrad, 0.001 for adam",
    )
    fit.add_argument(
        "--lr-schedule",
        choices=["constant", "linear"],
        default="constant",
        help="constant (the original recipe) or linear decay to zero at "
        "the last step, which suits short runs",
    )
    fit.add_argument("--initial-accumulator", type=float, default=1.0)
    fit.add_argument(
        "--clip-norm",
        type=float,
        default=10.0,
        help="global gradient norm clip (10; 0 for none)",
    )
    fit.add_argument("--seed", type=int, default=0)
    fit.add_argument(
        "--checkpoint-every",
        type=int,
        default=200,
        help="steps between checkpoints (200)",
    )
    fit.add_argument(
        "--validate-every",
        type=int,
        help="steps between validations (one epoch)",
    )
    fit.add_argument(
        "--init-from",
        help="start from weights: a run dir, an export dir, or "
        "OPTIONS.json,WEIGHTS.hdf5 (official)",
    )
    scale = parser.add_argument_group("devices")
    scale.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="auto",
        help="auto (default): multi_worker if TF_CONFIG lists several "
        "tasks, mirrored with several GPUs, else one device; one_device; "
        "mirrored: all GPUs of this machine; multi_worker: the machines of "
        "TF_CONFIG; tpu: not supported yet (refused with the reason)",
    )
    scale.add_argument(
        "--mixed-precision",
        choices=["bf16", "fp16"],
        help="compute in bfloat16 or float16 (with loss scaling); weights, "
        "LSTM cell state, softmax and loss stay float32",
    )
    scale.add_argument(
        "--jit-compile",
        choices=["auto", "on", "off"],
        default="auto",
        help="compile the training step with XLA: auto (default) with a "
        "GPU and without a strategy, on, or off",
    )
    scale.add_argument(
        "--cluster-timeout",
        type=float,
        default=DEFAULT_CLUSTER_TIMEOUT,
        help="multi_worker: seconds a worker waits for the others, at "
        f"start-up and in each step, before an error "
        f"({DEFAULT_CLUSTER_TIMEOUT:g})",
    )
    parser.add_argument("--quiet", action="store_true")
    parser.set_defaults(run=_train)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-elmo",
        description="ELMo biLMs in Keras 3: embed text with official or "
        "trained weights.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    embed = commands.add_parser(
        "embed",
        help="write the biLM layers of each sentence of a text file to hdf5",
        description="Reads one whitespace-tokenised sentence per line "
        "(UTF-8) and writes hdf5 dataset str(i) for line i (from 0), "
        "float32 (num_layers + 1, n_i, 2 * projection_dim), the bilm-tf "
        "dump layout. Stateless: each sentence starts from a zero state.",
    )
    _add_weights_arguments(embed)
    embed.add_argument("--input", required=True, help="sentences, one a line")
    embed.add_argument("--output", required=True, help="hdf5 file to write")
    embed.add_argument(
        "--batch-size", type=int, default=64, help="sentences a batch (64)"
    )
    embed.add_argument("--quiet", action="store_true", help="no progress bar")
    embed.set_defaults(run=_embed)

    dump = commands.add_parser(
        "dump-token-embeddings",
        help="write the context-insensitive embedding of each vocab token",
        description="Writes hdf5 dataset 'embedding' (num_tokens, "
        "projection_dim): row k is the token encoder output for line k of "
        "the vocabulary.",
    )
    _add_weights_arguments(dump)
    dump.add_argument("--vocab", required=True, help="one token a line")
    dump.add_argument("--output", required=True, help="hdf5 file to write")
    dump.add_argument(
        "--batch-size", type=int, default=1024, help="tokens a batch (1024)"
    )
    dump.add_argument("--quiet", action="store_true", help="no progress bar")
    dump.set_defaults(run=_dump_token_embeddings)

    _add_train_parser(commands)

    evaluate = commands.add_parser(
        "evaluate",
        help="held-out perplexity of a trained run",
        description="Full-softmax perplexity (exp of the mean loss of both "
        "directions), every sentence from a zero state.",
    )
    evaluate.add_argument("--model", required=True, help="training run dir")
    evaluate.add_argument(
        "--data",
        nargs="+",
        required=True,
        metavar="PATTERN",
        help="held-out files or globs",
    )
    evaluate.add_argument("--quiet", action="store_true")
    evaluate.set_defaults(run=_evaluate)

    export = commands.add_parser(
        "export-weights",
        help="write a trained run as official options.json + hdf5",
        description="Writes options.json (n_characters 262) and "
        "weights.hdf5 in the official bilm-tf / AllenNLP layout, the "
        "vocabulary, and softmax.hdf5 (for --init-from).",
    )
    export.add_argument("--model", required=True, help="training run dir")
    export.add_argument("--output", required=True, help="directory to write")
    export.set_defaults(run=_export_weights)

    serving = commands.add_parser(
        "export-savedmodel",
        help="write a SavedModel that embeds raw text (TF Hub outputs)",
        description="Writes a SavedModel with signatures 'default' "
        "(sentences: tf.string [batch], split on whitespace) and 'tokens' "
        "(tokens: tf.string [batch, max_len], sequence_len: int32 [batch]) "
        "returning word_emb, lstm_outputs1..L, elmo, default and "
        "sequence_len. It runs without keras_elmo installed.",
    )
    serving.add_argument("--options", help="official options.json")
    serving.add_argument("--weights", help="official hdf5 weights")
    serving.add_argument("--model", help="or a training run directory")
    serving.add_argument("--output", required=True, help="directory to write")
    serving.add_argument(
        "--cache-vocab",
        help="precompute the embeddings of these tokens (one a line); they "
        "then skip the char CNN, other tokens use characters, and a "
        "'token_ids' signature takes rows of this vocabulary",
    )
    serving.add_argument(
        "--max-batch-tokens",
        type=int,
        default=200_000,
        help="refuse requests larger than this many token positions, "
        "batch x max_len (200000)",
    )
    serving.set_defaults(run=_export_savedmodel)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except (FileNotFoundError, ValueError) as e:
        # User mistakes (missing or bad files, bad values) are reported in
        # one line; the messages say what to fix.
        print(f"keras-elmo {args.command}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
