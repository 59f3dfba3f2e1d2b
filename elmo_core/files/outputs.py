"""Writing outputs safely: atomic replacement and output-path checks.

Every writer of the package goes through `atomic_output`: it writes to a
temporary name in the same directory and renames it over the final path
only when the write completed, so a failed or killed command never leaves a
half-written output and never touches an existing one.
"""

import contextlib
import errno
import io
import os
import shutil
import stat

from elmo_core.errors import OutputPathError
from elmo_core.files.paths import check_path
from elmo_core.files.paths import kind_of

PARTIAL_SUFFIX = ".partial"


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


@contextlib.contextmanager
def atomic_output(path, directory=False):
    """Yields a temporary path; renames it to `path` when the block succeeds.

    Args:
        path: str. The final file (or directory) path.
        directory: bool. The output is a directory (created empty for the
            block); an existing directory at `path` is replaced whole.

    Missing parent directories are created. On an exception (Ctrl-C
    included) the temporary output is removed and `path` is left as it was;
    a killed process leaves it behind, and the next write removes it.
    """
    temporary = f"{path}{PARTIAL_SUFFIX}"
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    _remove(temporary)
    if directory:
        os.makedirs(temporary)
    try:
        yield temporary
    except BaseException:
        _remove(temporary)
        raise
    if directory and os.path.isdir(path):
        previous = f"{path}.previous"
        _remove(previous)
        os.rename(path, previous)
        os.rename(temporary, path)
        _remove(previous)
    else:
        os.replace(temporary, path)


class _GuardedFile(io.RawIOBase):
    """A file for HDF5 to write through (h5py's file-object driver) that
    never fails under it: HDF5 does not survive a failed write (a full
    disk or the file-size limit crashed it with SIGSEGV while it flushed
    its caches). The first `OSError` of the file is kept; from then on the
    file only counts (writes are dropped, reads give zeros) and
    `hdf5_output` raises the error once HDF5 has closed."""

    def __init__(self, path):
        super().__init__()
        self.file = open(path, "w+b")  # buffered: HDF5 writes small pieces
        self.error = None
        self.position = 0
        self.size = 0

    def _fail(self, error):
        if self.error is None:
            self.error = error

    def readable(self):
        return True

    def writable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position}
        position = base.get(whence, self.size) + offset
        moved, self.position = position != self.position, position
        if self.error is None and moved:  # a seek flushes the buffer
            try:
                self.file.seek(self.position)
            except OSError as error:
                self._fail(error)
        return self.position

    def tell(self):
        return self.position

    def readinto(self, buffer):
        count = 0
        if self.error is None:
            try:
                count = self.file.readinto(buffer) or 0
            except OSError as error:
                self._fail(error)
        if self.error is not None:  # what was dropped reads as zeros
            count = min(len(buffer), max(self.size - self.position, 0))
            buffer[:count] = bytes(count)
        self.position += count
        return count

    def write(self, data):
        size = memoryview(data).nbytes
        if self.error is None:
            try:
                self.file.write(data)
            except OSError as error:
                self._fail(error)
        self.position += size
        self.size = max(self.size, self.position)
        return size

    def truncate(self, size=None):
        size = self.position if size is None else size
        if self.error is None:
            try:
                self.file.truncate(size)
            except OSError as error:
                self._fail(error)
        self.size = size
        return size

    def flush(self):
        if self.error is None and not self.file.closed:
            try:
                self.file.flush()
            except OSError as error:
                self._fail(error)

    def close(self):
        if self.closed:
            return
        super().close()  # flushes first
        try:
            self.file.close()
        except OSError as error:  # the last buffered bytes did not fit
            self._fail(error)


def disk_error(path, error):
    """An `OutputPathError` for a write to `path` that failed with the
    `OSError` `error`: a full disk and the file-size limit said so."""
    reasons = {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is used up",
        errno.EFBIG: "the file-size limit (`ulimit -f`) was reached",
    }
    reason = reasons.get(error.errno, "the write failed")
    return OutputPathError(
        f"Writing {path} failed: {reason} ({error.strerror or error}). "
        "Nothing was replaced: the previous output, if any, is as it was. "
        "Free some space (or raise the limit), or write elsewhere."
    )


@contextlib.contextmanager
def hdf5_output(path):
    """Yields an h5py file open for writing that becomes `path` when the
    block succeeds (through `atomic_output`). A failed write (a full disk,
    the file-size limit) raises `OutputPathError` saying so, once HDF5
    has closed, and leaves `path` as it was."""
    import h5py

    with atomic_output(path) as temporary:
        guard = _GuardedFile(temporary)
        try:
            with h5py.File(guard, "w") as out:
                yield out
        except Exception:
            if guard.error is not None:  # the cause of what followed
                raise disk_error(path, guard.error) from None
            raise
        finally:
            guard.close()
        if guard.error is not None:
            raise disk_error(path, guard.error)


