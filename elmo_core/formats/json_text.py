"""JSON from untrusted files, parsed within bounds.

`json.loads` takes any size, any nesting (up to Python's recursion
limit) and integers of any length, and a 6,000-digit integer fails on
Python's own digit limit with a message about `sys.set_int_max_str_digits`.
`parse_json` refuses, naming the file: text longer than the caller's
bound (read no further), nesting deeper than `MAX_DEPTH`, integers longer
than `MAX_INTEGER_DIGITS` digits, and text that is not JSON. The depth is
measured without recursion, so a walk over the value that follows (Keras'
own deserialisation recurses) stays far from the recursion limit.
"""

import json

from elmo_core.errors import KerasElmoError

# A Keras model's config.json nests some 11 levels, an options.json 3;
# 100 is far beyond any config and far below Python's recursion limit
# (1,000 frames), which code that walks a config recursively spends.
MAX_DEPTH = 100
# 128 bits: no count, size or id in a config is longer (Keras writes
# 15-digit object ids).
MAX_INTEGER_DIGITS = 40
# An options.json or an ELMoForManyLangs config is under 1 KiB; 1 MiB is
# no config of a biLM.
MAX_CONFIG_BYTES = 1 << 20


class _LongInteger(ValueError):
    pass


def _integer(text):
    digits = len(text.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        raise _LongInteger(digits)
    return int(text)


def parse_json(data, where, error=KerasElmoError):
    """The value of JSON `data` (str or bytes), within the bounds of the
    module docstring; `error` (a `KerasElmoError` class) names `where`
    (e.g. the file) otherwise."""
    try:
        value = json.loads(data, parse_int=_integer)
    except _LongInteger as e:
        raise error(
            f"{where} holds an integer of {e.args[0]:,} digits; no value of "
            f"a config has more than {MAX_INTEGER_DIGITS}: it is damaged "
            "or hostile."
        ) from None
    except RecursionError:
        raise error(_too_deep(where)) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise error(f"{where} is not valid JSON: {e}") from None
    if _depth(value) > MAX_DEPTH:
        raise error(_too_deep(where))
    return value


def read_json(path, max_bytes, error=KerasElmoError, what=None):
    """`parse_json` of the file at `path`, refused (unread) when it is
    larger than `max_bytes`; messages name it as `what` (e.g. "Options
    file") and its path."""
    where = f"{what} {path}" if what else path
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise error(
            f"{where} is larger than {max_bytes:,} bytes; no config file "
            "is. Is it the right file?"
        )
    return parse_json(data, where, error)


def _too_deep(where):
    return (
        f"{where} nests JSON values more than {MAX_DEPTH} levels deep; no "
        "config does: it is damaged or hostile."
    )


def _depth(value):
    """The nesting depth of a parsed JSON value, without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        if isinstance(item, dict):
            pending.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            pending.extend((v, depth + 1) for v in item)
    return deepest
