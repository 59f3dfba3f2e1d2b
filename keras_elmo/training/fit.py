"""Pretraining runs: `fit` with resumable checkpoints, and evaluation.

`train` trains (or resumes) a run in a run directory
(`keras_elmo.training.run_directory`): running the same training again on
the same directory resumes from the checkpoint, with the same weights, the same
optimizer state and the data stream starting at the batch after the last
one trained, so an interruption (even `kill -9`) loses at most the steps
since the last checkpoint.

On one device training is `model.fit`; under a `tf.distribute` strategy
(`keras_elmo.training.distribute`) it is a small loop of `strategy.run`
steps with the same callbacks, and only the chief writes the run directory.
"""

import contextlib
import dataclasses
import math
import os
import statistics
import time

import keras

from keras_elmo.backend import require_tensorflow
from keras_elmo.data.datasets import lm_dataset
from keras_elmo.data.datasets import resolve_files
from keras_elmo.data.datasets import scan_corpus
from keras_elmo.data.vocabulary import check_vocabulary
from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import check_integer
from keras_elmo.errors import check_number
from keras_elmo.formats.run_layout import LOGS_DIR
from keras_elmo.formats.run_layout import VOCAB_FILE
from keras_elmo.progress import Progress
from keras_elmo.progress import batch_callback
from keras_elmo.training.distribute import DistributedLoop
from keras_elmo.training.distribute import agree_on_step
from keras_elmo.training.distribute import describe
from keras_elmo.training.distribute import distribute_lm_dataset
from keras_elmo.training.distribute import is_chief
from keras_elmo.training.distribute import num_replicas
from keras_elmo.training.distribute import resolve_strategy
from keras_elmo.training.initialize import initialize
from keras_elmo.training.run_directory import RunDirectory
from keras_elmo.training.run_directory import load_run
from keras_elmo.training.time_budget import MINIMUM_BUDGET_S
from keras_elmo.training.time_budget import TimeBudget
from keras_elmo.training.training_config import DEFAULT_CHECKPOINT_EVERY
from keras_elmo.training.training_config import DEFAULT_CLUSTER_TIMEOUT
from keras_elmo.training.training_config import JIT_COMPILE
from keras_elmo.training.training_config import build_model
from keras_elmo.training.training_config import learning_rate_schedule

# A plan between checkpoints is printed when it moves the last step by
# more than this share.
REPLAN_NOTICE = 0.02


