"""Writing outputs safely: atomic replacement and output-path checks.

Every writer of the package goes through `atomic_output`: it writes to a
temporary name in the same directory and renames it over the final path
only when the write completed, so a failed or killed command never leaves a
half-written output and never touches an existing one.
"""

import contextlib
import os
import shutil

from keras_elmo.errors import OutputPathError

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


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_output_file(path, inputs=(), argument="path"):
    """Checks that `path` can be written as a file, before any work.

    Refuses a directory, a missing parent directory, a parent that is a
    file, and any path equal to one of `inputs` (a command never overwrites
    its own input). `argument` is the caller's name of `path`, for
    messages (e.g. `"output_file"`).
    """
    path = os.fspath(path)
    for source in inputs:
        if source is not None and _same_file(path, source):
            raise OutputPathError(
                f"`{argument}` is also one of the inputs; it would be "
                "destroyed. Write the output to another path. Received: "
                f"{argument}={path!r}.",
                argument,
            )
    if os.path.isdir(path):
        raise OutputPathError(
            f"`{argument}` is a directory; expected a file path to write "
            f"(e.g. {os.path.join(path, 'output.hdf5')!r}). Received: "
            f"{argument}={path!r}.",
            argument,
        )
    _check_parent(path, argument)
    return path


def check_output_directory(path, inputs=(), argument="path"):
    """Checks that `path` can be used as an output directory.

    Refuses an existing file at `path`, a parent that is a file, and a
    directory that is (or lies inside) one of `inputs`. `argument` is the
    caller's name of `path`, for messages (e.g. `"output_dir"`).
    """
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise OutputPathError(
            f"`{argument}` is an existing file; expected a directory (new, "
            "or one written before by the same call). Choose another path. "
            f"Received: {argument}={path!r}.",
            argument,
        )
    for source in inputs:
        if source is not None and _same_file(path, source):
            raise OutputPathError(
                f"`{argument}` is also one of the inputs; it would be "
                "overwritten. Choose another directory. Received: "
                f"{argument}={path!r}.",
                argument,
            )
    _check_parent(path, argument)
    return path


def _check_parent(path, argument):
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise OutputPathError(
            f"`{argument}`: {parent} is a file, not a directory, so nothing "
            f"can be written under it. Received: {argument}={path!r}.",
            argument,
        )
