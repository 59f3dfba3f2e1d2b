"""The checks of how a call of `train` runs: its length, checkpoints,
validation, XLA and time budget, each against the others.

The checks that need no strategy run first (before the multi-worker
runtime starts); those that depend on the strategy run once it is
resolved.
"""

from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import check_integer
from keras_elmo.errors import check_number
from keras_elmo.training.strategies import describe
from keras_elmo.training.time_budget import MINIMUM_BUDGET_S
from keras_elmo.training.training_config import JIT_COMPILE


def check_time_budget(time_budget, epochs, steps, strategy):
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


def check_arguments(checkpoint_every, jit_compile, epochs, steps):
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


def check_validate_every(validate_every, checkpoint_every, config):
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


def resolve_jit(strategy, jit_compile):
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
