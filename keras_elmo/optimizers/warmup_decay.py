"""The learning rate of a run: an optional warm-up, then constant or a
linear decay to zero whose end a time budget may move while training.

    step < warmup_steps:  peak * (step + 1) / warmup_steps
    "constant":           peak
    "linear":             anchor_rate * (total - step) / (total - anchor)

With a known length, the decay runs from the peak at the end of the
warm-up (the anchor) to zero at the last step. A time budget
(`elmo_core.settings.time_budget`) re-plans the last step as it measures
the machine's speed: `replan` moves the anchor to the current step and
rate, so the rate stays continuous and still reaches zero at the new end.
The three values are variables, read by the compiled training step
without tracing it again.
"""

import keras
from keras import ops

from elmo_core.errors import check_flag
from elmo_core.errors import check_integer
from elmo_core.errors import check_number


@keras.saving.register_keras_serializable(package="keras_elmo")
class WarmupDecay(keras.optimizers.schedules.LearningRateSchedule):
    """A linear warm-up, then a constant rate or a linear decay to zero.

    Args:
        peak: float. The rate after the warm-up.
        warmup_steps: int. Steps of the linear warm-up from `peak /
            warmup_steps`; 0 for none.
        total_steps: int. The step the decay reaches zero at.
        decay: bool. Decay linearly after the warm-up (else constant).

    Example:

    >>> schedule = keras_elmo.optimizers.WarmupDecay(
    ...     0.01, warmup_steps=10, total_steps=100)
    >>> [round(schedule.rate(step), 4) for step in (4, 9, 55, 99)]
    [0.005, 0.01, 0.005, 0.0001]
    """

    def __init__(self, peak, warmup_steps=0, total_steps=1, decay=True):
        self.peak = check_number(peak, "peak", minimum=0.0, above=True)
        self.warmup_steps = check_integer(
            warmup_steps, "warmup_steps", minimum=0
        )
        self.total_steps = check_integer(total_steps, "total_steps", minimum=1)
        self.decay = check_flag(decay, "decay")
        self.anchor_step = keras.Variable(
            float(min(self.warmup_steps, self.total_steps - 1)),
            trainable=False,
            name="decay_anchor_step",
        )
        self.anchor_rate = keras.Variable(
            self.peak, trainable=False, name="decay_anchor_rate"
        )
        self.end_step = keras.Variable(
            float(max(self.total_steps, 1)),
            trainable=False,
            name="decay_end_step",
        )

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = ops.minimum(
            1.0, (step + 1.0) / max(float(self.warmup_steps), 1.0)
        )
        if not self.decay:
            return self.peak * warmup
        anchor = ops.convert_to_tensor(self.anchor_step)
        end = ops.convert_to_tensor(self.end_step)
        left = ops.maximum(end - ops.maximum(step, anchor), 0.0)
        decayed = self.anchor_rate * left / ops.maximum(end - anchor, 1.0)
        return ops.minimum(self.peak * warmup, decayed)

    def rate(self, step):
        """The rate at `step`, as a Python float."""
        return float(ops.convert_to_numpy(self(step)))

    def replan(self, step, total_steps):
        """Decays from the rate at `step` to zero at `total_steps`."""
        if not self.decay:
            return
        anchor = self.anchor_step.numpy()
        # Past the anchor, or a run shorter than its warm-up: decay from
        # here (else the rate would be zero from the anchor on).
        if step > anchor or total_steps <= anchor:
            rate = self.rate(step)
            self.anchor_step.assign(float(step))
            self.anchor_rate.assign(rate)
        self.end_step.assign(float(max(total_steps, step + 1)))

    def state(self):
        """The values a resumed run restores with `restore`."""
        return {
            "anchor_step": float(self.anchor_step.numpy()),
            "anchor_rate": float(self.anchor_rate.numpy()),
            "end_step": float(self.end_step.numpy()),
        }

    def restore(self, state):
        self.anchor_step.assign(float(state["anchor_step"]))
        self.anchor_rate.assign(float(state["anchor_rate"]))
        self.end_step.assign(float(state["end_step"]))

    def get_config(self):
        return {
            "peak": self.peak,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "decay": self.decay,
        }
