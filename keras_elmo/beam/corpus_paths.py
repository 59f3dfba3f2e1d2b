"""The paths of a corpus run, checked before anything runs: the inputs
(`input_files`: each pattern matches a regular, readable, plain or `.gz`
text file) and the output directory against them (`check_output`: never
an input, never inside a folder the biLM is read from, never holding an
input). Local paths and any Beam filesystem (gs://, s3://, ...) alike.
"""

import os

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from elmo_core.errors import KerasElmoError
from elmo_core.errors import MissingInputError
from elmo_core.errors import OutputPathError
from elmo_core.errors.blame import about
from elmo_core.files import check_output_directory
from elmo_core.files.paths import check_input_file
from elmo_core.files.paths import distinct_files
from elmo_core.text import lines as text_lines
from elmo_core.text.patterns import matching_paths
from keras_elmo.beam.output_directory import is_local
from keras_elmo.beam.output_directory import local_path


def output_path(output):
    if not isinstance(output, (str, os.PathLike)) or not os.fspath(output):
        raise OutputPathError(
            "`output` must be a directory path (local, gs://, ...).",
            "output",
            received=output,
        )
    return os.fspath(output)


def patterns_of(patterns, argument="inputs"):
    """`inputs` as a list of str: one path or glob (str or path), or a
    list of them."""
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    if isinstance(patterns, (bytes, dict)) or not hasattr(patterns, "__iter__"):
        raise KerasElmoError(
            f"`{argument}` must be a path or glob (str), or a list of them.",
            argument,
            received=patterns,
        )
    patterns = list(patterns)
    for pattern in patterns:
        if not isinstance(pattern, (str, os.PathLike)) or not os.fspath(
            pattern
        ):
            raise KerasElmoError(
                f"`{argument}` must hold paths or globs (non-empty str).",
                argument,
                received=pattern,
            )
    if not patterns:
        raise KerasElmoError(
            f"`{argument}` is empty; give at least one path or glob.",
            argument,
            received=patterns,
        )
    return [os.fspath(pattern) for pattern in patterns]


def _match(pattern, argument):
    """The paths `pattern` matches on its Beam filesystem; a local one by
    the package's one rule (`elmo_core.text.patterns.matching_paths`:
    Beam lists a local folder and everything under it before it matches,
    the whole disk for '/*'), and as Beam does, the folders a glob
    matches left out; a folder named itself is matched (and refused as no
    text file)."""
    if is_local(pattern):
        with about(argument):
            found = matching_paths(local_path(pattern), recursive=True)
        return [pattern] if found == [local_path(pattern)] else found
    try:
        return [m.path for m in FileSystems.match([pattern])[0].metadata_list]
    except (ValueError, OSError, BeamIOError) as error:
        raise KerasElmoError(
            f"`{argument}` {pattern} cannot be listed on its filesystem "
            f"({_first_line(error)}). A gs://, s3:// or hdfs:// path needs "
            "Beam's extra for it (e.g. pip install 'apache-beam[gcp]').",
            argument,
            received=pattern,
        ) from None


def _first_line(error):
    lines = str(error).strip().splitlines() or [type(error).__name__]
    return lines[0][:300]


def input_files(patterns, output=None):
    """The files `patterns` match, checked before any work: each pattern
    matches one file at least, a local one is a regular file that can be
    read (never a FIFO, device or directory), and each is plain or `.gz`
    text; a file that several patterns match (by any path) is read once.
    (`output` is checked against them by `check_output`.)"""
    files = []
    for pattern in patterns_of(patterns):
        matched = _match(pattern, "inputs")
        if not matched:
            raise MissingInputError(
                f"`inputs` {pattern} matches no file; expected text files of "
                "one sentence a line (a path or a glob, '.gz' allowed).",
                "inputs",
            )
        for path in matched:
            if is_local(path):
                check_input_file(
                    local_path(path),
                    "`inputs`",
                    "a text file of one sentence a line",
                    hint=_folder_hint(local_path(path)),
                    argument="inputs",
                )
            text_lines.check_compression(path, "inputs")
        files.extend(matched)
    return distinct_files(
        files, local=lambda f: local_path(f) if is_local(f) else None
    )


def _folder_hint(path):
    if not os.path.isdir(path):
        return None
    return (
        "Give the files in a folder as a quoted glob, e.g. "
        f"'{os.path.join(path, '*.txt')}'."
    )


def check_output(output, files, model_inputs=()):
    """Refuses an output directory that is, lies inside or holds an input:
    one of the `files` read, or of the biLM's `model_inputs` (the rule of
    every command, `elmo_core.files.check_output_directory`; on a remote
    filesystem, by path)."""
    output = output_path(output)
    if is_local(output):
        local = [local_path(f) for f in files if is_local(f)]
        check_output_directory(
            local_path(output), [*local, *model_inputs], "output"
        )
        return
    prefix = FileSystems.join(output, "")
    inside = [f for f in files if f == output or f.startswith(prefix)]
    if inside:
        raise OutputPathError(
            f"`output` holds {inside[0]}, an input: the run would read its "
            "own output, and a rerun would delete it. Write the output "
            "elsewhere.",
            "output",
            received=output,
        )
