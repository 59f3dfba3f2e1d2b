"""`train`: pretrain a biLM on a corpus, resumable (what `keras-elmo
train` runs; `distill` runs it with a teacher).

A run is set up in named steps, each a decision it can print: the files it
reads, its output checked against them, the recipe for what was left
unset, the vocabulary, the size, the precision, the config; then it
trains (`keras_elmo.training.fit`, which imports TensorFlow) and records
how its corpus was tokenised.
"""

import os
import time

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_verbose
from elmo_core.errors.blame import renamed
from elmo_core.files import check_output_directory
from elmo_core.settings.precision import AUTO
from elmo_core.settings.precision import choose_precision
from elmo_core.settings.recipe import RECIPE_SETTINGS
from elmo_core.settings.recipe import SMALL_CORPUS_RECIPE
from elmo_core.settings.recipe import choose_recipe
from elmo_core.settings.recipe import count_tokens
from elmo_core.settings.recipe import small_corpus_epochs
from elmo_core.settings.time_budget import MINIMUM_BUDGET_S
from elmo_core.settings.time_budget import parse_duration
from elmo_core.settings.training_config import DEFAULT_CHECKPOINT_EVERY
from elmo_core.settings.training_config import DEFAULT_CLUSTER_TIMEOUT
from elmo_core.settings.training_config import JIT_COMPILE
from elmo_core.settings.training_config import TrainingConfig
from elmo_core.text.patterns import resolve_files
from elmo_core.text.tokenization_record import corpus_tokenization
from elmo_core.text.tokenization_record import write_record
from keras_elmo.loading import classify
from keras_elmo.training.run_setup import run_config
from keras_elmo.training.run_setup import run_vocabulary
from keras_elmo.training.speed_probe import run_size_choice

_DEFAULTS = TrainingConfig.__dataclass_fields__
# The names the steps below blame, as `train` names its arguments.
ARGUMENT_NAMES = {
    "output_dir": "output",
    "train_files": "train",
    "validation_files": "validation",
    "vocabulary": "vocab",
    "max_size": "max_vocab_size",
    "options_config": "options",
}


