"""`keras-elmo train`: pretrain a biLM on a corpus (resumable)."""

from keras_elmo.cli.arguments import add_quiet
from keras_elmo.cli.arguments import json_value
from keras_elmo.cli.arguments import non_negative_float
from keras_elmo.cli.arguments import non_negative_int
from keras_elmo.cli.arguments import output_path
from keras_elmo.cli.arguments import positive_float
from keras_elmo.cli.arguments import positive_int
from keras_elmo.cli.arguments import training_size
from keras_elmo.cli.arguments import verbosity

# The library's names of what these flags give, where they differ from
# the flags' own (`--vocab` gives `vocab` to `run_vocabulary`, and the
# `vocabulary` that `train` reads).
ARGUMENT_FLAGS = {
    "output_dir": "--output",
    "train_files": "--train",
    "validation_files": "--validation",
    "vocabulary": "--vocab",
    "max_size": "--max-vocab-size",
    "options_config": "--options",
}


def add_parser(commands):
    parser = commands.add_parser(
        "train",
        help="pretrain a biLM on your corpus (resumable)",
        description="Trains an ELMo biLM with model.fit on text files of one "
        "whitespace-tokenised sentence a line (.gz allowed). Running the "
        "same command again on the same --output resumes from the last "
        "checkpoint, optimizer state and data position included.",
    )
    _add_data_arguments(parser)
    _add_size_arguments(parser)
    _add_training_arguments(parser)
    _add_device_arguments(parser)
    add_quiet(parser)
    parser.set_defaults(run=run, argument_flags=ARGUMENT_FLAGS)
    # The defaults, to tell a flag given from one left alone.
    parser.set_defaults(flag_default=parser.get_default)


def _add_data_arguments(parser):
    from keras_elmo.data.text import ON_BAD_LINE
    from keras_elmo.training.training_config import TrainingConfig

    defaults = TrainingConfig.__dataclass_fields__
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
    data.add_argument(
        "--vocab",
        help="the vocabulary to train with (an input: one token a line, "
        "<S> </S> <UNK> first); or --build-vocab",
    )
    data.add_argument(
        "--build-vocab",
        action="store_true",
        help="build the vocabulary from the training files",
    )
    data.add_argument(
        "--min-count",
        type=positive_int,
        default=1,
        help="with --build-vocab: minimum count (default %(default)s)",
    )
    data.add_argument(
        "--max-vocab-size",
        type=positive_int,
        help="with --build-vocab: at most this many tokens",
    )
    data.add_argument(
        "--output", type=output_path, required=True, help="run directory"
    )
    data.add_argument(
        "--tokens-per-batch",
        type=positive_int,
        help="token budget of a batch on one device (default: "
        f"{_by_size('tokens_per_batch')}); a step trains on this many "
        "tokens times the replicas",
    )
    data.add_argument(
        "--max-length",
        type=positive_int,
        default=defaults["max_length"].default,
        help="longer sentences are split evenly (default %(default)s)",
    )
    data.add_argument(
        "--on-bad-line",
        choices=ON_BAD_LINE,
        default=defaults["on_bad_line"].default,
        help="a line that is not UTF-8 (in training, validation and "
        "vocabulary files): stop (default) or skip and report it",
    )


