"""Beam's pipeline options, checked before a pipeline is built.

Beam parses its options leniently and late: an option it does not know
(`--direct_num_worker=2`, a typo) is kept and never used, a word that is
no option is dropped, a value it refuses (`--direct_num_workers=two`)
exits the process through argparse with Beam's 120-line usage, and an
unknown runner fails only when the pipeline starts, with a traceback.
`pipeline_options` refuses each of these at once, naming the option, in
one line.
"""

import contextlib
import io
import logging
import re

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.options.pipeline_options import StandardOptions
from apache_beam.runners.runner import create_runner

from elmo_core.errors import KerasElmoError

# Beam's own options, named in messages (keras-elmo's flags are not).
BEAM_EXAMPLE = "--direct_num_workers=2"
BEAM_HELP = "python -m apache_beam.examples.wordcount --help"


def pipeline_options(flags, argument="beam_options"):
    """`flags` (a list of str, or `PipelineOptions`, returned as they are)
    as checked `PipelineOptions`: each a `--name=value` or `--name value`
    that Beam knows, with a value it takes, and a runner it has.
    `argument` names `flags` in messages."""
    if isinstance(flags, PipelineOptions):
        return flags
    flags = _strings(flags, argument)
    _check_words(flags, argument)
    refused = io.StringIO()
    logging.disable(logging.WARNING)  # Beam warns of what it discards
    try:
        with contextlib.redirect_stderr(refused):
            options = PipelineOptions(flags)
            known = options.get_all_options()
            every = options.get_all_options(retain_unknown_options=True)
    except (ValueError, TypeError) as error:  # argparse's own, e.g. for "-"
        raise KerasElmoError(
            f"Beam refuses its options: {error}.", argument, received=flags
        ) from None
    except SystemExit:
        reason = _argparse_error(refused)
        raise KerasElmoError(
            f"Beam refuses its options: {reason}.",
            argument,
            received=_named(flags, re.search(r"argument (--[\w-]+)", reason)),
        ) from None
    finally:
        logging.disable(logging.NOTSET)
    unknown = sorted(set(every) - set(known))
    if unknown:
        raise KerasElmoError(
            f"Beam has no option --{unknown[0]} (a typo?). Beam lists its "
            f"options with `{BEAM_HELP}`.",
            argument,
            received=_named(flags, f"--{unknown[0]}"),
        )
    check_runner(options.view_as(StandardOptions).runner, argument)
    return options


def _strings(flags, argument):
    if isinstance(flags, (str, bytes)) or not hasattr(flags, "__iter__"):
        raise KerasElmoError(
            f"`{argument}` must be a list of Beam options (str), e.g. "
            f"[{BEAM_EXAMPLE!r}], or a PipelineOptions.",
            argument,
            received=flags,
        )
    flags = list(flags)
    for flag in flags:
        if not isinstance(flag, str):
            raise KerasElmoError(
                f"`{argument}` must hold Beam options as str.",
                argument,
                received=flag,
            )
    return flags


def _check_words(flags, argument):
    """A word that is no option must be the value of the option before it
    (`--project my-project`); Beam would drop it silently."""
    for i, flag in enumerate(flags):
        previous = flags[i - 1] if i else ""
        takes_value = previous.startswith("-") and "=" not in previous
        if not flag.startswith("-") and not takes_value:
            raise KerasElmoError(
                "A word among the Beam options that is no option (nor the "
                "value of the one before); each starts with `--` (e.g. "
                f"{BEAM_EXAMPLE}).",
                argument,
                received=flag,
            )


def _named(flags, option):
    """The flag that gives `option` (a name, or a regex match of one), or
    all the flags."""
    if option is not None and not isinstance(option, str):
        option = option.group(1)
    for flag in flags:
        if option and (flag == option or flag.startswith(f"{option}=")):
            return flag
    return flags


def _argparse_error(refused):
    lines = refused.getvalue().strip().splitlines() or ["(no reason given)"]
    return lines[-1].split("error: ", 1)[-1]


def check_runner(name, argument="runner"):
    """Refuses a runner Beam does not have (None: Beam's default)."""
    if name is None:
        return None
    try:
        create_runner(name)
    except (ValueError, ImportError, TypeError, AttributeError):
        raise KerasElmoError(
            f"Beam has no runner {name!r}: DirectRunner, PrismRunner, "
            "FlinkRunner, SparkRunner, DataflowRunner, ... (or a runner "
            "class as package.module.ClassName).",
            argument,
            received=name,
        ) from None
    return name
