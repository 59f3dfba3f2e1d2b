"""The callback of a training run: checkpoints, validation, progress
lines, the time budget's plans and the stop at the last step.

`keras_elmo.training.fit.fit_run` passes it to `model.fit` (one device) or
to the distributed loop (`keras_elmo.training.distribute`) alike.
"""

import time

import keras

from elmo_core.progress import Progress

# A plan between checkpoints is printed when it moves the last step by
# more than this share.
REPLAN_NOTICE = 0.02


class TrainingCallback(keras.callbacks.Callback):
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
        if "layer_loss" in logs:  # a distilled student's
            values.append(("layer loss", float(logs["layer_loss"])))
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
        done = self.step >= self.total_steps
        if done:
            self._finalize_weights()
        if self.chief:
            self.run.save_checkpoint(self.model, self.step, self.num_replicas)
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

    def _finalize_weights(self):
        """After the last step: the weights become their moving average,
        where the optimizer keeps one (`--weight-average`), before the
        last checkpoint and the last held-out evaluation. (Keras does the
        same again at the end of `fit`, with no effect.)"""
        self.model.optimizer.finalize_variable_values(
            self.model.trainable_variables
        )

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
        `elmo_core.settings.time_budget`); `quiet`: says so only if the
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