def train(
    train,
    output,
    *,
    validation=None,
    vocab=None,
    build_vocab=False,
    min_count=None,
    max_vocab_size=None,
    tokens_per_batch=None,
    max_length=_DEFAULTS["max_length"].default,
    window_length=_DEFAULTS["window_length"].default,
    on_bad_line=_DEFAULTS["on_bad_line"].default,
    token_encoder=None,
    size=None,
    options=None,
    units=None,
    projection_dim=None,
    num_layers=None,
    num_highway_layers=None,
    char_embedding_dim=None,
    cell_clip=None,
    proj_clip=None,
    filters=None,
    use_skip_connections=None,
    epochs=None,
    steps=None,
    time_budget=None,
    num_sampled=None,
    dropout=None,
    weight_average=_DEFAULTS["weight_average"].default,
    weight_decay=None,
    optimizer=None,
    learning_rate=None,
    learning_rate_schedule=None,
    warmup_steps=None,
    initial_accumulator_value=None,
    clip_norm=_DEFAULTS["clip_norm"].default,
    seed=_DEFAULTS["seed"].default,
    checkpoint_every=DEFAULT_CHECKPOINT_EVERY,
    validate_every=None,
    init_from=None,
    strategy="auto",
    mixed_precision=AUTO,
    jit_compile="auto",
    cluster_timeout=None,
    verbose=1,
):
    """Pretrains a biLM on a corpus into the run directory `output`; called
    again on the same `output`, it resumes from the last checkpoint (the
    optimizer state and the data position included).

    The settings left as None follow the recipe for the corpus size
    (`elmo_core.settings.recipe`, printed when training starts); a value
    given always wins.

    Args:
        train: str or list of str. Training files or globs: one
            whitespace-tokenised sentence a line (`.gz` allowed).
        output: str. The run directory.
        validation: str or list of str, or None. Held-out files, evaluated
            once an epoch (or every `validate_every` steps).
        vocab: str or None. The vocabulary file to train with (one token a
            line, `<S> </S> <UNK>` first); or `build_vocab`.
        build_vocab: bool. Build the vocabulary from the training files
            (words seen at least `min_count` times, at most
            `max_vocab_size`).
        min_count, max_vocab_size: int or None. How `build_vocab` builds.
        tokens_per_batch: int or None. The tokens of a batch on one
            device.
        max_length: int. Longer sentences are split evenly.
        window_length: int. Train on windows of this many tokens of
            continuous text, each row's LSTM state carried from one step
            to the next (bilm-tf's recipe: 20); 0: sentences.
        on_bad_line: "error" or "skip". A line that is not UTF-8.
        token_encoder: "characters", "words" or None (the `init_from`
            source's, else characters).
        size: str or None. A training size (`elmo_core.settings.sizes`:
            tiny, mini, cpu, small, medium, original); default cpu, or
            with a `time_budget` and no size, the size the recipe
            chooses by timing a step here (`BUDGET_SIZES`).
        options: str or None. Take the size from an official options.json.
        units, projection_dim, num_layers, num_highway_layers: single
            size values over the size's.
        char_embedding_dim, cell_clip, proj_clip, filters: the same.
        use_skip_connections: the same.
        epochs, steps, time_budget: the length of the run, one of them:
            passes over the data, steps, or a wall time (seconds, or a
            duration such as "15m") in which the last step and the
            learning-rate decay are planned from the measured speed.
        num_sampled, dropout, weight_decay, optimizer: the training
            settings (None: the recipe's).
        learning_rate, learning_rate_schedule, warmup_steps: the same.
        weight_average: float. Momentum of a moving average of the
            weights that becomes the run's weights at the end (0: none).
        initial_accumulator_value: float or None. Adagrad's (default 1.0).
        clip_norm: float. Global gradient norm clip (0: none).
        seed: int.
        checkpoint_every: int. Steps between checkpoints.
        validate_every: int or None. Steps between validations (one
            epoch).
        init_from: str or None. Start from these weights: a pretrained
            name, a run or export directory, official files.
        strategy: "auto", "one_device", "mirrored" or "multi_worker".
        mixed_precision: "auto", "off", "bf16" or "fp16".
        jit_compile: "auto", "on" or "off".
        cluster_timeout: float or None. multi_worker: seconds a worker
            waits for the others.
        verbose: 0 or 1. Progress and the run's decisions.

    Returns:
        `output`, the run directory: `keras_elmo.load_bilm(output)` is
        the biLM.

    Raises:
        KerasElmoError: a setting refused, named as its argument here.

    Example:

    >>> import tempfile
    >>> run = keras_elmo.train(
    ...     "tests/fixtures/bilm-tf/train/data.txt",
    ...     tempfile.mkdtemp(),
    ...     vocab="tests/fixtures/bilm-tf/train/vocab.txt",
    ...     steps=2, units=16, projection_dim=8, verbose=0)
    >>> keras_elmo.load_bilm(run).units
    16
    """
    settings = dict(locals())
    return run_training(settings, time.monotonic())


def run_training(settings, started, teacher=None, distill=None):
    """Runs `train` with its `settings` (a dict of its arguments) from
    `started` (`time.monotonic()`: a time budget counts from there), for
    `distill` with its `teacher` source and the run's `distill` settings.
    Errors name the arguments of `train`."""
    try:
        return _run(dict(settings), started, teacher, distill)
    except KerasElmoError as error:
        raise renamed(error, ARGUMENT_NAMES) from None


