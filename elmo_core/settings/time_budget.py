"""A time budget: how many steps a run trains so that it ends in time.

`keras-elmo train --time-budget 15m` trains for as many steps as the
machine it runs on allows within 15 minutes of wall time, counted from the
start of training (the corpus scan and the model build included), with the
held-out evaluations and a final one inside the budget. It measures instead
of guessing:

1. after the first steps (which trace and compile the step and are not
   timed), it times `FIRST_PLAN_STEPS` steps and at least
   `FIRST_PLAN_SECONDS` seconds (or fewer, once half the budget is spent
   or at the first checkpoint), and plans the last step: the time left,
   less a `SAFETY_FRACTION` margin and the evaluations still to come,
   divided by the seconds a step takes;
2. every `REPLAN_SECONDS` of training and at every checkpoint it plans
   again from the speed since the last plan (a shared machine slows down
   and speeds up) and the measured length of the last evaluation, so the
   run still ends in time; the learning rate decays to zero at the
   planned step (`WarmupDecay.replan`). A plan soon after another (a
   checkpoint a few steps after a timed plan) measures the speed over
   both stretches: a few steps and one pause (writing the checkpoint,
   refilling the shuffle buffer at an epoch's start) are no speed.

Before the first plan the training loop times a few held-out batches
(their full softmax costs more than the training step's sampled one);
where it cannot, a held-out batch is taken to cost `VALIDATION_STEP_RATIO`
training steps until an evaluation has been timed.

Pure Python: the plan is arithmetic on measured times, tested without
TensorFlow.
"""

import math
import re
import time

from elmo_core.errors import KerasElmoError

# Duration units of `--time-budget`.
UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
# A budget shorter than this cannot measure the speed and train.
MINIMUM_BUDGET_S = 30.0
# A budget longer than a (leap) year is a typo, or meant "no budget".
MAXIMUM_BUDGET_S = 366 * 24 * 3600.0
# Steps after each (re)start that trace and compile: not timed.
UNTIMED_STEPS = 3
# What the first plan waits for: timed steps, and timed seconds.
FIRST_PLAN_STEPS = 20
FIRST_PLAN_SECONDS = 15.0
# Seconds of training between two plans (and at every checkpoint).
REPLAN_SECONDS = 60.0
# A stretch since the last plan gives the speed alone from this many timed
# steps and seconds; a shorter one (a checkpoint soon after a plan) is
# measured together with the last stretch that was long enough.
MEASURED_STEPS = FIRST_PLAN_STEPS
MEASURED_SECONDS = REPLAN_SECONDS / 2
# The share of the budget kept free for what is not measured (the final
# checkpoint, a slower stretch of a shared machine).
SAFETY_FRACTION = 0.03
# Seconds of one held-out batch / seconds of one training step, before an
# evaluation has been timed (2.5 measured with the main job's 43,930-word
# full softmax against 2,048 sampled negatives, on 2 CPU cores).
VALIDATION_STEP_RATIO = 3.0


