"""The command line's one translation of library errors into its words.

The library speaks Python: its messages name arguments in backticks
(`init_from`) and show values as "Received: init_from='x'."
(`elmo_core.errors`). The command line names flags instead, so the one
catch in `keras_elmo_cli.main` passes each user error through
`command_line_message`, with the flags of the command that ran
(`flags_of`): each argparse action's `dest` names its first long option
(`init_from` -> `--init-from`), and a command whose library arguments are
named otherwise than its flags says so itself with
`parser.set_defaults(argument_flags={"output_dir": "--output"})`. Names the
command has no flag for stay as they are; nothing is guessed.

Only an error that carries its `argument` speaks of Python arguments; one
without (a damaged file, a key of config.json, whose names may be spelled
like arguments) is shown as it is.

The text is composed from the error's fields, never parsed out of its
text: the message with the argument names it writes in backticks as flags,
then, when the error carries the value it received (`error.received`),
"Received: --flag VALUE." with the value as a shell would read it back
(`shlex.quote`). The backticks stay the marker of an argument inside the
prose of a message: a message names several arguments in its own words
("give `validation_files`, or leave `validate_every` out"), and the marker
is explicit (a dotted key, options.json `lstm.dim`, is never one).
"""

import re
import shlex

from elmo_core.errors import NOT_GIVEN
from elmo_core.errors import received_text
from elmo_core.errors import with_received
from elmo_core.errors.shown import SHOWN_STRING_CHARACTERS
from elmo_core.errors.shown import shown

# A Python argument in backticks, not part of a dotted key
# (options.json `lstm.dim` stays).
_BACKTICKED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def flags_of(parser, args):
    """`{argument: flag}` of a command: each action's `dest` -> its first
    long option string, then the command's own `argument_flags`."""
    flags = {}
    for action in parser.actions():
        longs = [s for s in action.option_strings if s.startswith("--")]
        if longs and action.dest not in flags:
            flags[action.dest] = longs[0]
    flags.update(getattr(args, "argument_flags", None) or {})
    return flags


def _flag(flags):
    def replace(match):
        return flags.get(match.group(1), match.group(0))

    return replace


def _shell_value(value):
    """`value` as the command line received it: a string shell-quoted
    (at most `SHOWN_STRING_CHARACTERS` of it), anything else as
    `shown`."""
    if isinstance(value, str):
        if len(value) > SHOWN_STRING_CHARACTERS:
            value = value[: SHOWN_STRING_CHARACTERS - 3] + "..."
        return shlex.quote(value)
    return shown(value)


def type_error(message, text):
    """The `argparse.ArgumentTypeError` of an argument type that refuses
    `text`: `message`, then "Received: TEXT." as a shell reads it back
    (argparse puts the flag in front).

    >>> str(type_error("expected a positive integer.", "two words"))
    "expected a positive integer. Received: 'two words'."
    """
    import argparse

    tail = f"Received: {_shell_value(text)}."
    return argparse.ArgumentTypeError(with_received(message, tail))


def _received(error, flag):
    """The "Received: ..." tail of `error` in the command line's words
    ("" when it shows no value)."""
    if error.received is NOT_GIVEN or flag is None:
        return received_text(error.argument, error.received)
    return f"Received: {flag} {_shell_value(error.received)}."


def command_line_message(error, flags):
    """The message of `error` with its Python argument names as `flags`
    name them, if it is about an argument (`error.argument`); one whose
    message does not name its argument is prefixed with its flag."""
    argument = getattr(error, "argument", None)
    if argument is None or getattr(error, "message", None) is None:
        return str(error)
    flag = flags.get(argument)
    text = _BACKTICKED.sub(_flag(flags), error.message)
    text = with_received(text, _received(error, flag))
    if flag is not None and flag not in text:
        text = f"{flag}: {text}"
    return text
