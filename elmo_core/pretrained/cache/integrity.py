"""Whether the cached copy of a URL is whole: checked on every use.

A file with a record in the cache index (`index.py`) is checked against the
recorded size on every use, and against the recorded SHA-256 when asked
(`keras-elmo download --verify`). A file found without a record (put in
the cache by hand, by an older keras_elmo, or with a damaged index) is
checked in full once (the table's size and hash, not an HTML page, that it
loads) and then recorded. An unpacked archive is checked member by member.
"""

import os

from elmo_core.pretrained.archive import member_path
from elmo_core.pretrained.cache import index
from elmo_core.pretrained.verify import file_problem
from elmo_core.pretrained.verify import sha256
from elmo_core.pretrained.verify import size_problem

MISSING = "not in the cache"
_FOUND = "found in the cache"


def cache_problem(url, target, expected, verify=False, adopt=True):
    """None if the cached copy at `target` is whole, else what is wrong
    (`MISSING` when there is none). `adopt=False`: a copy without a record
    counts as whole without the full check (for listings)."""
    entry = index.read_index().get(url)
    if expected.extract:
        if not os.path.isdir(target):
            return MISSING
        if entry is None or "members" not in entry:
            return _adopt_folder(url, target) if adopt else None
        return _members_problem(target, entry["members"], verify)
    if not os.path.isfile(target):
        return MISSING
    if entry is None:
        return _adopt_file(url, target, expected) if adopt else None
    return _damaged(_file_problem(target, expected, entry, verify))


def _file_problem(target, expected, entry, verify):
    problem = size_problem(target, entry["size"])
    if problem is None and expected.size not in (None, entry["size"]):
        problem = f"its record says {entry['size']:,} bytes, the table " + (
            f"{expected.size:,}"
        )
    if problem is None and verify and sha256(target) != entry["sha256"]:
        problem = "its SHA-256 differs from the one recorded at download"
    return problem


def _damaged(problem):
    return None if problem is None else f"in the cache but damaged: {problem}"


def _adopt_file(url, target, expected):
    digest = sha256(target)
    problem = file_problem(target, expected, digest)
    if problem is None:
        size = os.path.getsize(target)
        index.record(url, index.file_entry(size, digest, _FOUND))
    return _damaged(problem)


def _members_problem(folder, members, verify):
    for name, member in members.items():
        path = member_path(folder, name)
        if not os.path.isfile(path):
            return _damaged(f"{name} is missing from the unpacked folder")
        problem = size_problem(path, member["size"])
        if problem is None and verify and sha256(path) != member["sha256"]:
            problem = "its SHA-256 differs from the one recorded at unpacking"
        if problem is not None:
            return _damaged(f"{name}: {problem}")
    return None


def _adopt_folder(url, folder):
    members = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, folder).replace(os.sep, "/")
            members[relative] = {
                "size": os.path.getsize(path),
                "sha256": sha256(path),
            }
    if not members:
        return _damaged("the unpacked folder is empty")
    index.record(url, {"members": members, "origin": _FOUND})
    return None
