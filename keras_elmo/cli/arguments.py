"""Argument types and argument groups shared by the subcommands."""

import argparse
import weakref

from keras_elmo.cli.messages import type_error


def _number(kind, minimum, strict, expected):
    """An argparse type: a finite `kind` >= `minimum` (> with `strict`)."""

    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        valid = (
            value is not None
            and value == value  # not NaN
            and abs(value) != float("inf")
            and (value > minimum if strict else value >= minimum)
        )
        if not valid:
            raise type_error(f"expected {expected}.", text)
        return value

    parse.__name__ = expected  # what argparse shows for a type error
    return parse


positive_int = _number(int, 0, True, "a positive integer")
positive_float = _number(float, 0.0, True, "a positive number")
non_negative_float = _number(float, 0.0, False, "a number >= 0")
non_negative_int = _number(int, 0, False, "an integer >= 0")


class OneValue(argparse._StoreAction):
    """argparse's store action, refusing the flag given twice, for a flag
    that another command repeats: `embed --input a.txt --input b.txt` (as
    `embed-corpus` takes several) would read b.txt alone, silently. (Other
    flags keep argparse's rule, the last wins, which wrappers rely on to
    override a default they pass.)"""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.given = None  # a weak reference to the namespace it was given in

    def __call__(self, parser, namespace, values, option_string=None):
        if self.given is not None and self.given() is namespace:
            parser.error(
                f"argument {option_string}: given twice; it takes one value "
                "here (the last would silently win). Give it once."
            )
        self.given = weakref.ref(namespace)
        super().__call__(parser, namespace, values, option_string)


def output_path(text):
    """argparse type of `--output`: a path; `-` (standard output) is
    refused, since outputs are files written whole and renamed when
    complete (hdf5 is written with seeks)."""
    if text == "-":
        raise argparse.ArgumentTypeError(
            "expected a path; '-' (standard output) cannot take it: the "
            "output is written to OUTPUT.partial and renamed when complete"
        )
    return text


def json_value(text):
    """argparse type: a JSON value, e.g. `[[1, 32], [2, 64]]`, parsed
    within the bounds of `keras_elmo.formats.json_text` (no nesting 100
    levels deep, no integer of thousands of digits)."""
    from keras_elmo.errors import KerasElmoError
    from keras_elmo.formats.json_text import parse_json

    try:
        return parse_json(text, "it")
    except KerasElmoError as error:
        raise type_error(
            "expected JSON, e.g. '[[1, 32], [2, 64]]' "
            f"({error.message.rstrip('.')}).",
            text,
        ) from None


def scalar_mix_weights(text):
    """argparse type of `--scalar-mix`, on every command that takes it:
    finite numbers, one a biLM layer, comma-separated (`0.5,0.3,0.2`),
    with or without the brackets of a JSON list (`[0.5, 0.3, 0.2]`)."""
    from keras_elmo.errors import KerasElmoError
    from keras_elmo.errors import check_numbers

    inner = text.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    try:
        return check_numbers(
            [_float(w) for w in inner.split(",")], where="the weights"
        )
    except (ValueError, KerasElmoError):
        raise type_error(
            "expected comma-separated finite numbers, one a biLM layer (e.g. "
            "0,0,0 for equal weights, or [0.5, 0.3, 0.2]).",
            text,
        ) from None


def _float(text):
    try:
        return float(text)
    except ValueError:
        return text  # refused, with the text, by check_numbers


def add_scalar_mix(group, help_text):
    """`--scalar-mix W0,W1,...` (`scalar_mix_weights`) into `group`."""
    group.add_argument(
        "--scalar-mix",
        type=scalar_mix_weights,
        metavar="W0,W1,...",
        help=f"{help_text}; the weights one a layer, comma-separated (e.g. "
        "0,0,0 averages the layers; [0.5, 0.3, 0.2] is taken too)",
    )


