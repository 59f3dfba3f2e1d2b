"""`keras-elmo evaluate`: held-out perplexity of a trained run."""

from keras_elmo.cli.arguments import add_quiet
from keras_elmo.cli.arguments import verbosity


def add_parser(commands):
    parser = commands.add_parser(
        "evaluate",
        help="held-out perplexity of a trained run",
        description="Full-softmax perplexity (exp of the mean loss of both "
        "directions), every sentence from a zero state.",
    )
    parser.add_argument("--model", required=True, help="training run dir")
    parser.add_argument(
        "--data",
        nargs="+",
        required=True,
        metavar="PATTERN",
        help="held-out files or globs",
    )
    add_quiet(parser)
    parser.set_defaults(run=run)


def run(args):
    from keras_elmo.training.evaluate import evaluate

    results = evaluate(args.model, args.data, verbose=verbosity(args))
    print(
        f"held-out perplexity {results['perplexity']:.2f} (forward "
        f"{results['forward_perplexity']:.2f}, backward "
        f"{results['backward_perplexity']:.2f}) on "
        f"{results['tokens']:,} tokens, {results['sentences']:,} sentences"
    )
