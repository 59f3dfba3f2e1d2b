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
check takes the value and, as data, what it is: the Python `argument`
("units"), or `where=` the name the user knows a value by that is no
argument (a file key, "options.json `lstm.dim`"). It returns the value in
its plain Python type or raises `KerasElmoError` with its fields set:

    check_integer(0, "units", minimum=1)
    -> `units` must be an integer >= 1. Received: units=0.
    check_integer(0, where="options.json `lstm.dim`", minimum=1)
    -> options.json `lstm.dim` must be an integer >= 1. Received: 0.

NaN and infinities are never numbers here; booleans are never integers;
strings are never numbers. NumPy only, no TensorFlow.
"""

import math
import numbers

import numpy as np

from keras_elmo.shown import SHOWN_CHARACTERS
from keras_elmo.shown import SHOWN_STRING_CHARACTERS
from keras_elmo.shown import shown


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
        # The composed text is the first argument too: what Keras shows
        # when it re-raises an error from a layer's call with its context.
        super().__init__(compose(message, argument, received))
        self.message = message
        self.argument = argument
        self.received = received
        self.expected = expected

    def __str__(self):
        message = getattr(self, "message", None)
        if message is None:  # a subclass that set its own args
            return super().__str__()
        return compose(message, self.argument, self.received)

    def within(self, context=None, kind=None):
        """This error as met in `context` (a file, a config; None: as it
        is), as a `kind` error (None: its own kind): the message prefixed
        "context: ", the value received kept, and no argument (the names
        in a file are its keys, not arguments).

        >>> error = keras_elmo.KerasElmoError("`dropout` bad.", "dropout",
        ...     received=2)
        >>> str(error.within("run/config.json"))
        'run/config.json: `dropout` bad. Received: 2.'
        """
        message = self.message
        if context is not None:
            message = f"{context}: {message}"
        return (kind or type(self))(
            message, received=self.received, expected=self.expected
        )

    def __reduce__(self):
        # The fields travel with the error (Beam and multiprocessing pickle
        # it): rebuilt from `args` (a subclass whose constructor takes
        # other arguments keeps them as its `args`), then its fields.
        return (type(self), self.args, self.__dict__)


def compose(message, argument=None, received=NOT_GIVEN):
    """The one text of a message: `message`, then "Received: argument=
    value." when a value was `received`. `KerasElmoError` is composed
    here; so is the text of an exception outside the family (a
    `TypeError`, a tensor assertion), which cannot carry fields.

    >>> compose("`units` must be >= 1.", "units", 0)
    '`units` must be >= 1. Received: units=0.'
    >>> compose("The file is empty.", received="")
    "The file is empty. Received: ''."
    """
    return with_received(message, received_text(argument, received))


def received_text(argument, received):
    """The "Received: argument=value." tail ("Received: value." without
    an argument; "" when nothing was received), the value `shown`."""
    if received is NOT_GIVEN:
        return ""
    value = shown(received, _received_limit(received))
    return (
        f"Received: {argument}={value}." if argument else f"Received: {value}."
    )


def _received_limit(received):
    """How many characters a received value is shown in: a string (a
    path) `SHOWN_STRING_CHARACTERS`, anything else `SHOWN_CHARACTERS`."""
    if isinstance(received, str):
        return SHOWN_STRING_CHARACTERS
    return SHOWN_CHARACTERS


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


class Described:
    """A received value shown by a description, where the value itself
    would say less or too much (a tensor, a class): its repr is
    "<description>".

    >>> keras_elmo.errors.compose(
    ...     "`ids` must be integers.", "ids",
    ...     Described("float32 tensor of shape (2, 3)"))
    '`ids` must be integers. Received: ids=<float32 tensor of shape (2, 3)>.'
    """

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return f"<{self.text}>"


def tensor(dtype, shape):
    """A tensor received, described by its dtype (a NumPy, TensorFlow or
    Keras dtype, or its name) and shape."""
    name = getattr(dtype, "name", dtype)
    return Described(f"{name} tensor of shape {tuple(shape)}")


def _refuse(value, argument, where, expected):
    """The error of a check: "`argument` (or `where`) must be `expected`",
    then the value received."""
    return KerasElmoError(
        f"{_subject(argument, where)} must be {expected}.",
        argument,
        received=value,
        expected=expected,
    )


def _subject(argument, where):
    return where or f"`{argument}`"


def _bounds(kind, minimum, maximum, above):
    """`kind` ("an integer") and its bounds, in words."""
    parts = [kind]
    if minimum is not None:
        parts.append(f"> {minimum}" if above else f">= {minimum}")
    if maximum is not None:
        parts.append(f"<= {maximum}")
    return " ".join(parts[:2]) + "".join(f" and {p}" for p in parts[2:])


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(
        value, (bool, np.bool_)
    )


def _is_integer(value):
    """Whether `value` is an integer (an int, or a float with an integer
    value); one beyond float's range, which `math.isfinite` cannot take,
    too."""
    if not _is_number(value):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return math.isfinite(value) and value == int(value)


def _finite(value):
    """`value` as a float, NaN where it is not a finite number (an
    integer beyond float's range included)."""
    if not _is_number(value):
        return math.nan
    try:
        number = float(value)
    except OverflowError:
        return math.nan
    return number if math.isfinite(number) else math.nan


def _in_range(value, minimum, maximum, above):
    too_small = minimum is not None and (
        value <= minimum if above else value < minimum
    )
    too_large = maximum is not None and value > maximum
    return not (too_small or too_large)


def check_integer(
    value, argument=None, *, where=None, minimum=None, maximum=None
):
    """`value` as an int: an integer (or a float with an integer value,
    as JSON may write it) within [minimum, maximum].

    >>> check_integer(4.0, "units", minimum=1)
    4
    >>> check_integer(0, "units", minimum=1)
    Traceback (most recent call last):
    ...
    keras_elmo.errors.KerasElmoError: `units` must be an integer >= 1. Received: units=0.
    """  # noqa: E501
    expected = _bounds("an integer", minimum, maximum, False)
    if not _is_integer(value) or not _in_range(
        int(value), minimum, maximum, False
    ):
        raise _refuse(value, argument, where, expected)
    return int(value)


def check_number(
    value, argument=None, *, where=None, minimum=None, maximum=None, above=False
):
    """`value` as a finite float, >= `minimum` (> with `above`) and <=
    `maximum`.

    >>> check_number(float("inf"), where="options.json `lstm.cell_clip`")
    Traceback (most recent call last):
    ...
    keras_elmo.errors.KerasElmoError: options.json `lstm.cell_clip` must be a finite number. Received: inf.
    """  # noqa: E501
    expected = _bounds("a finite number", minimum, maximum, above)
    number = _finite(value)
    if math.isnan(number) or not _in_range(number, minimum, maximum, above):
        raise _refuse(value, argument, where, expected)
    return number


def check_fraction(value, argument=None, *, where=None):
    """A probability such as a dropout rate: a finite number in [0, 1)."""
    number = _finite(value)
    if not 0.0 <= number < 1.0:  # NaN is not
        raise _refuse(value, argument, where, "a number in [0, 1)")
    return number


def check_numbers(
    values, argument=None, *, where=None, count=None, one_per=None
):
    """`values` as a list of finite floats (`count` of them, if given:
    one per `one_per`, e.g. "biLM layer"). An error about one of them
    names it, and shows the argument it is in (as given), or the value
    itself when the list is no argument (a file's: it may be long):

    >>> check_numbers([0, "x"], "weights")
    Traceback (most recent call last):
    ...
    keras_elmo.errors.KerasElmoError: `weights`[1] must be a finite number. Received: weights=[0, 'x'].
    """  # noqa: E501
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise _refuse(values, argument, where, "a list of numbers")
    items = list(values)
    subject = _subject(argument, where)
    for i, value in enumerate(items):
        if math.isnan(_finite(value)):
            shown_value = items if argument else value
            item = f"{subject}[{i}]"
            raise _refuse(shown_value, argument, item, "a finite number")
    if count is not None and len(items) != count:
        each = f", one per {one_per}" if one_per else ""
        raise _refuse(items, argument, where, f"{count} numbers{each}")
    return [_finite(value) for value in items]


def check_flag(value, argument=None, *, where=None):
    """A boolean argument (True/False, not a string such as "no")."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise _refuse(value, argument, where, "True or False")


def check_choice(value, argument=None, *, where=None, choices=()):
    """One of `choices` (strings, or None): any other value, of any type,
    is refused naming the choices."""
    if not isinstance(value, (str, type(None))) or value not in choices:
        expected = f"one of {sorted(choices, key=str)}"
        raise _refuse(value, argument, where, expected)
    return value


def check_strings(values, argument=None, *, where=None):
    """`values` as a list of str (tokens): not a str itself, not ints;
    an error about one of them as in `check_numbers`."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise _refuse(values, argument, where, "a list of strings")
    strings = list(values)
    subject = _subject(argument, where)
    for i, value in enumerate(strings):
        if not isinstance(value, str):
            shown_value = strings if argument else value
            item = f"{subject}[{i}]"
            raise _refuse(shown_value, argument, item, "a string")
    return strings


def check_threads(value, argument="num_threads"):
    """A thread count: None (the runtime chooses) or an integer >= 1."""
    if value is None:
        return None
    return check_integer(value, argument, minimum=1)
