"""Which steps a call of `train` runs: from the step it resumes at to the
last one, fixed by `steps` or `epochs` or planned by a time budget.

A time budget's last step is unknown until the speed is measured
(`elmo_core.settings.time_budget`); until its first plan the run counts
towards `UNPLANNED_STEPS`, or towards the last step an interrupted
earlier part of the run saved in its plan.
"""

import dataclasses
import math
import time

from elmo_core.progress import say
from elmo_core.settings.time_budget import TimeBudget

# The last step of a time-budget run before its first plan: a bound that
# no run reaches, so that the measured plan decides.
UNPLANNED_STEPS = 10**12


@dataclasses.dataclass
class StepPlan:
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
    # The plan an earlier part of the run saved (None: none), and whether
    # this call sets the length itself (`epochs` or `steps`).
    saved: object = None
    length_given: bool = False

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

    def describe(self):
        """What the run trains, in a line."""
        if self.budget is not None and not self.budget.planned:
            steps = (
                f"training from step {self.start_step + 1:,} for a time "
                f"budget of {self.budget.seconds / 60:.1f} min (the last "
                "step is planned once the speed is measured)"
            )
        else:
            epochs = self.total_steps / self.steps_per_epoch
            steps = (
                f"training steps {self.start_step + 1:,}.."
                f"{self.total_steps:,} ({epochs:.2f} epochs)"
            )
        return f"{steps}, checkpoint every {self.checkpoint_every} steps"


def plan_steps(options, scan, validation_scan, saved_plan, started):
    """The `StepPlan` of a call of `train` with the `FitOptions`
    `options`, on the scanned files, resumed from `saved_plan` (None: a
    new run); it starts at step 0 until a checkpoint says otherwise.
    `started`: `time.monotonic()` at the call's start, from which a time
    budget counts (the scan too)."""
    budget = _start_budget(options.time_budget, saved_plan, started)
    last_step = _total_steps(
        options.epochs, options.steps, scan, saved_plan, budget
    )
    return StepPlan(
        start_step=0,
        total_steps=last_step,
        steps_per_epoch=scan.steps_per_epoch,
        validate_every=options.validate_every or scan.steps_per_epoch,
        checkpoint_every=int(options.checkpoint_every),
        validation_scan=validation_scan,
        budget=budget,
        saved=saved_plan,
        length_given=options.length_given,
    )


def _start_budget(time_budget, saved_plan, started):
    """The `TimeBudget` of `time_budget` seconds (None: no budget), after
    what an interrupted earlier part of the run spent."""
    if time_budget is None:
        return None
    spent = saved_plan["spent_s"] if saved_plan else 0.0
    return TimeBudget(time_budget, spent + time.monotonic() - started)


def _total_steps(epochs, steps, scan, saved_plan, budget):
    """The last step: from `steps` or `epochs`; a time budget plans it
    (until then, its saved plan's or `UNPLANNED_STEPS`); resumed without
    any of them, a budget run finishes its saved plan."""
    if budget is not None:
        return saved_plan["total_steps"] if saved_plan else UNPLANNED_STEPS
    if steps is None and epochs is None and saved_plan:
        return saved_plan["total_steps"]
    return int(steps or math.ceil((epochs or 1) * scan.steps_per_epoch))


def continue_plan(plan, verbose):
    """A resumed time-budget run goes on with its saved decay (and, with a
    budget, the seconds its earlier part left)."""
    saved = plan.saved
    if saved is None or plan.start_step == 0:
        return
    if plan.schedule is not None and saved["schedule"] is not None:
        plan.schedule.restore(saved["schedule"])
        if plan.length_given:
            plan.schedule.replan(plan.start_step, plan.total_steps)
    if plan.budget is not None:
        left = plan.budget.seconds - plan.budget.spent()
        say(
            verbose,
            f"time budget: {left / 60:.1f} of "
            f"{plan.budget.seconds / 60:.1f} min left after the earlier "
            f"part of the run; planned last step {plan.total_steps:,} "
            "until measured again",
        )
