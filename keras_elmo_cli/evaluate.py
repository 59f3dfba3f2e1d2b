"""`keras-elmo evaluate`: held-out perplexity of a trained run."""

from keras_elmo_cli.arguments import add_quiet
from keras_elmo_cli.arguments import verbosity


def add_parser(commands):
    parser = commands.add_parser(
        "evaluate",
        help="held-out perplexity of a trained run",
        description="Full-softmax perplexity (exp of the mean loss of both "
        "directions), every sentence from a zero state. "
        "keras_elmo.evaluate(...) from Python.",
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
    parser.set_defaults(
        run=run,
        argument_flags={"model_dir": "--model", "data_patterns": "--data"},
    )


def run(args):
    import keras_elmo

    results = keras_elmo.evaluate(args.model, args.data, verbosity(args))
    print(
        f"held-out perplexity {results['perplexity']:.2f} (forward "
        f"{results['forward_perplexity']:.2f}, backward "
        f"{results['backward_perplexity']:.2f}) on "
        f"{results['tokens']:,} tokens, {results['sentences']:,} sentences"
    )
