"""Argument types and argument groups shared by the subcommands."""

import argparse
import weakref

from keras_elmo_cli.messages import type_error


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
finite_float = _number(float, -float("inf"), True, "a finite number")


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
    within the bounds of `elmo_core.formats.json_text` (no nesting 100
    levels deep, no integer of thousands of digits)."""
    from elmo_core.errors import KerasElmoError
    from elmo_core.formats.json_text import parse_json

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
    from elmo_core.errors import KerasElmoError
    from elmo_core.errors import check_numbers

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


def add_scalar_mix(group, help_text, dest="scalar_mix"):
    """`--scalar-mix W0,W1,...` (`scalar_mix_weights`) into `group`, its
    destination `dest` (the name of the library argument it gives)."""
    group.add_argument(
        "--scalar-mix",
        dest=dest,
        type=scalar_mix_weights,
        metavar="W0,W1,...",
        help=f"{help_text}; the weights one a layer, comma-separated (e.g. "
        "0,0,0 averages the layers; [0.5, 0.3, 0.2] is taken too)",
    )


def add_input_files(group, what):
    """`--input` (`inputs`, repeatable), the files of a command that reads
    several, each `what` (e.g. "a raw text file or glob")."""
    group.add_argument(
        "--input",
        dest="inputs",
        metavar="INPUT",
        action="append",
        required=True,
        help=f"{what} (repeat for more; a name holding [, * or ? is named "
        "literally with the character in brackets: 'x[[]1].txt')",
    )


def add_max_batch_tokens(group):
    """`--max-batch-tokens` of the commands that embed sentences, with the
    library's one default."""
    from elmo_core.embedding_files.token_batches import DEFAULT_MAX_BATCH_TOKENS

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
    from elmo_core.pretrained.preset_table import PRESETS as PRETRAINED
    from elmo_core.settings.sizes import SIZES

    if text in SIZES:
        return text
    if text in PRETRAINED:
        raise argparse.ArgumentTypeError(
            f"{text!r} is a pretrained model, not a training size; to "
            f"start from its weights, use --init-from {text} (with no "
            "--size, the run takes its size)"
        )
    raise type_error(f"expected one of {', '.join(SIZES)}.", text)


def add_bilm_source(parser, vocabulary="bilm_vocab"):
    """--model, or --options and --weights: the biLM a command uses; and
    --bilm-vocab, whose destination is `vocabulary` (the name of the
    library argument it gives)."""
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
        dest=vocabulary,
        metavar="BILM_VOCAB",
        help="the vocabulary of a word-input biLM (default: the run's, or "
        "vocab.txt beside options.json)",
    )


def bilm_source(args):
    """The `keras_elmo.sources.BiLMSource` the arguments name: `--model`,
    or `--options` with `--weights` (never both; `source_arguments`)."""
    from keras_elmo.loading import classify

    given = source_arguments(args)
    argument = "model" if args.model is not None else "options"
    return classify(given["model"], given["weights"], argument=argument)


def bilm_vocabulary(args, source):
    """The vocabulary a word-input biLM reads (`--bilm-vocab`, else the
    source's); None for a biLM that reads characters."""
    from elmo_core.errors import KerasElmoError

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


# What --quiet leaves out, by what else the command prints.
QUIET_PROGRESS = "no progress output"
QUIET_DONE = "no progress output and no closing line"


def add_quiet(parser, help=QUIET_PROGRESS):
    parser.add_argument("--quiet", action="store_true", help=help)


def verbosity(args):
    return 0 if args.quiet else 1


def library_arguments(args, function, *more):
    """The keyword arguments of the library `function` that the parsed
    `args` give (each flag's destination is the argument's name), with
    `verbose` from `--quiet`; `more` names further destinations to pass
    (those a function takes through its `**settings`)."""
    import inspect

    names = {*inspect.signature(function).parameters, *more}
    values = {k: v for k, v in vars(args).items() if k in names}
    if "verbose" in names and "quiet" in vars(args):
        values["verbose"] = verbosity(args)
    return values


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


