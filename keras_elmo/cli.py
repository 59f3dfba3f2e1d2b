"""The `keras-elmo` command line. Parses arguments and delegates."""

import argparse
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