def _run(values, started, teacher, distill):
    verbose = values["verbose"] = check_verbose(values["verbose"])
    _check_settings_apply(values)
    train_files = resolve_files(_as_list(values["train"]), "train")
    validation_files = None
    if values["validation"]:
        validation_files = resolve_files(
            _as_list(values["validation"]), "validation"
        )
    init_from = _checked_output(values, train_files, validation_files, teacher)
    saved = _saved_config(values["output"])
    _check_same_command(values["output"], saved, distill)
    given = [name for name in RECIPE_SETTINGS if values[name] is not None]
    values, epochs, corpus = _apply_recipe(values, train_files, verbose)
    vocabulary = run_vocabulary(
        values["output"],
        train_files,
        values["vocab"],
        values["build_vocab"],
        values["min_count"],
        values["max_vocab_size"],
        values["on_bad_line"],
        verbose=verbose,
    )
    values["mixed_precision"] = _choose_precision(values, verbose, saved)
    _check_optimizer_settings(values, given)
    # A distillation's student has its own default size.
    corpus = None if distill else corpus
    budget = _time_budget(values["time_budget"], started)
    size, size_choice, settings = run_size_choice(
        values, init_from, vocabulary, saved, (corpus, budget), given
    )
    values.update(settings)
    config = run_config(
        values,
        train_files=train_files,
        validation_files=validation_files,
        bilm=size,
        vocabulary_size=len(vocabulary),
        distill=distill,
        size_choice=size_choice,
    )
    _fit(values, config, vocabulary, epochs, started, init_from, teacher)
    write_record(values["output"], corpus_tokenization(train_files))
    if verbose:
        print(f"training done; the run is in {values['output']}")
    return values["output"]


def _as_list(value):
    """Files given as one path, or a list of them."""
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    return value


def _checked_output(values, train_files, validation_files, teacher):
    """The `init_from` source (or None), once nothing the run reads may
    be, hold or contain its output: checked with the local files first,
    then with the source once resolved."""
    output = values["output"]
    inputs = [*train_files, *(validation_files or []), values["vocab"]]
    inputs.append(values["options"])
    if teacher is not None:
        inputs += teacher.inputs()
    check_output_directory(output, inputs, "output")
    if not values["init_from"]:
        return None
    init_from = classify(values["init_from"], argument="init_from")
    check_output_directory(output, inputs + init_from.inputs(), "output")
    return init_from


def _check_settings_apply(values):
    """A setting given where it does not apply is an error, not ignored."""
    length = [n for n in ("epochs", "steps", "time_budget") if values[n]]
    if len(length) > 1:
        _refuse(f"`{length[0]}` and `{length[-1]}` both give the length of "
                "the run; give one", length[0])  # fmt: skip
    for name in ("min_count", "max_vocab_size"):
        if values[name] is not None and not values["build_vocab"]:
            _refuse(f"`{name}` sets how `build_vocab` builds the vocabulary; "
                    "set `build_vocab`", name)  # fmt: skip
    if values["size"] is not None and values["options"] is not None:
        _refuse("`size` and `options` both give the whole size; give one",
                "size")  # fmt: skip
    strategy = values["strategy"]
    if values["cluster_timeout"] is not None and strategy in (
        "one_device",
        "mirrored",
    ):
        _refuse(f"`cluster_timeout` is for multi_worker; `strategy` "
                f"{strategy} has no cluster", "cluster_timeout")  # fmt: skip


def _refuse(why, argument):
    raise KerasElmoError(f"{why}. Leave it out or fix it.", argument)


def _check_optimizer_settings(values, given):
    """After the recipe: Adagrad's own setting needs Adagrad (`given`: the
    recipe's settings the user gave)."""
    optimizer = values["optimizer"]
    if values["initial_accumulator_value"] is None:
        values["initial_accumulator_value"] = _DEFAULTS[
            "initial_accumulator_value"
        ].default
    elif optimizer != "adagrad":
        chosen = "" if "optimizer" in given else " (the recipe's)"
        raise KerasElmoError(
            f"`initial_accumulator_value` is Adagrad's; `optimizer` "
            f"{optimizer}{chosen} has none. Leave it out, or set "
            "`optimizer` adagrad.",
            "initial_accumulator_value",
        )


