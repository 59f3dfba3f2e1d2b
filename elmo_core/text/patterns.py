"""Which files a user's file patterns name, without TensorFlow.

`resolve_files` is the one reading of the `--train`, `--validation`,
`evaluate --data` and `prepare` inputs (and `matching_paths` of the
local inputs of `embed-corpus`): each pattern is matched once, here, and
the files it matches are read as named, never matched again. A pattern
is a glob (`*`, `?`, `[...]`; `**` too where `recursive`), matched the
shell's way:

- the files it matches (folders left out, and every match checked: not
  a pipe or device, a compression the package reads);
- a pattern that matches nothing names the file of that name, if there
  is one: `x[1].txt` is the file `x[1].txt` when no `x1.txt` is there;
- a pattern that names a file and matches other files is refused, with
  the way to say which: a glob character is named literally inside
  brackets (`x[[]1].txt` is `x[1].txt`, as Python's `glob.escape`
  writes it), never guessed.
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
            files.update(_checked(pattern))
    return distinct_files(sorted(files))


def matching_paths(pattern, recursive=False):
    """The paths the local `pattern` names, by the rules of the module
    (sorted; folders a glob matches left out, a folder named itself
    kept, for the caller to refuse); [] when it names nothing."""
    if not glob.has_magic(pattern) or os.path.isdir(pattern):
        return [pattern] if os.path.lexists(pattern) else []
    found = glob.glob(pattern, recursive=recursive)
    matches = sorted(path for path in found if not os.path.isdir(path))
    if not os.path.lexists(pattern):
        return matches
    if not matches or matches == [pattern]:
        return [pattern]
    raise InputPathError(
        f"{pattern!r} names a file, and as a pattern matches others "
        f"({_listed(matches)}); say which: {glob.escape(pattern)!r} for "
        "that file alone (a glob character in brackets is itself), or a "
        "pattern that names no file."
    )


def _listed(paths, shown=3):
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


def _checked(pattern):
    """The files `pattern` names: one at least, each a readable text file
    (no folder, pipe or device), plain or gzip."""
    matches = matching_paths(pattern)
    if not matches:
        raise MissingInputError(
            f"No file matches {pattern!r}. Pass a file path or a glob "
            "such as 'data/*.txt' (quoted, so the shell does not expand "
            "it)."
        )
    if matches == [pattern] and os.path.isdir(pattern):
        raise InputPathError(
            f"{pattern} is a directory; pass the text files in it, e.g. "
            f"'{os.path.join(glob.escape(pattern), '*.txt')}' (quoted, so "
            "the shell does not expand it)."
        )
    for path in matches:
        check_input_file(path, "Input file", "a text file")
        check_compression(path)
    return matches
