"""Held-out perplexities during a training run.

`validation` returns the function the training callback calls at a
checkpoint; its `seconds_per_batch` times a few held-out batches for a
time budget's first plan.
"""

import statistics
import time

from elmo_core.progress import Progress
from keras_elmo.training.batch_progress import BatchProgress
from keras_elmo.training.corpus_scans import scan_dataset

# Held-out batches timed for a time budget's first plan.
VALIDATION_PROBE_BATCHES = 6


def validation(scan, strategy, loop, model, vocabulary):
    """A function returning held-out perplexities on the scanned validation
    files, or None."""
    if scan is None:
        return None
    dataset = scan_dataset(
        strategy, scan, vocabulary, model, shuffle=False, repeat=False
    )

    def evaluate(data, steps, progress):
        if loop is None:
            return model.evaluate(
                data,
                verbose=0,
                return_dict=True,
                callbacks=[BatchProgress(progress)],
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