def parse_duration(text):
    """Seconds of a duration such as "15m", "900", "900s" or "1.5h"."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smh]?)\s*", str(text))
    if not match:
        raise KerasElmoError(
            "`time_budget` must be a duration such as 15m, 900s or 1.5h.",
            "time_budget",
            received=text,
            expected="a duration such as 15m, 900s or 1.5h",
        )
    seconds = float(match.group(1)) * UNITS[match.group(2) or "s"]
    if not math.isfinite(seconds) or seconds > MAXIMUM_BUDGET_S:
        raise KerasElmoError(
            "`time_budget` is too long: at most "
            f"{MAXIMUM_BUDGET_S / 3600:.0f}h (a year). Leave it out to "
            "train for `epochs` or `steps` instead.",
            "time_budget",
            received=text,
        )
    if seconds < MINIMUM_BUDGET_S:
        raise KerasElmoError(
            "`time_budget` is too short: the run needs at least "
            f"{MINIMUM_BUDGET_S:.0f}s to measure its speed and train. Give "
            "a longer budget, or `steps` for a fixed number of steps.",
            "time_budget",
            received=text,
        )
    return seconds


def format_duration(seconds):
    """Seconds as "14.6 min" or "45 s"."""
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s"


class TimeBudget:
    """Plans the last step of a run from its measured speed.

    The callback of the fit loop reports each finished step
    (`step_done`), each evaluation (`evaluation_started`,
    `evaluation_done`), and asks for a plan (`plan`) once `ready`, then at
    every checkpoint.

    Args:
        seconds: float. The budget (wall time).
        spent: float. Seconds of the budget an interrupted earlier part of
            the run used already.
        clock: a function returning seconds. Defaults to `time.monotonic`.
    """

    def __init__(self, seconds, spent=0.0, clock=time.monotonic):
        self.seconds = float(seconds)
        self.clock = clock
        self.started = clock() - float(spent)
        self.validation_seconds = None
        self.planned = False
        # The first steps trace and compile: the window opens after them.
        self.untimed_left = UNTIMED_STEPS
        # Marks, (time, step): the start of the stretch since the last plan
        # (the step before its first timed one), and of the last stretch
        # long enough to measure (see `seconds_per_step`); None before.
        self.window = None
        self.measured_from = None
        self.last_step = None

    def spent(self):
        """Seconds of the budget used so far."""
        return self.clock() - self.started

    def _open_window(self, step):
        self.window = (self.clock(), step)
        self.last_step = step

    def _since(self, mark):
        """`(steps, seconds)` timed since `mark`."""
        start, first = mark
        return self.last_step - first, self.clock() - start

    def _window_measured(self):
        """Whether the stretch since the last plan timed `MEASURED_STEPS`
        steps and `MEASURED_SECONDS` seconds: its speed alone counts."""
        steps, seconds = self._since(self.window)
        return steps >= MEASURED_STEPS and seconds >= MEASURED_SECONDS

    def step_done(self, step):
        """Records that `step` just finished."""
        if self.untimed_left > 0:
            self.untimed_left -= 1
            if self.untimed_left == 0:
                self._open_window(step)
            return
        self.last_step = step

    def evaluation_started(self):
        self._evaluation_start = self.clock()

    def evaluation_done(self, estimate=None):
        """Keeps the evaluation's length for the plan (or `estimate`, the
        seconds of a whole one, after timing a part), and leaves it out
        of the speed."""
        seconds = self.clock() - self._evaluation_start
        self.validation_seconds = seconds if estimate is None else estimate
        self.window = _later(self.window, seconds)
        self.measured_from = _later(self.measured_from, seconds)

    def ready(self):
        """Whether the first plan can be made: enough steps timed, or
        half the budget spent (a slow start must not overrun it)."""
        if self.window is None:
            return False
        steps, elapsed = self._since(self.window)
        if steps < 1:
            return False
        measured = steps >= FIRST_PLAN_STEPS and elapsed >= FIRST_PLAN_SECONDS
        return measured or self.spent() >= 0.5 * self.seconds

    def due(self):
        """Whether to plan again between checkpoints: `REPLAN_SECONDS`
        and `FIRST_PLAN_STEPS` timed since the last plan."""
        if self.window is None:
            return False
        steps, elapsed = self._since(self.window)
        return steps >= FIRST_PLAN_STEPS and elapsed >= REPLAN_SECONDS

    def seconds_per_step(self):
        """The speed since the last plan, or None if not measured.

        A stretch too short to measure (`_window_measured`) is measured
        together with the last one that was long enough, when there is
        one."""
        if self.window is None or self._since(self.window)[0] < 1:
            return None
        mark = self.window
        if not self._window_measured() and self.measured_from:
            mark = self.measured_from
        steps, seconds = self._since(mark)
        return seconds / steps

    def plan(
        self,
        step,
        validate_every=None,
        validation_batches=0,
        last_validated=0,
    ):
        """The last step, and a line saying why; None when no step has
        been timed since the last plan.

        Args:
            step: int. The step just finished.
            validate_every: int or None. Steps between evaluations (None:
                no held-out data).
            validation_batches: int. Batches of one evaluation.
            last_validated: int. The step of the last evaluation.

        Returns:
            `(total_steps, reason)` or None.
        """
        per_step = self.seconds_per_step()
        if per_step is None:
            return None
        left = self.seconds * (1.0 - SAFETY_FRACTION) - self.spent()
        per_validation = 0.0
        if validate_every:
            per_validation = self.validation_seconds
            if per_validation is None:
                per_validation = (
                    VALIDATION_STEP_RATIO * validation_batches * per_step
                )

        def cost(total):
            count = _evaluations(step, total, validate_every, last_validated)
            return (total - step) * per_step + count * per_validation

        # The latest last step whose steps and evaluations fit (the cost
        # grows with the last step: a binary search).
        low, high = step + 1, step + 1 + max(int(left / per_step), 0)
        while low < high:
            middle = (low + high + 1) // 2
            if cost(middle) <= left:
                low = middle
            else:
                high = middle - 1
        total = low
        count = _evaluations(step, total, validate_every, last_validated)
        self.planned = True
        if self._window_measured():
            self.measured_from = self.window
        self._open_window(step)
        reason = (
            f"time budget: {format_duration(max(left, 0))} left, "
            f"{per_step:.2f} s a step"
        )
        if validate_every:
            reason += (
                f", {count} evaluation(s) of about "
                f"{format_duration(per_validation)}"
            )
        return total, reason + f" -> training to step {total:,}"


def _later(mark, seconds):
    """A `(time, step)` mark moved `seconds` later (None stays None)."""
    return None if mark is None else (mark[0] + seconds, mark[1])


def _evaluations(step, total, validate_every, last_validated):
    """Evaluations in steps step+1..total: one each `validate_every`
    steps after the last, and the final one."""
    if not validate_every:
        return 0
    periodic = max(0, (total - 1 - last_validated) // validate_every)
    periodic -= max(0, (step - last_validated) // validate_every)
    return periodic + 1
