"""Pretraining runs: `fit` with resumable checkpoints.

`train` trains (or resumes) a run in a run directory
(`keras_elmo.training.run_directory`): running the same training again on
the same directory resumes from the checkpoint, with the same weights, the same
optimizer state and the data stream starting at the batch after the last
one trained, so an interruption (even `kill -9`) loses at most the steps
since the last checkpoint.

On one device training is `model.fit`; under a `tf.distribute` strategy
(`keras_elmo.training.distribute`) it is a small loop of `strategy.run`
steps with the same callbacks, and only the chief writes the run directory.
The parts: the options of a call and their checks (`fit_options`), the
corpus scans (`corpus_scans`), the steps to run (`step_plan`), the
callback (`training_callback`) and the held-out perplexities
(`validation`).
"""

import contextlib
import os
import time

import keras

from elmo_core.errors import KerasElmoError
from elmo_core.errors.backends import require_tensorflow
from elmo_core.formats.run_layout import LOGS_DIR
from elmo_core.formats.run_layout import VOCAB_FILE
from elmo_core.ids.vocabulary import check_vocabulary
from elmo_core.progress import say
from keras_elmo.training.cached_teacher import cached_teacher
from keras_elmo.training.compiled_model import build_model
from keras_elmo.training.compiled_model import learning_rate_schedule
from keras_elmo.training.corpus_scans import scan_data
from keras_elmo.training.corpus_scans import scan_dataset
from keras_elmo.training.distribute import DistributedLoop
from keras_elmo.training.fit_options import FitOptions
from keras_elmo.training.initialize import initialize
from keras_elmo.training.run_directory import RunDirectory
from keras_elmo.training.step_plan import continue_plan
from keras_elmo.training.step_plan import plan_steps
from keras_elmo.training.strategies import agree_on_step
from keras_elmo.training.strategies import describe
from keras_elmo.training.strategies import is_chief
from keras_elmo.training.strategies import num_replicas
from keras_elmo.training.strategies import resolve_strategy
from keras_elmo.training.threads import use_training_threads
from keras_elmo.training.training_callback import TrainingCallback
from keras_elmo.training.validation import validation


def fit_run(
    output_dir,
    config,
    vocabulary,
    options=None,
    init_from=None,
    verbose=1,
    teacher=None,
):
    """Trains (or resumes) a biLM run in `output_dir`.

    Args:
        output_dir: str. The run directory (created if needed). If it holds
            a checkpoint of the same run, training resumes from it. With
            several workers, a directory they all see (shared storage).
        config: a `elmo_core.settings.training_config.TrainingConfig`. Its
            `tokens_per_batch` is the budget of one replica: a step trains
            on `replicas` times as many tokens.
        vocabulary: a `elmo_core.ids.Vocabulary`.
        options: a `keras_elmo.training.fit_options.FitOptions` (length,
            checkpoints, validation, devices) or None, its defaults.
        init_from: a function or None: with no argument, it returns the
            `keras_elmo.sources.BiLMData` to start a new run from (e.g. a
            biLM source's `read`). Called only when the run starts anew,
            after the strategy, so a resumed run reads nothing.
        verbose: 0 or 1.
        teacher: for a run with `config.distill`, its teacher: a biLM
            source (`keras_elmo.loading.classify`), read only when the run
            has steps left to train.

    Returns:
        The trained `ELMoLanguageModel`.
    """
    started = time.monotonic()
    require_tensorflow(
        "keras-elmo train (training.fit.fit_run)", keras.backend.backend()
    )
    options = (options or FitOptions()).checked(config)
    # Before TensorFlow's runtime starts (with the strategy, next).
    threads = use_training_threads()
    # First: the multi-worker runtime starts here.
    strategy = resolve_strategy(options.strategy, options.cluster_timeout)
    options = options.for_strategy(strategy)
    verbose = verbose if is_chief(strategy) else 0
    if threads:
        say(verbose, threads)
    run = RunDirectory(output_dir)
    run.check_same_run(config)
    scans = scan_data(config, num_replicas(strategy), verbose)
    _say_strategy(strategy, config, verbose)
    saved_plan = run.read_plan() if run.is_run() else None
    plan = plan_steps(options, *scans, saved_plan, started)
    model = _build(config, plan, options.jit_compile, strategy)
    _check_vocabulary(model, vocabulary)
    plan.start_step = _restore_or_initialize(
        run, model, strategy, init_from, vocabulary, verbose
    )
    if plan.start_step >= plan.total_steps:
        _open_run(run, strategy, plan.start_step, vocabulary, config)
        say(verbose, f"{output_dir} already trained {plan.start_step:,} steps.")
        return model
    if config.distill is not None:
        _attach_teacher(model, teacher, config, plan.start_step, verbose)
    replicas = num_replicas(strategy)
    # The cache is opened (or refused) before the run directory is made.
    with cached_teacher(config, scans[0], model, replicas, verbose) as cache:
        _open_run(run, strategy, plan.start_step, vocabulary, config)
        continue_plan(plan, verbose)
        _fit(model, run, plan, config, scans[0], vocabulary, strategy,
             verbose, cache)  # fmt: skip
    return model