def add_max_batch_tokens(group):
    """`--max-batch-tokens` of the commands that embed sentences, with the
    library's one default."""
    from keras_elmo.data.token_batches import DEFAULT_MAX_BATCH_TOKENS

    group.add_argument(
        "--max-batch-tokens",
        type=positive_int,
        default=DEFAULT_MAX_BATCH_TOKENS,
        help="padded token positions per biLM call at most (sentences x "
        "the longest; a longer sentence goes alone): it bounds a batch's "
        "memory (default %(default)s)",
    )


def training_size(text):
    """argparse type of `train --size`: a training size name; a pretrained
    model name is refused with the flag that takes it."""
    from keras_elmo.pretrained.presets import PRESETS as PRETRAINED
    from keras_elmo.training.sizes import SIZES

    if text in SIZES:
        return text
    if text in PRETRAINED:
        raise argparse.ArgumentTypeError(
            f"{text!r} is a pretrained model, not a training size; to "
            f"start from its weights, use --init-from {text} (with no "
            "--size, the run takes its size)"
        )
    raise type_error(f"expected one of {', '.join(SIZES)}.", text)


def add_bilm_source(parser):
    """--model, or --options and --weights: the biLM a command uses."""
    group = parser.add_argument_group(
        "biLM (give --model, or --options and --weights)"
    )
    group.add_argument(
        "--model",
        help="a pretrained model name, a URL, a training run directory, an "
        "export directory (options.json + weights.hdf5), "
        "OPTIONS.json,WEIGHTS.hdf5, an ELMoForManyLangs model folder or a "
        ".keras file (see keras_elmo.loading)",
    )
    group.add_argument(
        "--options", help="official options.json of the biLM (path or URL)"
    )
    group.add_argument(
        "--weights", help="official hdf5 weights of the biLM (path or URL)"
    )
    group.add_argument(
        "--bilm-vocab",
        help="the vocabulary of a word-input biLM (default: the run's, or "
        "vocab.txt beside options.json)",
    )


def bilm_source(args):
    """The `keras_elmo.sources.BiLMSource` the arguments name: `--model`,
    or `--options` with `--weights` (never both)."""
    from keras_elmo.errors import KerasElmoError
    from keras_elmo.loading import classify

    model, options, weights = args.model, args.options, args.weights
    if model is not None and (options is not None or weights is not None):
        raise KerasElmoError(
            "Give either --model or --options/--weights, not both."
        )
    if model is not None:
        return classify(model, argument="model")
    if options is None or weights is None:
        raise KerasElmoError(
            "Give the biLM with --options OPTIONS.json --weights "
            "WEIGHTS.hdf5, or --model DIR (a keras-elmo train output or an "
            "export directory)."
        )
    return classify(options, weights, argument="options")


def bilm_vocabulary(args, source):
    """The vocabulary a word-input biLM reads (`--bilm-vocab`, else the
    source's); None for a biLM that reads characters."""
    from keras_elmo.errors import KerasElmoError

    bilm = source.read().bilm
    if not bilm.encoder.needs_vocabulary:
        if args.bilm_vocab:
            raise KerasElmoError(
                f"--bilm-vocab is for word-input biLMs; {source.description}"
                f" reads {bilm.token_encoder} and takes any token. "
                "Drop the flag."
            )
        return None
    vocabulary = args.bilm_vocab or source.read().vocabulary
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


def add_output_layers(parser, group, shapes, default, what="shape"):
    """One flag per way of giving a sentence's layers (`--all`, `--top`,
    `--average`: the keys of `shapes`, each with the shape it writes, in
    `what` words), into the (mutually exclusive) `group`; they set
    `output_layers`, `default` when none is given."""
    for name, shape in shapes.items():
        note = " (default)" if name == default else ""
        group.add_argument(
            f"--{name}",
            dest="output_layers",
            action="store_const",
            const=name,
            help=f"{what} {shape}{note}",
        )
    parser.set_defaults(output_layers=default)
