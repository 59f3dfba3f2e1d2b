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
(`keras_elmo.cli.messages`) and composes the same fields in its own words:
the argument as its flag, the value shell-quoted (`--units 0`); anything
else is a bug and keeps its traceback.

Below the family, one check per kind of value a user gives (integers,
finite numbers, lists of numbers, strings, booleans and choices). Each
check takes the value and the name the user knows it by (an argument such
as "`dropout`", a key such as "options.json `lstm.dim`"), and returns the
value in its plain Python type or raises `KerasElmoError` saying what it
received and what is expected; a name of the form "`argument`" (or
"`argument`[i]") is carried as the error's `argument`. NaN and infinities
are never numbers here; booleans are never integers; strings are never
numbers. NumPy only, no TensorFlow.
"""

import math
import numbers
import re

import numpy as np


class _NotGiven:
    """The `received` of an error that shows no value."""

    def __repr__(self):
        return "NOT_GIVEN"

    def __reduce__(self):
        return "NOT_GIVEN"  # the one instance, by its module name


NOT_GIVEN = _NotGiven()


class KerasElmoError(ValueError):
    """A user mistake: a bad argument, file or value.

    Its text is composed from its fields, here only: the message, then,
    when a value was received, "Received: argument=value." (the value as
    `shown` shows it, never a hostile value whole).

    Args:
        message: str. What is wrong, what is expected and how to fix it,
            Python arguments named in backticks (`init_from`).
        argument: str or None. The Python argument the mistake is in
            (`"init_from"`), when it is one; the command line shows its
            flag instead.
        received: the value received, shown after the message; leave it
            out when the message shows no value.
        expected: str or None. What was expected, in words, for callers
            that report it apart (the message says it too).

    Example:

    >>> error = keras_elmo.KerasElmoError(
    ...     "`units` must be an integer >= 1.", "units", received=0
    ... )
    >>> str(error)
    '`units` must be an integer >= 1. Received: units=0.'
    >>> error.argument, error.received
    ('units', 0)
    """

    def __init__(
        self, message, argument=None, *, received=NOT_GIVEN, expected=None
    ):
        super().__init__(message)
        self.message = message
        self.argument = argument
        self.received = received
        self.expected = expected

    def __str__(self):
        message = getattr(self, "message", None)
        if message is None:  # a subclass that set its own args
            return super().__str__()
        return with_received(message, self.received_text())

    def received_text(self, name=None):
        """The "Received: ..." tail, `name` standing for the argument
        (`name` None: the argument), or "" when no value was received."""
        if self.received is NOT_GIVEN:
            return ""
        name = name or self.argument
        value = shown(self.received)
        return f"Received: {name}={value}." if name else f"Received: {value}."

    def __reduce__(self):
        # The fields travel with the error (Beam and multiprocessing pickle
        # it): rebuilt from `args` (a subclass whose constructor takes
        # other arguments keeps them as its `args`), then its fields.
        return (type(self), self.args, self.__dict__)


def with_received(message, tail):
    """`message` and the "Received: ..." `tail`, one space apart."""
    return f"{message} {tail}" if tail else message


class WeightFileError(KerasElmoError):
    """An options or weight file that does not fit the model it describes.

    Example:

    >>> try:
    ...     keras_elmo.load_bilm(
    ...         "tests/fixtures/bilm-tf/model/options.json",
    ...         "tests/fixtures/bilm-tf-words/model/lm_weights.hdf5")
    ... except keras_elmo.WeightFileError as error:
    ...     print(str(error)[:62])
    tests/fixtures/bilm-tf-words/model/lm_weights.hdf5 has no data
    """


class TextFileError(KerasElmoError):
    """A text file that cannot be read as UTF-8 sentences.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "latin1.txt")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"na\\xefve\\n")
    >>> try:
    ...     keras_elmo.data.scan_corpus([path])
    ... except keras_elmo.errors.TextFileError as error:
    ...     print(str(error).split(": ", 1)[1][:18])
    not valid UTF-8 (b
    """


class RunDirectoryError(KerasElmoError):
    """A training run directory that is missing, damaged or of another run.

    Example:

    >>> issubclass(keras_elmo.errors.RunDirectoryError, ValueError)
    True
    """


class ClusterError(KerasElmoError):
    """The workers of TF_CONFIG did not find each other, or lost one.

    Example:

    >>> issubclass(keras_elmo.errors.ClusterError, keras_elmo.KerasElmoError)
    True
    """


class InputPathError(KerasElmoError):
    """An input path that is not what the reader takes: a directory where
    a file is read (or a file where a directory is), a device, a pipe, a
    socket, a symbolic link loop, or a path that cannot be read.

    Example:

    >>> try:
    ...     keras_elmo.data.scan_corpus(["/dev/zero"])
    ... except keras_elmo.errors.InputPathError as error:
    ...     print(str(error)[:45])
    Input file /dev/zero is a character device; e
    """


class MissingInputError(InputPathError, FileNotFoundError):
    """An input path where nothing lies (a `FileNotFoundError` too).

    Example:

    >>> try:
    ...     keras_elmo.runtime.ONNXBiLM("nothing.onnx")
    ... except FileNotFoundError as error:
    ...     print(type(error).__name__, str(error)[:34])
    MissingInputError Model file not found: nothing.onnx
    """


class OutputPathError(KerasElmoError):
    """An output path that cannot be written (or would destroy an input).

    Example:

    >>> issubclass(keras_elmo.errors.OutputPathError, keras_elmo.KerasElmoError)
    True
    """


class DownloadError(KerasElmoError):
    """A pretrained file that cannot be downloaded, or arrives damaged.

    Example:

    >>> try:
    ...     keras_elmo.pretrained.cached_file("https://127.0.0.1:9/x.json")
    ... except keras_elmo.DownloadError as error:
    ...     print(str(error)[:20])
    Cannot download http
    """


class BiLMSourceError(KerasElmoError):
    """A biLM source (name, URL, file or folder) of no kind the loader
    reads, or one that does not exist.

    Example:

    >>> try:
    ...     keras_elmo.load_bilm("orignal")
    ... except keras_elmo.errors.BiLMSourceError as error:
    ...     print(str(error)[:59])
    'orignal' is not a pretrained model name. Did you mean 'ori
    """


# === Checks of user values ===


# A value in a message is shown in at most this many characters (a line
# of a terminal with its explanation), and it is formatted within that
# budget, piece by piece: a hostile value (a list holding itself a billion
# times over, a 6,000-digit integer) is never formatted whole, which would
# take minutes and gigabytes, or fail on Python's integer digit limit.
SHOWN_CHARACTERS = 60
# Containers nested deeper than this show as "..." (and a message never
# recurses far into a deeply nested value).
_SHOWN_DEPTH = 6
# Integers longer than this many bits show as their number of digits:
# 200 bits is 61 digits, more than a message shows anyway.
_SHOWN_INTEGER_BITS = 200
_BRACKETS = {list: "[]", tuple: "()", dict: "{}", set: "{}", frozenset: "{}"}


def shown(value, limit=SHOWN_CHARACTERS):
    """`value`'s repr as a message shows it: at most `limit` characters,
    built piece by piece within that budget (never the whole repr)."""
    parts = []
    _show(value, parts, limit + 1, 0)
    text = "".join(parts)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def received(value):
    """`value` as a message shows it: `shown(value)` and its type."""
    return f"{shown(value)} ({type(value).__name__})"


def _show(value, parts, budget, depth):
    """Appends the text of `value` to `parts`, stopping once `budget`
    characters are written; returns the budget left."""
    if budget <= 0:
        return 0
    kind = next((k for k in _BRACKETS if isinstance(value, k)), None)
    if kind is not None and depth < _SHOWN_DEPTH:
        return _show_container(value, kind, parts, budget, depth)
    if kind is not None:
        text = "..."
    elif isinstance(value, (str, bytes, bytearray)):
        text = repr(value[:budget])
    elif isinstance(value, int) and not isinstance(value, bool):
        text = _integer_text(value)
    else:
        text = repr(value)
    parts.append(text[:budget])
    return budget - len(parts[-1])


def _show_container(value, kind, parts, budget, depth):
    opening, closing = _BRACKETS[kind]
    parts.append(opening)
    budget -= 1
    items = value.items() if kind is dict else value
    for i, item in enumerate(items):
        if budget <= 0:
            return 0
        if i:
            parts.append(", ")
            budget -= 2
        if kind is dict:
            budget = _show(item[0], parts, budget, depth + 1)
            parts.append(": ")
            budget = _show(item[1], parts, budget - 2, depth + 1)
        else:
            budget = _show(item, parts, budget, depth + 1)
    if kind is tuple and len(value) == 1:
        parts.append(",")
        budget -= 1
    parts.append(closing)
    return budget - 1


def _integer_text(value):
    bits = value.bit_length()
    if bits <= _SHOWN_INTEGER_BITS:
        return repr(value)
    digits = int(bits * 0.30103) + 1
    sign = "a negative" if value < 0 else "an"
    return f"<{sign} integer of about {digits:,} digits>"


def argument_of(name):
    """The Python argument a check's `name` is ("`dropout`" or
    "`weights`[0]"), or None (a file key, words): what an error about it
    carries as its `argument`."""
    match = re.fullmatch(r"`([A-Za-z_][A-Za-z0-9_]*)`(\[\d+\])*", name)
    return match.group(1) if match else None


def _error(message, name):
    return KerasElmoError(message, argument=argument_of(name))


def _bounds(minimum, maximum, above):
    parts = []
    if minimum is not None:
        parts.append(f"> {minimum}" if above else f">= {minimum}")
    if maximum is not None:
        parts.append(f"<= {maximum}")
    return " and ".join(parts)


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(
        value, (bool, np.bool_)
    )


def _is_finite(value):
    """Whether a number is finite; an integer always is (one beyond
    float's range, which `math.isfinite` cannot take, too)."""
    return isinstance(value, numbers.Integral) or math.isfinite(value)


def _as_float(value):
    """`float(value)`; infinity for an integer beyond float's range."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _check_range(value, name, minimum, maximum, above):
    too_small = minimum is not None and (
        value <= minimum if above else value < minimum
    )
    too_large = maximum is not None and value > maximum
    if too_small or too_large:
        raise _error(
            f"{name} must be {_bounds(minimum, maximum, above)}; "
            f"received {shown(value)}.",
            name,
        )


def check_integer(value, name, minimum=None, maximum=None):
    """`value` as an int: an integer (or a float with an integer value,
    as JSON may write it) within [minimum, maximum]."""
    if not _is_number(value) or not _is_finite(value):
        raise _error(
            f"{name} must be an integer; received {received(value)}.",
            name,
        )
    if value != int(value):
        raise _error(f"{name} must be an integer; received {value!r}.", name)
    value = int(value)
    _check_range(value, name, minimum, maximum, False)
    return value


def check_number(value, name, minimum=None, maximum=None, above=False):
    """`value` as a finite float, >= `minimum` (> with `above`) and <=
    `maximum`."""
    if not _is_number(value):
        raise _error(
            f"{name} must be a number; received {received(value)}.",
            name,
        )
    number = _as_float(value)
    if not math.isfinite(number):
        raise _error(
            f"{name} must be a finite number; received {shown(value)}.",
            name,
        )
    value = number
    _check_range(value, name, minimum, maximum, above)
    return value


def check_fraction(value, name):
    """A probability such as a dropout rate: a finite number in [0, 1)."""
    value = check_number(value, name, minimum=0.0)
    if value >= 1.0:
        raise _error(f"{name} must be in [0, 1); received {value!r}.", name)
    return value


def check_numbers(values, name, count=None, one_per=None):
    """`values` as a list of finite floats (`count` of them, if given:
    one per `one_per`, e.g. "biLM layer")."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise _error(
            f"{name} must be a list of numbers; received {received(values)}.",
            name,
        )
    values = list(values)
    for i, value in enumerate(values):
        values[i] = check_number(value, f"{name}[{i}]")
    if count is not None and len(values) != count:
        each = f", one per {one_per}" if one_per else ""
        raise _error(
            f"{name} has {len(values)} values; expected {count}{each}.",
            name,
        )
    return values


def check_flag(value, name):
    """A boolean argument (True/False, not a string such as "no")."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise _error(
        f"{name} must be True or False; received {received(value)}.",
        name,
    )


def check_choice(value, name, choices):
    """One of `choices` (strings, or None): any other value, of any type,
    is refused naming the choices."""
    if not isinstance(value, (str, type(None))) or value not in choices:
        raise _error(
            f"{name} must be one of {sorted(choices, key=str)}; received "
            f"{received(value)}.",
            name,
        )
    return value


def check_strings(values, name):
    """`values` as a list of str (tokens): not a str itself, not ints."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise _error(
            f"{name} must be a list of strings; received {received(values)}.",
            name,
        )
    values = list(values)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise _error(
                f"{name}[{i}] must be a string; received {received(value)}.",
                name,
            )
    return values


def check_threads(value, name="`num_threads`"):
    """A thread count: None (the runtime chooses) or an integer >= 1."""
    if value is None:
        return None
    return check_integer(value, name, minimum=1)