def _add_size_arguments(parser):
    from keras_elmo.training.sizes import DEFAULT_SIZE
    from keras_elmo.training.sizes import DEFAULT_TOKEN_ENCODER
    from keras_elmo.training.sizes import SIZE_ARGUMENTS
    from keras_elmo.training.sizes import SIZES
    from keras_elmo.training.sizes import TRAINABLE_TOKEN_ENCODERS

    size = parser.add_argument_group("model size")
    size.add_argument(
        "--token-encoder",
        choices=TRAINABLE_TOKEN_ENCODERS,
        help=f"how the biLM reads a token: {DEFAULT_TOKEN_ENCODER} (default, "
        "or the --init-from source's) through the char CNN, or words: one id "
        "of the vocabulary, looked up in a table (bilm-tf's word-input biLM; "
        "the size's char CNN sizes do not apply)",
    )
    size.add_argument(
        "--size",
        "--preset",
        dest="size",
        type=training_size,
        metavar="{" + ",".join(SIZES) + "}",
        help=f"{DEFAULT_SIZE} (default): a small CPU-friendly biLM; "
        "small, medium, original: the published ELMo sizes (--preset is an "
        "older name of this flag; a pretrained model goes to --init-from)",
    )
    size.add_argument(
        "--options", help="take the size from an official options.json"
    )
    for name, (kind, smallest) in SIZE_ARGUMENTS.items():
        size.add_argument(
            "--" + name.replace("_", "-"),
            type=positive_int if kind is int and smallest else kind,
            help=f"(>= {smallest})",
        )
    size.add_argument(
        "--filters",
        type=json_value,
        help="char CNN filters as JSON, e.g. '[[1,32],[2,64]]'",
    )
    size.add_argument("--no-skip-connections", action="store_true")


def _by_size(name):
    """A recipe setting's defaults, for --help."""
    from keras_elmo.training.recipe import SMALL_CORPUS
    from keras_elmo.training.recipe import SMALL_CORPUS_TOKENS
    from keras_elmo.training.training_config import TrainingConfig

    large = TrainingConfig.__dataclass_fields__[name].default
    small = SMALL_CORPUS[name]
    if large is None:
        large = "the optimizer's"
    return (
        f"{small} under {SMALL_CORPUS_TOKENS // 10**6}M training tokens, "
        f"else {large}"
    )


def _epochs_by_size():
    from keras_elmo.training.recipe import SMALL_CORPUS_EPOCHS
    from keras_elmo.training.recipe import SMALL_CORPUS_TOKENS
    from keras_elmo.training.recipe import SMALL_CORPUS_TRAINING_TOKENS

    low, high = SMALL_CORPUS_EPOCHS
    return (
        f"under {SMALL_CORPUS_TOKENS // 10**6}M training tokens, enough to "
        f"see about {SMALL_CORPUS_TRAINING_TOKENS // 10**6}M tokens "
        f"({low} to {high}), else 1"
    )


def _duration(text):
    """argparse type of --time-budget: seconds."""
    import argparse

    from keras_elmo.cli.messages import command_line_message
    from keras_elmo.errors import KerasElmoError
    from keras_elmo.training.time_budget import parse_duration

    try:
        return parse_duration(text)
    except KerasElmoError as error:
        flags = {
            "time_budget": "--time-budget",
            "steps": "--steps",
            "epochs": "--epochs",
        }
        message = command_line_message(error, flags)
        raise argparse.ArgumentTypeError(message) from None


