"""Expensive things tests need, built once per test run and shared by
every worker process (pytest-xdist's recipe: the workers' base temporary
folders share a parent, and a file lock there lets one worker build a
thing while the others wait for it).

A test that checks the act itself (an export, a training run) still does
it; a test that only needs its result takes the shared one.
"""

import os

from filelock import FileLock


def shared_path(tmp_path_factory, name, build):
    """The path `name` in the test run's shared folder, made by
    `build(path)` the first time any worker asks for it."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder = root / "shared"
    folder.mkdir(exist_ok=True)
    path = folder / name
    done = folder / f"{name}.done"
    with FileLock(str(folder / f"{name}.lock")):
        if not done.exists():
            build(str(path))
            done.touch()
    return str(path)