class _Training(keras.callbacks.Callback):
    """Checkpoints, validation, progress lines and the stop at the last step.

    `fit` runs in chunks of `checkpoint_every` steps (one Keras "epoch"
    each), so a checkpoint always falls on a chunk boundary and a resumed
    run lines up with the uninterrupted one. `validate` returns held-out
    perplexities (None: no validation); only the `chief` writes files.
    """

    def __init__(self, run, plan, validate, verbose, chief, num_replicas):
        super().__init__()
        self.run = run
        self.step = plan.start_step
        self.total_steps = plan.total_steps
        self.budget = plan.budget
        self.schedule = plan.schedule
        self.validation_batches = plan.validation_batches
        self.steps_per_epoch = plan.steps_per_epoch
        self.validate_every = plan.validate_every
        self.validate = validate
        self.verbose = verbose
        self.chief = chief
        self.num_replicas = num_replicas
        self.history = run.read_history()
        self.elapsed = self.history[-1]["elapsed_s"] if self.history else 0.0

    def on_train_begin(self, logs=None):
        self.started = time.time()
        self._restart_progress()

    def _restart_progress(self):
        # A bar on a terminal, else a line every LOG_INTERVAL seconds; the
        # speed is measured from here (validation time excluded). A time
        # budget's last step is unknown until its first plan.
        unplanned = self.budget is not None and not self.budget.planned
        self.progress = Progress(
            None if unplanned else self.total_steps,
            "step",
            self.verbose,
            label="train",
        )

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        logs = logs or {}
        values = [
            ("epoch", self.step / self.steps_per_epoch),
            ("loss", float(logs.get("loss", float("nan")))),
            ("sampled ppl", float(logs.get("perplexity", float("nan")))),
        ]
        self.progress.update(self.step, values)
        if self.budget is not None:
            self.budget.step_done(self.step)
            if not self.budget.planned and self.budget.ready():
                self._time_validation()
                self._replan()
            elif self.budget.planned and self.budget.due():
                self._replan(quiet=True)
        if self.step >= self.total_steps:
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        if self.chief:
            self.run.save_checkpoint(self.model, self.step, self.num_replicas)
        done = self.step >= self.total_steps
        if self.validate is not None:
            last = self.history[-1]["step"] if self.history else 0
            if done or self.step - last >= self.validate_every:
                self._validate(logs or {})
        if self.budget is not None:
            if not done:
                self._replan()
            if self.chief:
                state = self.schedule.state() if self.schedule else None
                spent = self.budget.spent()
                self.run.write_plan(self.total_steps, spent, state)

    def _time_validation(self):
        """Before the first plan: times a few held-out batches, so that
        the plan counts the evaluations at their measured length."""
        if self.validate is None:
            return
        self.budget.evaluation_started()
        per_batch = self.validate.seconds_per_batch()
        estimate = None
        if per_batch is not None:
            estimate = per_batch * self.validation_batches
        self.budget.evaluation_done(estimate)

    def _replan(self, quiet=False):
        """Plans the last step again from the measured speed (see
        `keras_elmo.training.time_budget`); `quiet`: says so only if the
        plan moved by more than `REPLAN_NOTICE`."""
        last = self.history[-1]["step"] if self.history else 0
        planned = self.budget.plan(
            self.step,
            self.validate_every if self.validate is not None else None,
            self.validation_batches,
            last,
        )
        if planned is None:
            return
        before = self.total_steps
        self.total_steps, reason = planned
        if self.schedule is not None:
            self.schedule.replan(self.step, self.total_steps)
        epochs = self.total_steps / self.steps_per_epoch
        moved = abs(self.total_steps - before) > REPLAN_NOTICE * before
        if quiet and not moved:
            # The progress line counts to the new last step (not past an
            # old one, which made it print every step over 100 %).
            self.progress.total = self.total_steps
            return
        if self.verbose:
            if self.progress.terminal:
                print(flush=True)  # below the training bar
            print(f"{reason} ({epochs:.2f} epochs)", flush=True)
        self._restart_progress()

    def _validate(self, train_logs):
        start = time.time()
        self.elapsed += start - self.started
        if self.verbose and self.progress.terminal:
            print(flush=True)  # below the training bar
        if self.budget is not None:
            self.budget.evaluation_started()
        results = self.validate(self.verbose)
        if self.budget is not None:
            self.budget.evaluation_done()
        self.started = time.time()
        self._restart_progress()
        entry = {
            "step": self.step,
            "epoch": round(self.step / self.steps_per_epoch, 3),
            "train_perplexity_sampled": float(
                train_logs.get("perplexity", float("nan"))
            ),
            "valid_forward_perplexity": results["forward_perplexity"],
            "valid_backward_perplexity": results["backward_perplexity"],
            "valid_perplexity": results["perplexity"],
            "elapsed_s": round(self.elapsed, 1),
        }
        self.history.append(entry)
        if self.chief:
            self.run.write_history(self.history)
        if self.verbose:
            print(
                f"validation at step {self.step:,} (epoch "
                f"{entry['epoch']:.2f}): perplexity "
                f"{entry['valid_perplexity']:.1f} (forward "
                f"{entry['valid_forward_perplexity']:.1f}, backward "
                f"{entry['valid_backward_perplexity']:.1f}) "
                f"[{time.time() - start:.0f}s]",
                flush=True,
            )


@dataclasses.dataclass
class _Plan:
    """Which steps a call of `train` runs."""

    start_step: int
    total_steps: int
    steps_per_epoch: int
    validate_every: int
    checkpoint_every: int
    # The scanned held-out files, or None.
    validation_scan: object = None
    # A `TimeBudget` (None: the length is fixed) and the learning-rate
    # schedule whose decay it moves (None: a constant rate).
    budget: object = None
    schedule: object = None

    @property
    def validation_batches(self):
        scan = self.validation_scan
        return scan.steps_per_epoch if scan is not None else 0

    def fit_chunks(self):
        """`fit` arguments: one Keras epoch per checkpoint interval."""
        chunk = self.checkpoint_every
        return dict(
            initial_epoch=self.start_step // chunk,
            epochs=math.ceil(self.total_steps / chunk),
            steps_per_epoch=chunk,
        )


