"""Which files a user's file patterns name, without TensorFlow.

`resolve_files` is the one reading of the `--train`, `--validation` and
`prepare` inputs: globs expanded, each file once, each checked (not a
folder, pipe or device; a compression the package reads).
"""

import glob
import os

from elmo_core.errors import InputPathError
from elmo_core.errors import MissingInputError
from elmo_core.errors import check_strings
from elmo_core.errors.blame import about
from elmo_core.files.paths import check_input_file
from elmo_core.files.paths import distinct_files
from elmo_core.text.lines import check_compression


def resolve_files(file_patterns, argument="file_patterns"):
    """Expands glob patterns (str or list) into a sorted list of files,
    each file once however many patterns match it (by any path); an error
    is about `argument`, the caller's name of the patterns.

    Example:

    >>> elmo_core.text.resolve_files("tests/fixtures/bilm-tf/train/d*.txt")
    ['tests/fixtures/bilm-tf/train/data.txt']
    """
    if isinstance(file_patterns, str):
        file_patterns = [file_patterns]
    file_patterns = check_strings(file_patterns, argument)
    files = set()
    for pattern in file_patterns:
        with about(argument):
            files.update(_matches(pattern))
    return distinct_files(sorted(files))


def _matches(pattern):
    """The files `pattern` matches: one at least, none a pipe or device."""
    matches = [p for p in glob.glob(pattern) if os.path.isfile(p)]
    if not matches and os.path.isdir(pattern):
        raise InputPathError(
            f"{pattern} is a directory; pass the text files in it, e.g. "
            f"'{os.path.join(pattern, '*.txt')}' (quoted, so the shell "
            "does not expand it)."
        )
    if not matches and os.path.lexists(pattern):
        # A pipe, device, socket or symbolic link loop: say which.
        check_input_file(pattern, "Input file", "a text file")
    if not matches:
        raise MissingInputError(
            f"No file matches {pattern!r}. Pass a file path or a glob "
            "such as 'data/*.txt' (quoted, so the shell does not expand "
            "it)."
        )
    for path in matches:
        check_compression(path)
    return matches
