"""A value as a message shows it: its repr, within a bound.

A message shows the value a user gave, and a hostile value (a list
holding itself a billion times over, a 6,000-digit integer) must never be
formatted whole, which would take minutes and gigabytes, or fail on
Python's integer digit limit: `shown` builds the text piece by piece
within its budget. Pure Python.
"""

# A value in a message is shown in at most this many characters (a line
# of a terminal with its explanation).
SHOWN_CHARACTERS = 60
# A string received (a path, a name: what a user types) is shown in at
# most this many characters: whole, unless it is no path at all (the
# longest path Linux opens is 4,096 bytes, written ones are far shorter).
SHOWN_STRING_CHARACTERS = 1000
# Containers nested deeper than this show as "..." (and a message never
# recurses far into a deeply nested value).
_SHOWN_DEPTH = 6
# Integers longer than this many bits show as their number of digits:
# 200 bits is 61 digits, more than a message shows anyway.
_SHOWN_INTEGER_BITS = 200
_BRACKETS = {list: "[]", tuple: "()", dict: "{}", set: "{}", frozenset: "{}"}


def shown(value, limit=SHOWN_CHARACTERS):
    """`value`'s repr as a message shows it: at most `limit` characters,
    built piece by piece within that budget (never the whole repr).

    >>> from elmo_core.errors.shown import shown
    >>> shown([0] * 10**6, limit=20)
    '[0, 0, 0, 0, 0, 0...'
    >>> shown(10**6000)
    '<an integer of about 6,001 digits>'
    """
    parts = []
    _show(value, parts, limit + 1, 0)
    text = "".join(parts)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