def _log(verbose, message):
    if verbose:
        print(message, flush=True)


def _scan(config, files, replicas, what, verbose):
    """Scans `files` for global batches of `replicas` x the config's token
    budget, and reports what it found."""
    scan = scan_corpus(
        files,
        max_length=config.max_length,
        tokens_per_batch=config.tokens_per_batch * replicas,
        on_bad_line=config.on_bad_line,
    )
    for line in scan.summary():
        _log(verbose, f"{what} data: {line}")
    return scan


def _scan_data(config, replicas, verbose):
    """`(training scan, validation scan or None)`: every input file is read
    before anything is written, so that a bad one fails the run at once."""
    scan = _scan(config, config.train_files, replicas, "training", verbose)
    if not config.validation_files:
        return scan, None
    files = config.validation_files
    return scan, _scan(config, files, replicas, "validation", verbose)


def _lm_dataset(strategy, scan, vocabulary, **kwargs):
    if strategy is None:
        return lm_dataset(scan, vocabulary, **kwargs)
    return distribute_lm_dataset(strategy, scan, vocabulary, **kwargs)


def _check_time_budget(time_budget, epochs, steps, strategy):
    """A budget (seconds) replaces `epochs` and `steps`, and is planned by
    one process."""
    if time_budget is None:
        return None
    seconds = check_number(
        time_budget,
        "time_budget",
        where="`time_budget` (seconds)",
        minimum=MINIMUM_BUDGET_S,
    )
    if epochs is not None or steps is not None:
        given = "`epochs`" if epochs is not None else "`steps`"
        raise KerasElmoError(
            "`time_budget` sets the length of the run, and so do `epochs` "
            f"and `steps`; give one (here {given} is given too).",
            "time_budget",
            received=time_budget,
        )
    if describe(strategy) == "MultiWorkerMirroredStrategy":
        raise KerasElmoError(
            "`time_budget` is not supported with several workers yet (each "
            "would plan its own last step); give `steps`.",
            "time_budget",
            received=time_budget,
        )
    return seconds


def _check_arguments(checkpoint_every, jit_compile, epochs, steps):
    check_integer(checkpoint_every, "checkpoint_every", minimum=1)
    if jit_compile not in JIT_COMPILE.values():
        raise KerasElmoError(
            "`jit_compile` must be True, False or 'auto'.",
            "jit_compile",
            received=jit_compile,
            expected="True, False or 'auto'",
        )
    if epochs is not None:
        check_number(epochs, "epochs", minimum=0, above=True)
    if steps is not None:
        check_integer(steps, "steps", minimum=1)


def _check_validate_every(validate_every, checkpoint_every, config):
    """Validation runs at checkpoints: `validate_every` must be a multiple
    of `checkpoint_every`, and needs held-out files."""
    if validate_every is None:
        return
    validate_every = check_integer(validate_every, "validate_every", minimum=1)
    if not config.validation_files:
        raise KerasElmoError(
            "`validate_every` needs held-out files to validate on: give "
            "`validation_files`, or leave `validate_every` out.",
            "validate_every",
            received=validate_every,
        )
    if validate_every % int(checkpoint_every):
        multiple = round(validate_every / checkpoint_every) or 1
        raise KerasElmoError(
            "`validate_every` must be a multiple of `checkpoint_every`: "
            "validation runs at checkpoints. Use a multiple, e.g. "
            f"`validate_every` {multiple * checkpoint_every}, or "
            f"`checkpoint_every` {validate_every} (`checkpoint_every` is "
            f"{checkpoint_every}).",
            "validate_every",
            received=validate_every,
        )


