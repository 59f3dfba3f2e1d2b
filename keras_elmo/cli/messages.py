"""The command line's one translation of library errors into its words.

The library speaks Python: its messages name arguments in backticks
(`init_from`) and show values as "Received: init_from='x'."
(`keras_elmo.errors`). The command line names flags instead, so the one
catch in `keras_elmo.cli.main` passes each user error through
`command_line_message`, with the flags of the command that ran
(`flags_of`): each argparse action's `dest` names its first long option
(`init_from` -> `--init-from`), and a command whose library arguments are
named otherwise than its flags says so itself with
`parser.set_defaults(argument_flags={"output_dir": "--output"})`. Names the
command has no flag for stay as they are; nothing is guessed.

Only an error that carries its `argument` speaks of Python arguments; one
without (a damaged file, a key of config.json, whose names may be spelled
like arguments) is shown as it is.

An error that carries the value it received (`error.received`) is composed
here from its fields: its message with argument names as flags, then
"Received: --flag VALUE." with the value as a shell would read it back
(`shlex.quote`). A message that still writes its own "Received:" tail is
rewritten by the patterns below (the older form, being retired).
"""

import re
import shlex

from keras_elmo.errors import NOT_GIVEN
from keras_elmo.errors import SHOWN_CHARACTERS
from keras_elmo.errors import shown
from keras_elmo.errors import with_received

# A Python argument in backticks, not part of a dotted key
# (options.json `lstm.dim` stays).
_BACKTICKED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")
# `name=` in the "Received: ..." tail of a message, shown as the flag and
# its value as a shell reads it (`--output '/x'`).
_ASSIGNED = re.compile(r"(?<![\w.-])([A-Za-z_][A-Za-z0-9_]*)=")
_RECEIVED = "Received: "


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


def _assigned(flags):
    def replace(match):
        name = match.group(1)
        return f"{flags[name]} " if name in flags else match.group(0)

    return replace


def _shell_value(value):
    """`value` as the command line received it: a string shell-quoted
    (at most `SHOWN_CHARACTERS` of it), anything else as `shown`."""
    if isinstance(value, str):
        if len(value) > SHOWN_CHARACTERS:
            value = value[: SHOWN_CHARACTERS - 3] + "..."
        return shlex.quote(value)
    return shown(value)


def _from_fields(error, flags):
    """The message of an error that carries `received`, composed from its
    fields in the command line's words."""
    text = _BACKTICKED.sub(_flag(flags), error.message)
    flag = flags.get(error.argument)
    if flag is None:
        return with_received(text, error.received_text())
    tail = f"Received: {flag} {_shell_value(error.received)}."
    return with_received(text, tail)


def command_line_message(error, flags):
    """The message of `error` with its Python argument names as `flags`
    name them, if it is about an argument (`error.argument`); one whose
    message does not name its argument is prefixed with its flag."""
    text = str(error)
    argument = getattr(error, "argument", None)
    if argument is None:
        return text
    if getattr(error, "received", NOT_GIVEN) is not NOT_GIVEN:
        text = _from_fields(error, flags)
        flag = flags.get(argument)
        return f"{flag}: {text}" if flag and flag not in text else text
    head, received, tail = text.rpartition(_RECEIVED)
    if received:
        text = head + received + _ASSIGNED.sub(_assigned(flags), tail)
    text = _BACKTICKED.sub(_flag(flags), text)
    flag = flags.get(argument)
    if flag is not None and flag not in text:
        text = f"{flag}: {text}"
    return text