def _add_training_arguments(parser):
    from keras_elmo.training.recipe import SMALL_CORPUS_TOKENS
    from keras_elmo.training.training_config import DEFAULT_CHECKPOINT_EVERY
    from keras_elmo.training.training_config import LEARNING_RATE_SCHEDULES
    from keras_elmo.training.training_config import OPTIMIZERS
    from keras_elmo.training.training_config import TrainingConfig

    defaults = TrainingConfig.__dataclass_fields__
    fit = parser.add_argument_group(
        "training",
        "Unset, --optimizer, --learning-rate, --lr-schedule, "
        "--warmup-steps, --dropout, --tokens-per-batch, --num-sampled and "
        "--epochs follow the recipe for the corpus size (printed when "
        f"training starts): under {SMALL_CORPUS_TOKENS:,} training tokens "
        "the small-corpus recipe, else bilm-tf's.",
    )
    fit.add_argument(
        "--epochs",
        type=positive_float,
        help=f"passes over the data (default: {_epochs_by_size()})",
    )
    fit.add_argument("--steps", type=positive_int, help="total steps instead")
    fit.add_argument(
        "--time-budget",
        type=_duration,
        metavar="DURATION",
        help="train as long as fits in this wall time (e.g. 15m, 900s, "
        "1.5h), evaluations included: the last step and the learning-rate "
        "decay are planned from the measured speed; instead of --epochs "
        "or --steps",
    )
    fit.add_argument(
        "--num-sampled",
        type=positive_int,
        help="sampled-softmax negatives (default: "
        f"{_by_size('num_sampled')}; capped at V)",
    )
    fit.add_argument(
        "--dropout",
        type=non_negative_float,
        help="dropout on the LSTM inputs and the softmax input (default: "
        f"{_by_size('dropout')})",
    )
    fit.add_argument(
        "--optimizer",
        choices=sorted(OPTIMIZERS),
        help="adagrad (the original recipe) or adam (default: "
        f"{_by_size('optimizer')}); both update only the softmax rows a "
        "batch touches",
    )
    fit.add_argument(
        "--learning-rate",
        type=positive_float,
        help=f"default: {_by_size('learning_rate')}, with --optimizer: "
        + ", ".join(
            f"{rate:g} for {name}" for name, rate in OPTIMIZERS.items()
        ),
    )
    fit.add_argument(
        "--lr-schedule",
        dest="learning_rate_schedule",
        choices=LEARNING_RATE_SCHEDULES,
        help="constant (the original recipe) or linear decay to zero at "
        f"the last step (default: {_by_size('learning_rate_schedule')})",
    )
    fit.add_argument(
        "--warmup-steps",
        type=non_negative_int,
        help="steps of linear learning-rate warm-up (default: "
        f"{_by_size('warmup_steps')})",
    )
    fit.add_argument(
        "--initial-accumulator",
        dest="initial_accumulator_value",
        type=non_negative_float,
        default=defaults["initial_accumulator_value"].default,
        help="Adagrad's initial accumulator (default %(default)s)",
    )
    fit.add_argument(
        "--clip-norm",
        type=non_negative_float,
        default=defaults["clip_norm"].default,
        help="global gradient norm clip (default %(default)s; 0 for none)",
    )
    fit.add_argument("--seed", type=int, default=defaults["seed"].default)
    fit.add_argument(
        "--checkpoint-every",
        type=positive_int,
        default=DEFAULT_CHECKPOINT_EVERY,
        help="steps between checkpoints (default %(default)s)",
    )
    fit.add_argument(
        "--validate-every",
        type=positive_int,
        help="steps between validations (default: one epoch)",
    )
    fit.add_argument(
        "--init-from",
        help="start from weights: a pretrained model name (keras-elmo "
        "presets), a run dir, an export dir, or OPTIONS.json,WEIGHTS.hdf5 "
        "(official; paths or URLs)",
    )


def _add_device_arguments(parser):
    from keras_elmo.training.precision import AUTO
    from keras_elmo.training.precision import OFF
    from keras_elmo.training.training_config import DEFAULT_CLUSTER_TIMEOUT
    from keras_elmo.training.training_config import JIT_COMPILE
    from keras_elmo.training.training_config import MIXED_PRECISION
    from keras_elmo.training.training_config import STRATEGIES

    devices = parser.add_argument_group("devices")
    devices.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="auto",
        help="auto (default): multi_worker if TF_CONFIG lists several "
        "tasks, mirrored with several GPUs, else one device; one_device; "
        "mirrored: all GPUs of this machine; multi_worker: the machines of "
        "TF_CONFIG; tpu: not supported yet (refused with the reason)",
    )
    devices.add_argument(
        "--mixed-precision",
        choices=[AUTO, OFF, *(name for name in MIXED_PRECISION if name)],
        default=AUTO,
        help="auto (default): bf16 on a CPU that multiplies bfloat16 "
        "natively (avx512_bf16, amx_bf16), else float32, and a resumed run "
        "keeps its own; off: float32; bf16 or fp16 (with loss scaling). "
        "Weights, LSTM cell state, softmax and loss stay float32",
    )
    devices.add_argument(
        "--jit-compile",
        choices=list(JIT_COMPILE),
        default="auto",
        help="compile the training step with XLA: auto (default) with a "
        "GPU and without a strategy, on, or off",
    )
    devices.add_argument(
        "--cluster-timeout",
        type=positive_float,
        default=DEFAULT_CLUSTER_TIMEOUT,
        help="multi_worker: seconds a worker waits for the others, at "
        "start-up and in each step, before an error (default %(default)s)",
    )