def _resolve_jit(strategy, jit_compile):
    """XLA is not used by the distributed loop."""
    if strategy is None:
        return jit_compile
    if jit_compile is True:
        raise KerasElmoError(
            "`jit_compile` is not supported with a distribution strategy "
            f"({describe(strategy)}): the distributed loop runs without "
            "XLA. Leave one of `jit_compile` and `strategy` out.",
            "jit_compile",
            received=jit_compile,
        )
    return False


def _restore_or_initialize(
    run, model, replicas, init_from, vocabulary, verbose
):
    """The step training starts from: a checkpoint's, or 0 after copying
    the `init_from` weights (if any)."""
    start_step = run.restore_checkpoint(model, replicas)
    if start_step is not None:
        run.check_vocabulary(vocabulary)
        _log(verbose, f"resuming {run.path} from step {start_step:,}")
        return start_step
    if init_from is not None:
        source = init_from()
        what = initialize(model, vocabulary, source)
        _log(verbose, f"initialised the {what} from {source.description}")
    return 0


def _validation(scan, strategy, loop, model, vocabulary):
    """A function returning held-out perplexities on the scanned validation
    files, or None."""
    if scan is None:
        return None
    dataset = _lm_dataset(
        strategy,
        scan,
        vocabulary,
        shuffle=False,
        repeat=False,
        pad_to_bucket=bool(model.jit_compile),
        token_encoder=model.bilm.token_encoder,
    )

    def evaluate(data, steps, progress):
        if loop is None:
            return model.evaluate(
                data,
                verbose=0,
                return_dict=True,
                callbacks=[batch_callback(progress)],
            )
        return loop.evaluate(data, steps, progress)

    def validate(verbose):
        progress = Progress(
            scan.steps_per_epoch, "batch", verbose, label="validation"
        )
        return evaluate(dataset, scan.steps_per_epoch, progress)

    def seconds_per_batch():
        """One held-out batch's seconds: the median over a few batches
        after the first (a batch of a new length may trace the evaluation
        step again; the median leaves such a batch out)."""
        batches = min(VALIDATION_PROBE_BATCHES, scan.steps_per_epoch)
        if batches < 2:
            return None
        clock = _Clock()
        # The distributed loop stops after `batches` by itself.
        part = dataset.take(batches) if loop is None else dataset
        evaluate(part, batches, clock)
        return clock.seconds_per_update()

    validate.seconds_per_batch = seconds_per_batch
    return validate


# Held-out batches timed for a time budget's first plan.
VALIDATION_PROBE_BATCHES = 6


class _Clock:
    """Notes when each batch ends (a `Progress` for `evaluate`)."""

    def __init__(self):
        self.times = []

    def update(self, done, values=None):
        self.times.append(time.monotonic())

    def seconds_per_update(self):
        return statistics.median(
            later - earlier
            for earlier, later in zip(self.times, self.times[1:])
        )


