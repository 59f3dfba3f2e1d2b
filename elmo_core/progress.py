"""Progress output that suits a terminal and a log file alike.

On a terminal, one line redrawn in place (at most `TERMINAL_INTERVAL`
apart, and at the end). Anywhere else (a log file, a pipe, CI), the same
line printed every `interval` seconds and once at the end, instead of a
carriage-return update per step.
"""

import sys
import time

# Seconds between progress lines when the output is not a terminal.
LOG_INTERVAL = 10.0
# Seconds between redraws of the line on a terminal.
TERMINAL_INTERVAL = 0.1


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
        amount: callable or None. Writes a count of units for the plain
            lines (e.g. bytes as `1.2 MiB`). Defaults to None: `1,234
            units`.
    """

    def __init__(
        self,
        total,
        unit,
        verbose=1,
        label="progress",
        interval=LOG_INTERVAL,
        stream=None,
        amount=None,
    ):
        self.total = total
        self.unit = unit
        self.verbose = int(verbose)
        self.label = label
        self.interval = float(interval)
        self.stream = stream or sys.stdout
        self.amount = amount
        self.started = self.last = time.time()
        self.done = 0
        # The rate (and so the ETA) is measured from the first update on:
        # the first unit carries the start-up cost (tracing, compiling),
        # which would put the first ETA far off.
        self.origin = None
        self.terminal = bool(self.verbose and _is_terminal(self.stream))

    def update(self, done, values=None):
        """Sets the number of units done so far; `values` is an optional
        list of `(name, number)` pairs to show beside it (e.g. the loss)."""
        self.done = done
        if not self.verbose:
            return
        now = time.time()
        first = self.origin is None
        if first:
            self.origin = (done, now)
        finished = self.total is not None and done >= self.total
        interval = TERMINAL_INTERVAL if self.terminal else self.interval
        if first or finished or now - self.last >= interval:
            self.last = now
            line = self._line(now, values)
            if self.terminal:
                # Redrawn in place; the line ends once the count is done.
                end = "\n" if finished else ""
                print(f"\r{line}\x1b[K", end=end, file=self.stream, flush=True)
            else:
                print(line, file=self.stream, flush=True)

    def rate(self, now=None):
        """Units a second since the first update (None before a second)."""
        if self.origin is None:
            return None
        first_done, since = self.origin
        now = time.time() if now is None else now
        if self.done <= first_done or now <= since:
            return None
        return (self.done - first_done) / (now - since)

    def _line(self, now, values=None):
        rate = self.rate(now)
        line = f"{self.label}: {self._amount(self.done, self.total)}"
        if self.total:
            line += f" ({self.done / self.total:.0%})"
        for name, value in values or []:
            line += f", {name} {value:,.4g}"
        if rate is not None:
            line += f", {self._amount(rate)}/s"
            if self.total and self.done < self.total:
                line += f", ETA {_duration((self.total - self.done) / rate)}"
        return line

    def _amount(self, done, total=None):
        """`done` (of `total`) in the units of the plain lines."""
        if self.amount is not None:
            text = self.amount(int(done))
            return f"{text} of {self.amount(int(total))}" if total else text
        units = self.unit + ("es" if self.unit.endswith(("s", "ch")) else "s")
        if isinstance(done, float):
            text = f"{done:,.2f}"
        else:
            text = f"{done:,}"
        return f"{text}/{total:,} {units}" if total else f"{text} {units}"


def _duration(seconds):
    """`seconds` in words a log reader takes in at once: 45s, 12.5 min,
    3.2 h."""
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def say(verbose, message):
    """Prints one line of the package's own output when `verbose`."""
    if verbose:
        print(message, flush=True)
