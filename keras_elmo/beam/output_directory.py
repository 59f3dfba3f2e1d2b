"""Who owns a corpus run's output directory, and what `overwrite` deletes.

A corpus run writes its marker (`parquet_layout.OUTPUT_MARKER`) into its
output directory before anything else; the marker holds the identity of
the directory it was written into (a local one's device and inode, a
remote one's path) and the id of the claim, which the run's
`summary.json` repeats. A marker counts only in the directory it names,
and a summary only with the marker's id: a marker copied in from another
output, beside a user's own `summary.json`, proves nothing. `claim_output`
is the one rule for a directory a run is to write:

- new, or empty: the run takes it (the marker is written);
- holding only a marker: the leftover of a run that wrote nothing yet;
  taken as it is;
- holding a marker and nothing but a run's files (the summary, the
  shards, Beam's temporary folders): a previous run, finished or not;
  refused, unless `overwrite`, which deletes those files (the summary
  first, so that nothing reads a half-deleted output as complete; the
  marker is kept, so that a deletion cut short is finished by the next
  `overwrite`);
- anything else (no marker, or files no run writes beside it) is refused
  with what was found: files are never deleted by their names alone,
  which a user's own files may share (`summary.json`).

Nothing is deleted before everything in the directory was looked at.
Local directories and any Beam filesystem (gs://, s3://, ...) alike.
"""

import os
import shutil
import uuid

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from elmo_core.embedding_files import parquet_layout as layout
from elmo_core.errors import OutputPathError
from elmo_core.files import atomic_output

# Names shown of what a refused directory holds.
_SHOWN_NAMES = 5


def is_local(path):
    """Whether a Beam path is on the local disk."""
    return FileSystems.get_scheme(path) in (None, "file")


def local_path(path):
    """A local Beam path as the OS names it (`file://` removed)."""
    return path[len("file://") :] if path.startswith("file://") else path


def claim_output(output, overwrite=False):
    """Makes the directory `output` this run's, by the rules of the module
    docstring, and returns the id of the claim (for its summary); raises
    `OutputPathError` saying what it found otherwise."""
    found = _entries(output)
    run = _marker_run(output) if layout.OUTPUT_MARKER in found else None
    foreign = sorted(name for name in found if not layout.is_run_file(name))
    if run is not None and layout.SUMMARY_FILE in found:
        if _summary_run(output) != run:  # a summary of no run of this claim
            foreign = sorted([*foreign, layout.SUMMARY_FILE])
    run_files = sorted(set(found) - {layout.OUTPUT_MARKER})
    if found and run is None:
        raise _not_ours(output, sorted(found))
    if foreign:
        raise _mixed(output, foreign)
    if run_files and not overwrite:
        raise _previous_run(output, run_files)
    if run_files:
        _delete_run(output, found)
    return run if run is not None else _write_marker(output)


def _entries(output):
    """`{name: [paths]}` of what lies directly in `output` (each with the
    files under it, on a remote filesystem); {} when it does not exist."""
    if is_local(output):
        local = local_path(output)
        if not os.path.isdir(local):
            return {}
        return {entry.name: [entry.path] for entry in os.scandir(local)}
    prefix = FileSystems.join(output, "")
    matched = FileSystems.match([FileSystems.join(output, "**")])[0]
    entries = {}
    for metadata in matched.metadata_list:
        name = metadata.path[len(prefix) :].split("/", 1)[0]
        entries.setdefault(name, []).append(metadata.path)
    return entries


def _identity(output):
    """What a marker records of the directory `output`: a local one's
    device and inode (they stay when it is renamed, and a copy has
    others), a remote one's path."""
    if is_local(output):
        info = os.stat(local_path(output))
        return {"device": info.st_dev, "inode": info.st_ino}
    return {"path": output.rstrip("/")}


def _head(output, name, size=1 << 16):
    """The first `size` bytes of the file `name` in `output`, or None."""
    try:
        with FileSystems.open(FileSystems.join(output, name)) as f:
            return f.read(size)
    except (OSError, BeamIOError):
        return None


def _marker_run(output):
    """The claim id of the marker in `output`, if it was written there."""
    data = _head(output, layout.OUTPUT_MARKER)
    if data is None:
        return None
    return layout.read_marker(data, _identity(output))


def _summary_run(output):
    data = _head(output, layout.SUMMARY_FILE, layout.MAX_SUMMARY_BYTES)
    return None if data is None else layout.summary_run(data)


def _shown(names):
    more = len(names) - _SHOWN_NAMES
    listed = ", ".join(names[:_SHOWN_NAMES])
    return f"{listed} and {more} more" if more > 0 else listed


def _not_ours(output, names):
    return OutputPathError(
        f"`output` {output} holds files that no corpus run wrote there "
        f"({_shown(names)}): no {layout.OUTPUT_MARKER} that a run wrote "
        "into this directory is in it (a run writes it first; one copied "
        "from elsewhere proves nothing). Nothing was deleted, with "
        "`overwrite` or without. Choose a new or empty directory.",
        "output",
    )


def _mixed(output, names):
    return OutputPathError(
        f"`output` {output} holds a corpus run and other files ("
        f"{_shown(names)}); a run deletes only a directory that holds "
        "nothing but a run's files. Nothing was deleted: move those files "
        "out, or choose another directory.",
        "output",
    )


def _previous_run(output, names):
    finished = layout.SUMMARY_FILE in names
    what = (
        "a finished run"
        if finished
        else f"the leftovers of a run that did not finish ({len(names)} "
        f"files, no {layout.SUMMARY_FILE})"
    )
    return OutputPathError(
        f"`output` {output} holds {what}. Choose another directory, or "
        "pass `overwrite` to delete it and embed again.",
        "output",
    )


def _delete_run(output, found):
    """Deletes a run's files: the summary first, the marker never."""
    order = sorted(
        (name for name in found if name != layout.OUTPUT_MARKER),
        key=lambda name: name != layout.SUMMARY_FILE,
    )
    try:
        for name in order:
            _delete(found[name])
    except OSError as error:
        raise OutputPathError(
            f"`output` {output}: deleting the previous run failed at "
            f"{getattr(error, 'filename', None) or name} ({error}). Its "
            f"{layout.SUMMARY_FILE} is gone, so nothing reads it as "
            "complete; fix the cause and run again with `overwrite` to "
            "finish deleting it.",
            "output",
        ) from None


def _delete(paths):
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif is_local(path):
            os.remove(path)
        else:
            FileSystems.delete([path])


def _write_marker(output):
    """Writes the marker of a new claim (first into a temporary name,
    then renamed, where the filesystem renames); returns its id."""
    run = uuid.uuid4().hex
    if is_local(output):
        local = local_path(output)
        os.makedirs(local, exist_ok=True)
        text = layout.marker_text(run, _identity(output))
        with atomic_output(os.path.join(local, layout.OUTPUT_MARKER)) as tmp:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
        return run
    path = FileSystems.join(output, layout.OUTPUT_MARKER)
    with FileSystems.create(path) as f:
        f.write(layout.marker_text(run, _identity(output)).encode("utf-8"))
    return run