def _apply_recipe(values, train_files, verbose):
    """The settings with the recipe's where none was given, and the
    epochs (see `elmo_core.settings.recipe`)."""
    length_given = any(
        values[name] is not None for name in ("epochs", "steps", "time_budget")
    )
    num_tokens = count_tokens(train_files, on_bad_line=values["on_bad_line"])
    recipe = choose_recipe(num_tokens, length_given)
    given = [name for name in RECIPE_SETTINGS if values[name] is not None]
    if not values["build_vocab"]:
        # The vocabulary is given: nothing to build.
        recipe.settings.pop("min_count")
    if "optimizer" in given and "learning_rate" not in given:
        # The rate goes with the optimizer: the user's optimizer gets its
        # own default rate, not the recipe's for another one.
        recipe.settings.pop("learning_rate")
    if verbose:
        for line in recipe.describe(given):
            print(line, flush=True)
    chosen = {
        name: value
        for name, value in recipe.settings.items()
        if name not in given
    }
    epochs = values["epochs"]
    epochs = recipe.epochs if epochs is None else epochs
    corpus = None
    if recipe.name == SMALL_CORPUS_RECIPE:
        corpus = (train_files, num_tokens, small_corpus_epochs(num_tokens))
    return {**values, **chosen}, epochs, corpus


def _saved_config(output):
    """The config.json values of the run in `output` (None: a new run),
    checked first: a value no run writes is blamed on the file, not on
    the argument of the same name."""
    from keras_elmo.training.run_directory import RunDirectory

    run = RunDirectory(output)
    return run.read_config().to_json() if run.is_run() else None


def _check_same_command(output, saved, distill):
    """A run of `distill` resumes with `distill`, a run of `train` with
    `train` (`saved`: the run's config values, or None)."""
    if saved is None or (saved.get("distill") is None) == (distill is None):
        return
    if distill is None:
        teacher = saved["distill"].get("teacher")
        raise KerasElmoError(
            f"{output} holds a distillation of the teacher {teacher}: resume "
            f"it by distilling from `teacher` {teacher} with the settings it "
            "started with, or choose a new `output`.",
            "output",
        )
    raise KerasElmoError(
        f"{output} holds a training run (of train, not distill): resume it "
        "by training, or choose a new `output` for the distillation.",
        "output",
    )


def _choose_precision(values, verbose, saved):
    """The run's `mixed_precision` (see `elmo_core.settings.precision`),
    said when auto chose it; `saved`: the resumed run's config values, or
    None."""
    from keras_elmo.training.strategies import has_gpu

    value, reason = choose_precision(
        values["mixed_precision"], saved=saved, gpu=has_gpu()
    )
    if reason and verbose:
        if value and saved is None:
            reason += "; mixed_precision off for float32"
        print(f"precision: {value or 'float32'} ({reason})", flush=True)
    return value


def _time_budget(time_budget, started):
    """The seconds of `time_budget` (seconds or a duration such as "15m")
    left for training: its start-up is already spent."""
    if time_budget is None:
        return None
    if isinstance(time_budget, str):
        time_budget = parse_duration(time_budget)
    spent = time.monotonic() - started
    return max(time_budget - spent, MINIMUM_BUDGET_S)


def _fit(values, config, vocabulary, epochs, started, init_from, teacher):
    """Trains the run (TensorFlow from here on)."""
    from keras_elmo.training.fit import fit_run
    from keras_elmo.training.fit_options import FitOptions

    length_given = values["steps"] or values["time_budget"]
    cluster_timeout = values["cluster_timeout"]
    jit_compile = values["jit_compile"]
    options = FitOptions(
        epochs=None if length_given else epochs,
        steps=values["steps"],
        checkpoint_every=values["checkpoint_every"],
        validate_every=values["validate_every"],
        strategy=values["strategy"],
        cluster_timeout=(
            DEFAULT_CLUSTER_TIMEOUT if cluster_timeout is None
            else cluster_timeout
        ),
        jit_compile=JIT_COMPILE.get(jit_compile, jit_compile),
        time_budget=_time_budget(values["time_budget"], started),
    )  # fmt: skip
    fit_run(
        values["output"],
        config,
        vocabulary,
        options,
        init_from=init_from and init_from.read,
        verbose=values["verbose"],
        teacher=teacher,
    )
