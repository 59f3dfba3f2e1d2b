"""The errors keras_elmo raises about user input.

Every mistake a user can make (a bad argument, file, option or value)
raises a `KerasElmoError` (a `ValueError`) or one of its subclasses, with a
message that says what was received, what was expected and how to fix it.

An error carries its parts as fields: `message` (what is wrong and how to
fix it; Python arguments named in backticks, `init_from`), `argument`
(the Python argument the mistake is in, or None), `received` (the value,
when the error shows one) and `expected` (in words). Its text is composed
from them in one place, `KerasElmoError.__str__`, in one form:

    `units` must be an integer >= 1. Received: units=0.

The `keras-elmo` command catches this family in one place
(`keras_elmo_cli.messages`) and composes the same fields in its own words:
the argument as its flag, the value shell-quoted (`--units 0`); anything
else is a bug and keeps its traceback.

Below the family, one check per kind of value a user gives (integers,
finite numbers, lists of numbers, strings, booleans, choices and objects
of a class). Each check takes the value and, as data, what it is: the
Python `argument` ("units"), or `where=` the name the user knows a value
by that is no argument (a file key, "options.json `lstm.dim`"). It
returns the value in its plain Python type or raises `KerasElmoError`
with its fields set:

    check_integer(0, "units", minimum=1)
    -> `units` must be an integer >= 1. Received: units=0.
    check_integer(0, where="options.json `lstm.dim`", minimum=1)
    -> options.json `lstm.dim` must be an integer >= 1. Received: 0.

NaN and infinities are never numbers here; booleans are never integers;
strings are never numbers. NumPy only, no TensorFlow.
"""

from elmo_core.errors.checks import Described  # noqa: F401 (the package's own)
from elmo_core.errors.checks import check_choice  # noqa: F401 (the package's own)
from elmo_core.errors.checks import check_flag  # noqa: F401 (the package's own)
from elmo_core.errors.checks import check_fraction  # noqa: F401 (the package's own)
from elmo_core.errors.checks import check_instance  # noqa: F401 (the package's own)
from elmo_core.errors.checks import check_integer  # noqa: F401 (the package's own)
from elmo_core.errors.checks import check_number  # noqa: F401 (the package's own)
from elmo_core.errors.checks import check_numbers  # noqa: F401 (the package's own)
from elmo_core.errors.checks import check_strings  # noqa: F401 (the package's own)
from elmo_core.errors.checks import check_threads  # noqa: F401 (the package's own)
from elmo_core.errors.checks import check_verbose  # noqa: F401 (the package's own)
from elmo_core.errors.checks import tensor  # noqa: F401 (the package's own)
from elmo_core.errors.kinds import NOT_GIVEN  # noqa: F401 (the package's own)
from elmo_core.errors.kinds import BiLMSourceError
from elmo_core.errors.kinds import ClusterError
from elmo_core.errors.kinds import DownloadError
from elmo_core.errors.kinds import InputPathError
from elmo_core.errors.kinds import KerasElmoError
from elmo_core.errors.kinds import MissingInputError
from elmo_core.errors.kinds import OutputPathError
from elmo_core.errors.kinds import RunDirectoryError
from elmo_core.errors.kinds import TextFileError
from elmo_core.errors.kinds import WeightFileError
from elmo_core.errors.kinds import compose  # noqa: F401 (the package's own)
from elmo_core.errors.kinds import received_text  # noqa: F401 (the package's own)
from elmo_core.errors.kinds import with_received  # noqa: F401 (the package's own)

# The public names: the error family (the checks and the composition of
# a message are the package's own).
__all__ = [
    "BiLMSourceError",
    "ClusterError",
    "DownloadError",
    "InputPathError",
    "KerasElmoError",
    "MissingInputError",
    "OutputPathError",
    "RunDirectoryError",
    "TextFileError",
    "WeightFileError",
]
