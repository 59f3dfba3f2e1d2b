"""A fault for the corpus pipeline tests: the Beam worker that meets a
given line kills its own process (SIGKILL, no cleanup), once per marker
file, so that a run loses a worker in the middle of a bundle."""

import os
import signal


def kill_worker_once(element, line, marker):
    """`element`; the first worker (of any run) to see `(file, line)` with
    `file` ending in `line[0]` dies first, after creating `marker`."""
    (path, number), _ = element
    if path.endswith(line[0]) and number == line[1]:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return element
        os.kill(os.getpid(), signal.SIGKILL)
    return element
