"""`FitOptions`: how one call of `train` runs (its length, checkpoints,
validation and devices), and the checks of each against the others.

The checks that need no strategy run first (before the multi-worker
runtime starts); those that depend on the strategy run once it is
resolved.
"""

import dataclasses

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.settings.time_budget import MAXIMUM_BUDGET_S
from elmo_core.settings.time_budget import MINIMUM_BUDGET_S
from elmo_core.settings.training_config import DEFAULT_CHECKPOINT_EVERY
from elmo_core.settings.training_config import DEFAULT_CLUSTER_TIMEOUT
from elmo_core.settings.training_config import JIT_COMPILE
from keras_elmo.training.strategies import describe


@dataclasses.dataclass(frozen=True)
class FitOptions:
    """How one call of `keras_elmo.training.fit.fit_run` runs: what may
    change between the calls of one run (the `TrainingConfig` may not).

    Args:
        epochs: float or None. Passes over the training data, counted from
            the data itself. Defaults to 1 when `steps` is None too.
        steps: int or None. Total steps instead of epochs.
        checkpoint_every: int. Steps between checkpoints.
        validate_every: int or None. Steps between held-out evaluations
            (at the next checkpoint); None means once an epoch.
        strategy: str, `tf.distribute.Strategy` or None. A name of
            `elmo_core.settings.training_config.STRATEGIES` ("auto":
            several workers or GPUs if there are, else one device), a
            strategy, or None for one device with `model.fit`. Defaults to
            `"auto"`.
        cluster_timeout: float. With several workers: seconds to wait for
            the others (at start-up and in each step) before an error.
        jit_compile: bool or "auto". Compile the training step with XLA
            (batches are then padded to their length bucket, so that few
            shapes are compiled). "auto" (default) follows Keras: XLA with
            a GPU, not on a CPU. Not with a strategy.
        time_budget: float or None. Seconds of wall time for the whole
            call, evaluations included, instead of `epochs` or `steps`:
            the last step is planned from the measured speed (see
            `elmo_core.settings.time_budget`). A resumed run goes on with
            the seconds its earlier part left.

    Example:

    >>> from keras_elmo.training.fit_options import FitOptions
    >>> FitOptions(steps=100, checkpoint_every=50).validate_every is None
    True
    """

    epochs: object = None
    steps: object = None
    checkpoint_every: object = DEFAULT_CHECKPOINT_EVERY
    validate_every: object = None
    strategy: object = "auto"
    cluster_timeout: object = DEFAULT_CLUSTER_TIMEOUT
    jit_compile: object = "auto"
    time_budget: object = None

    def checked(self, config):
        """The options, checked against each other and the `config`'s
        files; what depends on the strategy is checked by
        `for_strategy`."""
        _check_arguments(
            self.checkpoint_every, self.jit_compile, self.epochs, self.steps
        )
        _check_validate_every(
            self.validate_every, self.checkpoint_every, config
        )
        return self

    def for_strategy(self, strategy):
        """The options with the resolved `strategy` (a strategy or None),
        the budget in seconds and XLA as the strategy allows."""
        budget = _check_time_budget(
            self.time_budget, self.epochs, self.steps, strategy
        )
        return dataclasses.replace(
            self,
            strategy=strategy,
            time_budget=budget,
            jit_compile=_resolve_jit(strategy, self.jit_compile),
        )

    @property
    def length_given(self):
        """Whether `epochs` or `steps` sets the length of the run."""
        return self.epochs is not None or self.steps is not None


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
        maximum=MAXIMUM_BUDGET_S,
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