def _check_flags_apply(args):
    """A flag given where it does not apply is an error, not ignored."""
    from keras_elmo.errors import KerasElmoError

    def given(name):
        return getattr(args, name) != args.flag_default(name)

    rules = [
        (given("min_count") and not args.build_vocab, "--min-count",
         "sets how --build-vocab builds the vocabulary; add --build-vocab"),
        (given("max_vocab_size") and not args.build_vocab,
         "--max-vocab-size",
         "sets how --build-vocab builds the vocabulary; add --build-vocab"),
        (args.size is not None and args.options is not None, "--size",
         "and --options both give the whole size; give one"),
        (args.epochs is not None and args.steps is not None, "--epochs",
         "and --steps both give the length of the run; give one"),
        (args.time_budget is not None
         and (args.epochs is not None or args.steps is not None),
         "--time-budget",
         "and --epochs or --steps all give the length of the run; give one"),
        (given("cluster_timeout")
         and args.strategy in ("one_device", "mirrored"),
         "--cluster-timeout",
         f"is for multi_worker; --strategy {args.strategy} has no cluster"),
    ]  # fmt: skip
    for applies_not, flag, why in rules:
        if applies_not:
            raise KerasElmoError(f"{flag} {why}. Drop the flag or fix it.")


def _check_optimizer_flags(args, optimizer):
    """After the recipe: Adagrad's own flag needs Adagrad."""
    from keras_elmo.errors import KerasElmoError

    given = args.initial_accumulator_value != args.flag_default(
        "initial_accumulator_value"
    )
    if given and optimizer != "adagrad":
        chosen = "" if args.optimizer else " (the recipe's)"
        raise KerasElmoError(
            f"--initial-accumulator is Adagrad's; --optimizer {optimizer}"
            f"{chosen} has none. Drop the flag or give --optimizer adagrad."
        )


def _budget_left(time_budget, started):
    """The seconds of `--time-budget` left for training (its start-up is
    already spent)."""
    import time

    from keras_elmo.training.time_budget import MINIMUM_BUDGET_S

    if time_budget is None:
        return None
    return max(time_budget - (time.monotonic() - started), MINIMUM_BUDGET_S)


# The recipe's settings as this command's flags.
_RECIPE_FLAGS = {
    "optimizer": "--optimizer",
    "learning_rate": "--learning-rate",
    "learning_rate_schedule": "--lr-schedule",
    "warmup_steps": "--warmup-steps",
    "dropout": "--dropout",
    "tokens_per_batch": "--tokens-per-batch",
    "num_sampled": "--num-sampled",
    "epochs": "--epochs",
}


def _apply_recipe(args, train_files, verbose):
    """The flag values with the recipe's settings where none was given,
    and the epochs (see `keras_elmo.training.recipe`)."""
    from keras_elmo.training.recipe import RECIPE_SETTINGS
    from keras_elmo.training.recipe import choose_recipe
    from keras_elmo.training.recipe import count_tokens

    values = vars(args)
    length_given = any(
        values[name] is not None for name in ("epochs", "steps", "time_budget")
    )
    num_tokens = count_tokens(train_files, on_bad_line=args.on_bad_line)
    recipe = choose_recipe(num_tokens, length_given)
    given = [name for name in RECIPE_SETTINGS if values[name] is not None]
    if "optimizer" in given and "learning_rate" not in given:
        # The rate goes with the optimizer: the user's optimizer gets its
        # own default rate, not the recipe's for another one.
        recipe.settings.pop("learning_rate")
    if verbose:
        for line in recipe.describe(given, _RECIPE_FLAGS):
            print(line, flush=True)
    chosen = {
        name: value
        for name, value in recipe.settings.items()
        if name not in given
    }
    epochs = args.epochs if args.epochs is not None else recipe.epochs
    return {**values, **chosen}, epochs


