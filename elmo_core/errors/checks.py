"""One check per kind of value a user gives (integers, finite numbers,
lists of numbers, strings, booleans, choices and objects of a class),
each raising `KerasElmoError` with its fields set (`elmo_core.errors`
says more)."""

import math
import numbers

import numpy as np

from elmo_core.errors.kinds import KerasElmoError


class Described:
    """A received value shown by a description, where the value itself
    would say less or too much (a tensor, a class): its repr is
    "<description>".

    >>> elmo_core.errors.compose(
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
    elmo_core.errors.kinds.KerasElmoError: `units` must be an integer >= 1. Received: units=0.
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
    elmo_core.errors.kinds.KerasElmoError: options.json `lstm.cell_clip` must be a finite number. Received: inf.
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
    elmo_core.errors.kinds.KerasElmoError: `weights`[1] must be a finite number. Received: weights=[0, 'x'].
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


def check_verbose(value, argument="verbose"):
    """A verbosity: 0 (silent) or 1 (progress lines), True or False too;
    returned as an int."""
    if isinstance(value, (bool, int, np.integer)) and int(value) in (0, 1):
        return int(value)
    raise _refuse(value, argument, None, "0 (silent) or 1 (progress)")


def check_choice(value, argument=None, *, where=None, choices=()):
    """One of `choices` (strings, or None): any other value, of any type,
    is refused naming the choices."""
    if not isinstance(value, (str, type(None))) or value not in choices:
        expected = f"one of {sorted(choices, key=str)}"
        raise _refuse(value, argument, where, expected)
    return value


def check_instance(value, kinds, argument=None, *, where=None, expected):
    """`value`, an instance of `kinds` (a class or a tuple of them), else
    refused as "`argument` must be `expected`" (the class in words, and
    where such a value comes from)."""
    if not isinstance(value, kinds):
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