def _identity(path):
    """`(st_dev, st_ino)` of what `path` names (links followed), or None
    when nothing does."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def _chain(path):
    """The identities of `path` and of every directory above it (by its
    real path): what `path` is, and every folder it lies inside."""
    path = os.path.realpath(path)
    chain = []
    while True:
        identity = _identity(path)
        if identity is not None:
            chain.append(identity)
        parent = os.path.dirname(path)
        if parent == path:
            return chain
        path = parent


def _clash(path, source, directory):
    """How writing `path` would touch the input `source`, in words (it is
    the input, lies inside it, or, as a directory replaced whole, holds
    it), or None."""
    source = os.fspath(source)
    if not os.path.exists(source):
        return None
    mine, theirs = _identity(path), _identity(source)
    if (mine is not None and mine == theirs) or (
        os.path.realpath(path) == os.path.realpath(source)
    ):
        return "is also an input"
    if os.path.isdir(source) and theirs in _chain(
        os.path.dirname(os.path.abspath(path))
    ):
        return f"lies inside {source}, an input"
    if directory and mine is not None and mine in _chain(source)[1:]:
        return f"holds {source}, an input"
    return None


def check_inputs_kept(path, inputs, argument="path", directory=False):
    """Refuses an output `path` that is, or lies inside, one of `inputs`
    (files or folders), or that holds one (`directory`: the output is a
    folder, replaced whole), before any work. `argument` is the caller's
    name of `path`, for messages (e.g. `"output_dir"`).

    Paths are compared as the files they name: by real path (symbolic
    links resolved) and by device and inode (hard links, bind mounts, other
    spellings), folders by the inode of every folder above the output.
    """
    path = os.fspath(path)
    clashes = [
        _clash(path, source, directory)
        for source in inputs
        if source is not None and not isinstance(source, dict)
    ]
    # The plainest first: "is also an input" over "lies inside".
    clashes = sorted(c for c in clashes if c is not None)
    clashes.sort(key=lambda clash: not clash.startswith("is "))
    if clashes:
        raise OutputPathError(
            f"`{argument}` {clashes[0]}; an output never replaces, or goes "
            "into, what is read to make it. Write it to another path.",
            argument,
            received=path,
        )


def check_output_file(path, inputs=(), argument="path"):
    """Checks that `path` can be written as a file, before any work.

    Refuses a directory, a device, pipe or socket, a missing parent
    directory, a parent that is a file, and any path that is, or lies
    inside, one of `inputs` (a command never overwrites its own input; see
    `check_inputs_kept`). `argument` is the caller's name of `path`, for
    messages (e.g. `"output_file"`).
    """
    path = check_path(path, argument)
    check_inputs_kept(path, inputs, argument)
    if os.path.isdir(path):
        raise OutputPathError(
            f"`{argument}` is a directory; expected a file path to write "
            f"(e.g. {os.path.join(path, 'output.hdf5')!r}).",
            argument,
            received=path,
        )
    _check_not_special(path, argument)
    _check_parent(path, argument)
    return path


def check_output_directory(path, inputs=(), argument="path"):
    """Checks that `path` can be used as an output directory.

    Refuses an existing file at `path`, a parent that is a file, and a
    directory that is, lies inside or holds one of `inputs`. `argument` is
    the caller's name of `path`, for messages (e.g. `"output_dir"`).
    """
    path = check_path(path, argument)
    if os.path.exists(path) and not os.path.isdir(path):
        raise OutputPathError(
            f"`{argument}` is an existing file; expected a directory (new, "
            "or one written before by the same call). Choose another path.",
            argument,
            received=path,
        )
    check_inputs_kept(path, inputs, argument, directory=True)
    _check_parent(path, argument)
    return path


def _check_not_special(path, argument):
    """An output is written beside `path` and renamed over it: a device,
    pipe or socket there would be replaced (or, through a link, written
    where it leads), so only a regular file or nothing may lie there."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if not stat.S_ISREG(mode):
        raise OutputPathError(
            f"`{argument}` is {kind_of(mode)}; expected a file path to "
            "write (outputs are written whole to a temporary file and "
            "renamed, never streamed).",
            argument,
            received=path,
        )


def _check_parent(path, argument):
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise OutputPathError(
            f"`{argument}`: {parent} is a file, not a directory, so nothing "
            "can be written under it.",
            argument,
            received=path,
        )