def _say_strategy(strategy, config, verbose):
    if strategy is not None:
        replicas = num_replicas(strategy)
        say(
            verbose,
            f"{describe(strategy)}: {replicas} replica(s), global "
            f"batches of {replicas} x {config.tokens_per_batch:,} tokens",
        )


def _build(config, plan, jit_compile, strategy):
    """The model, built under the strategy's scope; its learning-rate
    schedule joins the plan if a plan can move it."""
    # The seed reaches the initial weights too (Keras draws unseeded
    # initializers' seeds from Python's generator), so that two runs with
    # the same seed and flags start, and end, alike.
    keras.utils.set_random_seed(config.seed)
    with strategy.scope() if strategy else contextlib.nullcontext():
        schedule = learning_rate_schedule(config, plan.total_steps)
        model = build_model(
            config,
            plan.total_steps,
            jit_compile,
            schedule,
            replicas=num_replicas(strategy),
        )
    plan.schedule = schedule if hasattr(schedule, "replan") else None
    return model


def _check_vocabulary(model, vocabulary):
    if model.bilm.encoder.needs_vocabulary:
        # A word-input biLM reads the vocabulary as its input ids too.
        check_vocabulary(vocabulary, model.bilm.encoder)


def _restore_or_initialize(
    run, model, strategy, init_from, vocabulary, verbose
):
    """The step training starts from: a checkpoint's, or 0 after copying
    the `init_from` weights (if any)."""
    start_step = run.restore_checkpoint(model, num_replicas(strategy))
    if start_step is not None:
        run.check_vocabulary(vocabulary)
        say(verbose, f"resuming {run.path} from step {start_step:,}")
        return start_step
    if init_from is not None:
        source = init_from()
        what = initialize(model, vocabulary, source)
        say(verbose, f"initialised the {what} from {source.description}")
    return 0


def _attach_teacher(model, teacher, config, start_step, verbose):
    """Reads the teacher of a distilled run, in the run's precision; a run
    that starts copies the teacher's character layers it asks for."""
    from elmo_core.settings.training_config import MIXED_PRECISION
    from keras_elmo.training.teacher_start import start_from_teacher

    if teacher is None:
        raise KerasElmoError(
            "This run distils a teacher biLM ("
            f"{config.distill['teacher']}): give it as `teacher`.",
            "teacher",
        )
    if start_step == 0:
        start = start_from_teacher(
            model.bilm,
            teacher.read().bilm,
            config.distill["from_teacher"],
            teacher.description,
        )
        if start:
            say(verbose, start)
    dtype = MIXED_PRECISION[config.mixed_precision]
    bilm = teacher.load_bilm(**({"dtype": dtype} if dtype else {}))
    model.attach_teacher(bilm, teacher.read().vocabulary)
    say(
        verbose,
        f"teacher: {teacher.description} ({bilm.count_params():,} weights, "
        f"{bilm.num_layers + 1} layers of {2 * bilm.projection_dim}), "
        f"student: {model.bilm.count_params():,} weights",
    )


def _open_run(run, strategy, start_step, vocabulary, config):
    """Creates the run directory (only now, so that a run refused above
    leaves nothing behind) and writes what it was trained with."""
    os.makedirs(run.path, exist_ok=True)
    # With several workers, also the point after which the chief writes.
    agree_on_step(strategy, start_step)
    if is_chief(strategy):
        vocabulary.save(run.file(VOCAB_FILE))
        run.write_config(config)


def _fit(model, run, plan, config, scan, vocabulary, strategy, verbose, cache):
    """Runs the steps of `plan`, with checkpoints and validation; `cache`:
    the run's `CachedTeacher`, or None."""
    loop = None if strategy is None else DistributedLoop(model, strategy)
    chief = is_chief(strategy)
    if model.jit_compile:
        say(
            verbose,
            "XLA: the step is compiled once per batch shape "
            "(batches are padded to their length bucket)",
        )
    dataset = scan_dataset(
        strategy,
        scan,
        vocabulary,
        model,
        seed=config.seed,
        start_step=plan.start_step,
        window_length=config.window_length,
        teacher_cache=cache,
    )
    validate = validation(
        plan.validation_scan, strategy, loop, model, vocabulary
    )
    replicas = num_replicas(strategy)
    callbacks = [
        TrainingCallback(run, plan, validate, verbose, chief, replicas)
    ]
    if chief:
        callbacks.append(keras.callbacks.TensorBoard(run.file(LOGS_DIR)))
    say(verbose, plan.describe())
    if loop is None:
        # The dataset shuffles itself, reproducibly.
        model.fit(
            dataset,
            shuffle=False,
            callbacks=callbacks,
            verbose=0,
            **plan.fit_chunks(),
        )
    else:
        loop.fit(dataset, callbacks, **plan.fit_chunks())