def _saved_config(output):
    """The config.json values of the run in `output` (None: a new run),
    checked first: a value no run writes is blamed on the file, not on
    the flag of the same name."""
    from keras_elmo.training.run_directory import RunDirectory

    run = RunDirectory(output)
    return run.read_config().to_json() if run.is_run() else None


def _choose_precision(args, verbose, saved):
    """The run's `mixed_precision` for `--mixed-precision` (see
    `keras_elmo.training.precision`), said when auto chose it; `saved`:
    the resumed run's config values, or None."""
    from keras_elmo.training.precision import choose_precision

    value, reason = choose_precision(
        args.mixed_precision, saved=saved, gpu=_has_gpu()
    )
    if reason and verbose:
        if value and saved is None:
            reason += "; --mixed-precision off for float32"
        print(f"precision: {value or 'float32'} ({reason})", flush=True)
    return value


def _has_gpu():
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


def run(args):
    import time

    # A time budget counts from here: start-up and the corpus scan too.
    started = time.monotonic()
    from keras_elmo.data.datasets import resolve_files
    from keras_elmo.files import check_output_directory
    from keras_elmo.loading import classify
    from keras_elmo.training.fit import train
    from keras_elmo.training.run_setup import run_config
    from keras_elmo.training.run_setup import run_size
    from keras_elmo.training.run_setup import run_vocabulary
    from keras_elmo.training.run_setup import size_flags
    from keras_elmo.training.training_config import JIT_COMPILE

    _check_flags_apply(args)
    train_files = resolve_files(args.train)
    validation_files = (
        resolve_files(args.validation) if args.validation else None
    )
    # Nothing the run reads may be, hold or contain its output: checked
    # with the local files first, then with the source once resolved.
    inputs = [*train_files, *(validation_files or []), args.vocab]
    inputs.append(args.options)
    check_output_directory(args.output, inputs, "output")
    init_from = None
    if args.init_from:
        init_from = classify(args.init_from, argument="init_from")
        inputs += init_from.inputs()
        check_output_directory(args.output, inputs, "output")
    saved = _saved_config(args.output)
    vocabulary = run_vocabulary(
        args.output,
        train_files,
        args.vocab,
        args.build_vocab,
        args.min_count,
        args.max_vocab_size,
        args.on_bad_line,
        verbose=verbosity(args),
    )
    size = run_size(
        args.size,
        args.options,
        size_flags(vars(args)),
        init_from and init_from.bilm_size,
        args.token_encoder,
        len(vocabulary),
    )
    values, epochs = _apply_recipe(args, train_files, verbosity(args))
    values["mixed_precision"] = _choose_precision(args, verbosity(args), saved)
    _check_optimizer_flags(args, values["optimizer"])
    config = run_config(
        values,
        train_files=train_files,
        validation_files=validation_files,
        bilm=size,
        vocabulary_size=len(vocabulary),
    )
    train(
        args.output,
        config,
        vocabulary,
        epochs=None if args.steps or args.time_budget else epochs,
        steps=args.steps,
        checkpoint_every=args.checkpoint_every,
        validate_every=args.validate_every,
        init_from=init_from and init_from.read,
        verbose=verbosity(args),
        strategy=args.strategy,
        cluster_timeout=args.cluster_timeout,
        jit_compile=JIT_COMPILE[args.jit_compile],
        time_budget=_budget_left(args.time_budget, started),
    )
    print(f"training done; the run is in {args.output}")
