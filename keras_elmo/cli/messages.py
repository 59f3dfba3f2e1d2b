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
"""

import re

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


def command_line_message(error, flags):
    """The message of `error` with its Python argument names as `flags`
    name them, if it is about an argument (`error.argument`); one whose
    message does not name its argument is prefixed with its flag."""
    text = str(error)
    argument = getattr(error, "argument", None)
    if argument is None:
        return text
    head, received, tail = text.rpartition(_RECEIVED)
    if received:
        text = head + received + _ASSIGNED.sub(_assigned(flags), tail)
    text = _BACKTICKED.sub(_flag(flags), text)
    flag = flags.get(argument)
    if flag is not None and flag not in text:
        text = f"{flag}: {text}"
    return text