def add_fasta_arguments(parser):
    """`--input-format`, `--max-residues` and `--protein-vectors`: protein
    FASTA input, as `embed` and `embed-corpus` take it."""
    from elmo_core.embedding_files.inputs import DEFAULT_PROTEIN_VECTORS
    from elmo_core.embedding_files.inputs import PROTEIN_VECTORS
    from elmo_core.proteins.fasta import DEFAULT_MAX_RESIDUES
    from elmo_core.proteins.fasta import FASTA_SUFFIXES
    from elmo_core.proteins.fasta import INPUT_FORMATS

    group = parser.add_argument_group(
        "protein FASTA input (needs the proteins extra: pip install "
        "'keras-elmo[proteins]')"
    )
    group.add_argument(
        "--input-format",
        choices=INPUT_FORMATS,
        help="one sentence a line, or FASTA records (one residue a token); "
        f"default: fasta for {'/'.join(FASTA_SUFFIXES)} (also .gz), else "
        "lines",
    )
    group.add_argument(
        "--max-residues",
        type=positive_int,
        help=f"FASTA: a longer record is bad (default {DEFAULT_MAX_RESIDUES})",
    )
    group.add_argument(
        "--protein-vectors",
        choices=tuple(PROTEIN_VECTORS),
        help="FASTA: the per-residue layers (as --all/--top/--average pick), "
        "the per-protein vector (SeqVec's: the sum over layers, then the mean "
        "over residues; with --top, --average or a mix, the mean of that "
        f"over residues), or both (default {DEFAULT_PROTEIN_VECTORS})",
    )


def add_tokenize(group, default):
    """`--tokenize` and `--language`: how raw text is split into tokens
    (`default`: the command's)."""
    from elmo_core.text import tokenizers

    group.add_argument(
        "--tokenize",
        choices=tokenizers.TOKENIZATIONS,
        default=default,
        help="how a line is split into tokens: whitespace (as written: "
        "sentences tokenised before), spacy (spaCy's rule-based tokenizer "
        "and sentencizer), moses (the Moses rules in spaCy's sentences; "
        "both need the prepare extra) or device (the rule an app runs, a "
        "line one sentence, English) (default %(default)s)",
    )
    group.add_argument(
        "--language",
        default=tokenizers.DEFAULT_LANGUAGE,
        help="the text's language code, for the rules of --tokenize "
        "(default %(default)s)",
    )


def source_arguments(args, name="model"):
    """`{name: ..., "weights": ...}`, the biLM source of a library
    function (its argument `name`: the exports' `model`, the embedders'
    `source`), from `--model`, or `--options` with `--weights` (never
    both); the command's messages then name that argument by the flag
    that gave it (`args.argument_flags`)."""
    from elmo_core.embedding_files.runtime_dump import runtime_of
    from elmo_core.errors import KerasElmoError

    model, options, weights = args.model, args.options, args.weights
    flag = "--model" if model is not None else "--options"
    flags = getattr(args, "argument_flags", None) or {}
    args.argument_flags = {**flags, name: flag}
    if model is not None and (options is not None or weights is not None):
        given = "--options" if options is not None else "--weights"
        if runtime_of(model) is not None:
            raise KerasElmoError(
                f"--model {model} is an exported model file; {given} does "
                "not apply to it (it holds its options and weights). Drop "
                f"{given}."
            )
        raise KerasElmoError(
            "Give either --model or --options/--weights, not both."
        )
    if model is not None:
        return {name: model, "weights": None}
    if options is None or weights is None:
        raise KerasElmoError(
            "Give the biLM with --options OPTIONS.json --weights "
            "WEIGHTS.hdf5, or --model DIR (a keras-elmo train output or an "
            "export directory)."
        )
    return {name: options, "weights": weights}
