"""Progress output that suits a terminal and a log file alike.

On a terminal, a Keras progress bar redrawn in place. Anywhere else (a log
file, a pipe, CI), one plain line every `interval` seconds and one at the
end, instead of a carriage-return update per step.
"""

import sys
import time

# Seconds between progress lines when the output is not a terminal.
LOG_INTERVAL = 10.0


def _is_terminal(stream):
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """Reports `done` out of `total` units.

    Args:
        total: int or None. Units in all (None: unknown).
        unit: str. What is counted, e.g. `"sentence"`.
        verbose: 0 (silent) or 1.
        label: str. Prefix of the plain lines.
        interval: float. Seconds between plain lines.
        stream: file. Defaults to `sys.stdout`.
    """

    def __init__(
        self,
        total,
        unit,
        verbose=1,
        label="progress",
        interval=LOG_INTERVAL,
        stream=None,
    ):
        self.total = total
        self.unit = unit
        self.verbose = int(verbose)
        self.label = label
        self.interval = float(interval)
        self.stream = stream or sys.stdout
        self.started = self.last = time.time()
        self.done = 0
        self.bar = None
        if self.verbose and _is_terminal(self.stream):
            import keras

            self.bar = keras.utils.Progbar(total, unit_name=unit)

    def update(self, done):
        """Sets the number of units done so far."""
        self.done = done
        if not self.verbose:
            return
        if self.bar is not None:
            self.bar.update(done)
            return
        now = time.time()
        finished = self.total is not None and done >= self.total
        if finished or now - self.last >= self.interval:
            self.last = now
            self._print_line(now)

    def _print_line(self, now):
        units = self.unit + ("es" if self.unit.endswith(("s", "ch")) else "s")
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        line = f"{self.label}: {self.done:,}"
        if self.total:
            line += f"/{self.total:,} {units} ({self.done / self.total:.0%})"
            if rate > 0 and self.done < self.total:
                line += f", ETA {(self.total - self.done) / rate:.0f}s"
        else:
            line += f" {units}"
        line += f", {rate:,.1f} {units}/s"
        print(line, file=self.stream, flush=True)


def batch_callback(progress):
    """A Keras callback that reports `model.evaluate` / `predict` batches
    to a `Progress` counting batches."""
    import keras

    class _BatchProgress(keras.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            progress.update(batch + 1)

        on_predict_batch_end = on_test_batch_end

    return _BatchProgress()
