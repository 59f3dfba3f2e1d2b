"""What lies at a path a user gave, checked before anything opens it.

Every reader of a user path (options, weights, vocabularies, text, model
folders, runtime files) asks `check_input_file` or `check_input_directory`
first: a regular file (or directory) that can be read passes; anything
else is refused at once with what lies there, in words. Opening a FIFO
blocks until a writer comes, and `/dev/zero` never ends, so neither is
ever opened; a symbolic link loop, a broken link, a missing path and a
permission problem each get their own message instead of a bare
"No such file".
"""

import errno
import os
import stat

from elmo_core.errors import InputPathError
from elmo_core.errors import KerasElmoError
from elmo_core.errors import MissingInputError

# File types other than regular files and directories, in words.
_OTHER_KINDS = (
    (stat.S_ISFIFO, "a pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode):
    """What a `stat` mode is, in words ("a regular file", "a directory",
    "a pipe (FIFO)", ...)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    for test, words in _OTHER_KINDS:
        if test(mode):
            return words
    return "not a file or directory"


def _stat_error(path, what, expected, error, argument):
    """The error to raise for `path`, whose `os.stat` raised `error`."""
    if error.errno == errno.ENOENT and os.path.islink(path):
        return MissingInputError(
            f"{what} {path} is a broken symbolic link (to "
            f"{os.readlink(path)}, which does not exist).",
            argument,
        )
    if error.errno in (errno.ENOENT, errno.ENOTDIR):
        return MissingInputError(
            f"{what} not found: {path}. Expected {expected}.", argument
        )
    if error.errno == errno.ELOOP:
        return InputPathError(
            f"{what} {path} is a symbolic link loop (following it never "
            "reaches a file); fix or remove the link.",
            argument,
        )
    if error.errno == errno.EACCES:
        return InputPathError(
            f"{what} {path} cannot be reached: permission denied (a "
            "directory on the way cannot be searched).",
            argument,
        )
    return InputPathError(
        f"{what} {path} cannot be read: {error.strerror}.", argument
    )


def _check(path, what, is_kind, expected, access, hint, argument):
    if not isinstance(path, (str, os.PathLike)) or not isinstance(
        os.fspath(path), str
    ):
        raise InputPathError(
            f"{what} must be a path (a str); expected {expected}.",
            argument,
            received=path,
        )
    path = os.fspath(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise _stat_error(path, what, expected, error, argument) from None
    except ValueError:  # an embedded NUL byte
        raise InputPathError(
            f"{what} {path!r} is not a valid path.", argument
        ) from None
    if not is_kind(mode):
        more = f" {hint}" if hint else ""
        raise InputPathError(
            f"{what} {path} is {kind_of(mode)}; expected {expected}.{more}",
            argument,
        )
    if not os.access(path, access):
        raise InputPathError(
            f"{what} {path} cannot be read: permission denied.", argument
        )
    return path


def check_input_file(
    path, what, expected="a regular file", hint=None, argument=None
):
    """`path` as a str if it is a regular file (or a link to one) that can
    be read; else `MissingInputError` (a `FileNotFoundError`) or
    `InputPathError` naming `what` ("Options file") and what lies there.

    Args:
        path: str or `os.PathLike`.
        what: str. What the file is to the reader, starting a message
            ("Options file", or "`vocabulary`").
        expected: str. What the reader takes, in words.
        hint: str or None. A sentence added to a wrong-kind error.
        argument: str or None. The Python argument `path` came in
            ("vocabulary"), which the error then carries.
    """
    return _check(path, what, stat.S_ISREG, expected, os.R_OK, hint, argument)


def check_input_directory(
    path, what, expected="a directory", hint=None, argument=None
):
    """`path` as a str if it is a directory that can be listed and read;
    else the errors of `check_input_file`."""
    access = os.R_OK | os.X_OK
    return _check(path, what, stat.S_ISDIR, expected, access, hint, argument)


def check_path(value, argument):
    """`value` as a str path: a non-empty str or `os.PathLike` (not bytes,
    not a number), else `KerasElmoError` naming `argument`."""
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if isinstance(path, str) and path and "\0" not in path:
            return path
    raise KerasElmoError(
        f"`{argument}` must be a path (a non-empty str).",
        argument,
        received=value,
    )


def identity(paths):
    """What the files (or folders) `paths` are now: for each, its device,
    inode, size and modification time (ns), or None where nothing lies.
    Two identities differ when any of them was replaced, rewritten or
    touched since: the key of a cache of what was read from them."""
    found = []
    for path in paths:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            found.append((path, None))
            continue
        found.append(
            (path, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))
        )
    return tuple(found)


def distinct_files(paths, local=os.fspath):
    """`paths` with every file kept once, at its first place: two paths
    are one file when they lead to the same device and inode (`a.txt`,
    `./a.txt`, a link to it), or, where nothing can be read there (a
    remote path), when they are the same string.

    Args:
        paths: list of str. The files.
        local: callable. A path -> the OS path to look at, or None for a
            path on no local disk. Defaults to `os.fspath`.

    Example:

    >>> distinct_files(["setup.py", "./setup.py", "README.md", "setup.py"])
    ['setup.py', 'README.md']
    """
    seen, kept = set(), []
    for path in paths:
        key = ("path", os.fspath(path))
        where = local(path)
        if where is not None:
            try:
                info = os.stat(where)
                key = ("inode", info.st_dev, info.st_ino)
            except (OSError, ValueError):
                pass
        if key not in seen:
            seen.add(key)
            kept.append(path)
    return kept
