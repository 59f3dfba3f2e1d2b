"""Which argument an error is about.

A loader deep down (a file reader, a parser) does not know which argument
of the caller named its file; the caller does. `about(argument)` gives an
error that names no argument the caller's, and `blame(error, argument)`
makes one error the caller's. A value the error shows that is not the
argument's (a key of a file, an item of a list) stays shown as it was,
never labelled as the argument's value.
"""

import contextlib
import re

from elmo_core.errors.kinds import NOT_GIVEN
from elmo_core.errors.kinds import KerasElmoError


def blame(error, argument):
    """`error` (a `KerasElmoError`), now about `argument`.

    >>> from elmo_core.errors.blame import blame
    >>> error = keras_elmo.KerasElmoError(
    ...     "options.json `lstm.dim` must be >= 1.", received=-5)
    >>> print(blame(error, "source").argument, "|", error)
    source | options.json `lstm.dim` must be >= 1. Received: -5.
    """
    if error.argument != argument:
        if error.received is not NOT_GIVEN:
            # Its text as it is: the value is not the argument's.
            error.message, error.received = str(error), NOT_GIVEN
        error.argument = argument
    return error


@contextlib.contextmanager
def about(argument):
    """Inside it, a `KerasElmoError` that names no argument is about
    `argument`: a loader's errors (a missing file, a damaged one) are
    about the argument that named the file.

    >>> from elmo_core.errors.blame import about
    >>> try:
    ...     with about("path"):
    ...         raise keras_elmo.KerasElmoError("It is damaged.", received="x")
    ... except keras_elmo.KerasElmoError as error:
    ...     print(error.argument, "|", error)
    path | It is damaged. Received: 'x'.
    """
    try:
        yield
    except KerasElmoError as error:
        if error.argument is None:
            blame(error, argument)
        raise


_BACKTICKED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def renamed(error, names):
    """`error` (a `KerasElmoError`) with the Python arguments of `names`
    (`{old: new}`) named as `new`: its `argument`, and the names it
    writes in backticks (a function that passes its arguments on under
    other names speaks of its own).

    >>> from elmo_core.errors.blame import renamed
    >>> error = keras_elmo.KerasElmoError(
    ...     "`output_dir` is a file.", "output_dir", received="x")
    >>> str(renamed(error, {"output_dir": "output"}))
    "`output` is a file. Received: output='x'."
    """
    if error.argument in names:
        error.argument = names[error.argument]
    if getattr(error, "message", None) is not None:
        error.message = _BACKTICKED.sub(
            lambda m: f"`{names.get(m.group(1), m.group(1))}`", error.message
        )
    return error
