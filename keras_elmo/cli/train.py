"""`keras-elmo train`: pretrain a biLM on a corpus (resumable)."""

from keras_elmo.cli.arguments import QUIET_DONE
from keras_elmo.cli.arguments import add_quiet
from keras_elmo.cli.arguments import verbosity
from keras_elmo.cli.train_flags import add_train_flags

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
    "window_length": "--windows",
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
    add_train_flags(parser)
    add_quiet(parser, QUIET_DONE)
    parser.set_defaults(run=run, argument_flags=ARGUMENT_FLAGS)
    # The defaults, to tell a flag given from one left alone.
    parser.set_defaults(flag_default=parser.get_default)


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
    "min_count": "--min-count",
    "optimizer": "--optimizer",
    "learning_rate": "--learning-rate",
    "learning_rate_schedule": "--lr-schedule",
    "warmup_steps": "--warmup-steps",
    "dropout": "--dropout",
    "weight_decay": "--weight-decay",
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
    if not args.build_vocab:
        # The vocabulary is given: nothing to build.
        recipe.settings.pop("min_count")
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


def _check_same_command(output, saved, distill):
    """A run of `distill` resumes with `distill`, a run of `train` with
    `train` (`saved`: the run's config values, or None)."""
    from keras_elmo.errors import KerasElmoError

    if saved is None or (saved.get("distill") is None) == (distill is None):
        return
    if distill is None:
        teacher = saved["distill"].get("teacher")
        raise KerasElmoError(
            f"{output} holds a distillation of the teacher {teacher}: resume "
            f"it with `keras-elmo distill --teacher {teacher}` and the flags "
            "it started with, or choose a new --output.",
            "output_dir",
        )
    raise KerasElmoError(
        f"{output} holds a run of `keras-elmo train`: resume it with that "
        "command, or choose a new --output for the distillation.",
        "output_dir",
    )


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
    from keras_elmo.training.strategies import has_gpu

    return has_gpu()


def run(args, started=None, teacher=None, distill=None):
    """Runs `keras-elmo train`; `keras-elmo distill` runs it too, with
    the `teacher` source it read (from `started`, its time.monotonic())
    and the run's `distill` settings."""
    import time

    # A time budget counts from here: start-up and the corpus scan too.
    started = started or time.monotonic()
    from keras_elmo.data.file_patterns import resolve_files
    from keras_elmo.data.tokenization_record import corpus_tokenization
    from keras_elmo.data.tokenization_record import write_record
    from keras_elmo.files import check_output_directory
    from keras_elmo.loading import classify
    from keras_elmo.training.fit import train
    from keras_elmo.training.fit_options import FitOptions
    from keras_elmo.training.run_setup import run_config
    from keras_elmo.training.run_setup import run_size
    from keras_elmo.training.run_setup import run_vocabulary
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
    if teacher is not None:
        inputs += teacher.inputs()
    check_output_directory(args.output, inputs, "output")
    init_from = None
    if args.init_from:
        init_from = classify(args.init_from, argument="init_from")
        inputs += init_from.inputs()
        check_output_directory(args.output, inputs, "output")
    saved = _saved_config(args.output)
    _check_same_command(args.output, saved, distill)
    values, epochs = _apply_recipe(args, train_files, verbosity(args))
    vocabulary = run_vocabulary(
        args.output,
        train_files,
        args.vocab,
        args.build_vocab,
        values["min_count"],
        args.max_vocab_size,
        args.on_bad_line,
        verbose=verbosity(args),
    )
    size = run_size(
        vars(args), init_from and init_from.bilm_size, len(vocabulary)
    )
    values["mixed_precision"] = _choose_precision(args, verbosity(args), saved)
    _check_optimizer_flags(args, values["optimizer"])
    config = run_config(
        values,
        train_files=train_files,
        validation_files=validation_files,
        bilm=size,
        vocabulary_size=len(vocabulary),
        distill=distill,
    )
    options = FitOptions(
        epochs=None if args.steps or args.time_budget else epochs,
        steps=args.steps,
        checkpoint_every=args.checkpoint_every,
        validate_every=args.validate_every,
        strategy=args.strategy,
        cluster_timeout=args.cluster_timeout,
        jit_compile=JIT_COMPILE[args.jit_compile],
        time_budget=_budget_left(args.time_budget, started),
    )
    train(
        args.output,
        config,
        vocabulary,
        options,
        init_from=init_from and init_from.read,
        verbose=verbosity(args),
        teacher=teacher,
    )
    write_record(args.output, corpus_tokenization(train_files))
    if verbosity(args):
        print(f"training done; the run is in {args.output}")