def train(
    output_dir,
    config,
    vocabulary,
    epochs=None,
    steps=None,
    checkpoint_every=DEFAULT_CHECKPOINT_EVERY,
    validate_every=None,
    init_from=None,
    verbose=1,
    strategy="auto",
    cluster_timeout=DEFAULT_CLUSTER_TIMEOUT,
    jit_compile="auto",
    time_budget=None,
):
    """Trains (or resumes) a biLM run in `output_dir`.

    Args:
        output_dir: str. The run directory (created if needed). If it holds
            a checkpoint of the same run, training resumes from it. With
            several workers, a directory they all see (shared storage).
        config: a `keras_elmo.training.training_config.TrainingConfig`. Its
            `tokens_per_batch` is the budget of one replica: a step trains
            on `replicas` times as many tokens.
        vocabulary: a `keras_elmo.data.Vocabulary`.
        epochs: float or None. Passes over the training data, counted from
            the data itself. Defaults to 1 when `steps` is None too.
        steps: int or None. Total steps instead of epochs.
        checkpoint_every: int. Steps between checkpoints.
        validate_every: int or None. Steps between held-out evaluations
            (at the next checkpoint); None means once an epoch.
        init_from: a function or None: with no argument, it returns the
            `keras_elmo.sources.BiLMData` to start a new run from (e.g. a
            biLM source's `read`). Called only when the run starts anew,
            after the strategy, so a resumed run reads nothing.
        verbose: 0 or 1.
        strategy: str, `tf.distribute.Strategy` or None. A name of
            `keras_elmo.training.distribute.STRATEGIES` ("auto": several
            workers or GPUs if there are, else one device), a strategy, or
            None for one device with `model.fit`. Defaults to `"auto"`.
        cluster_timeout: float. With several workers: seconds to wait for
            the others (at start-up and in each step) before an error.
        jit_compile: bool or "auto". Compile the training step with XLA
            (batches are then padded to their length bucket, so that few
            shapes are compiled). "auto" (default) follows Keras: XLA with
            a GPU, not on a CPU. Not with a strategy.
        time_budget: float or None. Seconds of wall time for the whole
            call, evaluations included, instead of `epochs` or `steps`:
            the last step is planned from the measured speed (see
            `keras_elmo.training.time_budget`). A resumed run goes on with
            the seconds its earlier part left.

    Returns:
        The trained `ELMoLanguageModel`.
    """
    started = time.monotonic()
    require_tensorflow("keras-elmo train (training.fit.train)")
    _check_arguments(checkpoint_every, jit_compile, epochs, steps)
    _check_validate_every(validate_every, checkpoint_every, config)
    # First: the multi-worker runtime starts here.
    strategy = resolve_strategy(strategy, cluster_timeout)
    time_budget = _check_time_budget(time_budget, epochs, steps, strategy)
    jit_compile = _resolve_jit(strategy, jit_compile)
    replicas = num_replicas(strategy)
    verbose = verbose if is_chief(strategy) else 0
    run = RunDirectory(output_dir)
    run.check_same_run(config)
    scan, validation_scan = _scan_data(config, replicas, verbose)
    if strategy is not None:
        _log(
            verbose,
            f"{describe(strategy)}: {replicas} replica(s), global "
            f"batches of {replicas} x {config.tokens_per_batch:,} tokens",
        )
    saved_plan = run.read_plan() if run.is_run() else None
    budget = None
    if time_budget is not None:
        # Counted from this call's start (the scan too), after what an
        # interrupted earlier part of the run spent.
        spent = saved_plan["spent_s"] if saved_plan else 0.0
        budget = TimeBudget(time_budget, spent + time.monotonic() - started)
    total_steps = _total_steps(epochs, steps, scan, saved_plan, budget)
    # The seed reaches the initial weights too (Keras draws unseeded
    # initializers' seeds from Python's generator), so that two runs with
    # the same seed and flags start, and end, alike.
    keras.utils.set_random_seed(config.seed)
    with strategy.scope() if strategy else contextlib.nullcontext():
        schedule = learning_rate_schedule(config, total_steps)
        model = build_model(config, total_steps, jit_compile, schedule)
    schedule = schedule if hasattr(schedule, "replan") else None
    if model.bilm.encoder.needs_vocabulary:
        # A word-input biLM reads the vocabulary as its input ids too.
        check_vocabulary(vocabulary, model.bilm.encoder)
    start_step = _restore_or_initialize(
        run, model, replicas, init_from, vocabulary, verbose
    )
    # Created only now, so that a run refused above leaves nothing behind.
    os.makedirs(output_dir, exist_ok=True)
    # With several workers, also the point after which the chief writes.
    agree_on_step(strategy, start_step)
    if is_chief(strategy):
        vocabulary.save(run.file(VOCAB_FILE))
        run.write_config(config)
    if start_step >= total_steps:
        _log(verbose, f"{output_dir} already trained {start_step:,} steps.")
        return model
    plan = _Plan(
        start_step=start_step,
        total_steps=total_steps,
        steps_per_epoch=scan.steps_per_epoch,
        validate_every=validate_every or scan.steps_per_epoch,
        checkpoint_every=int(checkpoint_every),
        validation_scan=validation_scan,
        budget=budget,
        schedule=schedule,
    )
    _continue_plan(plan, saved_plan, epochs, steps, verbose)
    _fit(model, run, plan, config, scan, vocabulary, strategy, verbose)
    return model


