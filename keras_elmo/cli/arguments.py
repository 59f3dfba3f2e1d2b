"""Argument types and argument groups shared by the subcommands."""

import argparse
import json


def positive_int(text):
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 or str(text).strip() != str(text).strip().lstrip("+"):
        raise argparse.ArgumentTypeError(
            f"expected a positive integer; received {text!r}"
        )
    return value


def non_negative_int(text):
    """argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= 0; received {text!r}"
        )
    return value


def positive_float(text):
    """argparse type: a finite float > 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(
            f"expected a positive number; received {text!r}"
        )
    return value


def non_negative_float(text):
    """argparse type: a finite float >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(
            f"expected a number >= 0; received {text!r}"
        )
    return value


def json_value(text):
    """argparse type: a JSON value, e.g. `[[1, 32], [2, 64]]`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(
            f"expected JSON, e.g. '[[1, 32], [2, 64]]'; received {text!r} "
            f"({error.msg} at character {error.pos})"
        ) from None


def add_bilm_source(parser, required=True):
    """--model, or --options and --weights: the biLM a command uses."""
    group = parser.add_argument_group(
        "biLM (give --model, or --options and --weights)"
    )
    group.add_argument(
        "--model",
        help="a training run directory (keras-elmo train --output) or a "
        "directory holding options.json and weights.hdf5 (an export)",
    )
    group.add_argument("--options", help="official options.json of the biLM")
    group.add_argument("--weights", help="official hdf5 weights of the biLM")
    group.add_argument(
        "--bilm-vocab",
        help="the vocabulary of a word-input biLM (default: the run's, or "
        "vocab.txt beside options.json)",
    )
    parser.set_defaults(bilm_required=required)


def bilm_source(args):
    """The `keras_elmo.sources.BiLMSource` the arguments name."""
    from keras_elmo.sources import open_source

    return open_source(
        model=args.model, options=args.options, weights=args.weights
    )


def bilm_vocabulary(args, source):
    """The vocabulary a word-input biLM reads (`--bilm-vocab`, else the
    source's); None for a biLM that reads characters."""
    from keras_elmo.errors import KerasElmoError

    if not source.bilm().encoder.needs_vocabulary:
        return None
    vocabulary = args.bilm_vocab or source.vocabulary()
    if vocabulary is None:
        raise KerasElmoError(
            f"{source.description} is a word-input biLM and no vocabulary "
            "was found for it (no vocab.txt beside its options.json); give "
            "the one it was trained with: --bilm-vocab VOCAB.txt."
        )
    return vocabulary


def add_quiet(parser):
    parser.add_argument(
        "--quiet", action="store_true", help="no progress output"
    )


def verbosity(args):
    return 0 if args.quiet else 1