# The last step of a time-budget run before its first plan: a bound that
# no run reaches, so that the measured plan decides.
UNPLANNED_STEPS = 10**12


def _total_steps(epochs, steps, scan, saved_plan, budget):
    """The last step: from `steps` or `epochs`; a time budget plans it
    (until then, its saved plan's or `UNPLANNED_STEPS`); resumed without
    any of them, a budget run finishes its saved plan."""
    if budget is not None:
        return saved_plan["total_steps"] if saved_plan else UNPLANNED_STEPS
    if steps is None and epochs is None and saved_plan:
        return saved_plan["total_steps"]
    return int(steps or math.ceil((epochs or 1) * scan.steps_per_epoch))


def _continue_plan(plan, saved_plan, epochs, steps, verbose):
    """A resumed time-budget run goes on with its saved decay (and, with a
    budget, the seconds its earlier part left)."""
    if saved_plan is None or plan.start_step == 0:
        return
    if plan.schedule is not None and saved_plan["schedule"] is not None:
        plan.schedule.restore(saved_plan["schedule"])
        if epochs is not None or steps is not None:
            plan.schedule.replan(plan.start_step, plan.total_steps)
    if plan.budget is not None:
        left = plan.budget.seconds - plan.budget.spent()
        _log(
            verbose,
            f"time budget: {left / 60:.1f} of "
            f"{plan.budget.seconds / 60:.1f} min left after the earlier "
            f"part of the run; planned last step {plan.total_steps:,} "
            "until measured again",
        )


def _fit(model, run, plan, config, scan, vocabulary, strategy, verbose):
    """Runs the steps of `plan`, with checkpoints and validation."""
    loop = None if strategy is None else DistributedLoop(model, strategy)
    chief = is_chief(strategy)
    if model.jit_compile:
        _log(
            verbose,
            "XLA: the step is compiled once per batch shape "
            "(batches are padded to their length bucket)",
        )
    dataset = _lm_dataset(
        strategy,
        scan,
        vocabulary,
        seed=config.seed,
        start_step=plan.start_step,
        pad_to_bucket=bool(model.jit_compile),
        token_encoder=model.bilm.token_encoder,
    )
    validate = _validation(
        plan.validation_scan, strategy, loop, model, vocabulary
    )
    replicas = num_replicas(strategy)
    callbacks = [_Training(run, plan, validate, verbose, chief, replicas)]
    if chief:
        callbacks.append(keras.callbacks.TensorBoard(run.file(LOGS_DIR)))
    if plan.budget is not None and not plan.budget.planned:
        steps = (
            f"training from step {plan.start_step + 1:,} for a time budget "
            f"of {plan.budget.seconds / 60:.1f} min (the last step is "
            "planned once the speed is measured)"
        )
    else:
        epochs = plan.total_steps / scan.steps_per_epoch
        steps = (
            f"training steps {plan.start_step + 1:,}..{plan.total_steps:,} "
            f"({epochs:.2f} epochs)"
        )
    _log(verbose, f"{steps}, checkpoint every {plan.checkpoint_every} steps")
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


def evaluate(model_dir, data_patterns, verbose=1):
    """Held-out perplexity of a trained run (full softmax, stateless).

    Returns a dict with `perplexity`, `forward_perplexity`,
    `backward_perplexity`, `tokens` and `sentences`.
    """
    require_tensorflow("keras-elmo evaluate (training.fit.evaluate)")
    model, vocabulary, config = load_run(model_dir)
    files = resolve_files(data_patterns)
    scan = _scan(config, files, 1, "evaluation", verbose)
    dataset = lm_dataset(
        scan,
        vocabulary,
        shuffle=False,
        repeat=False,
        pad_to_bucket=bool(model.jit_compile),
        token_encoder=model.bilm.token_encoder,
    )
    progress = Progress(
        scan.steps_per_epoch, "batch", verbose, label="evaluation"
    )
    results = model.evaluate(
        dataset,
        verbose=0,
        return_dict=True,
        callbacks=[batch_callback(progress)],
    )
    results = {k: float(v) for k, v in results.items()}
    results.update(tokens=scan.num_tokens, sentences=scan.num_sentences)
    return results
