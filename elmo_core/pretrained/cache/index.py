"""The cache's own index: size and SHA-256 of every verified file.

`<cache>/index.json` records, for each URL (the publisher's, also when it
came from a mirror), the size and SHA-256 of the file as it was verified
after its download (for an unpacked archive: the archive's, and each
unpacked member's). Every use of a cached file checks its size against
this record; `keras-elmo download --verify` checks the hash.

The index is itself untrusted input (a bad copy, a full disk, a hand
edit): one that is too large, not JSON, or not of the expected shape is
treated as missing, with one line on standard error saying so; the cached
files are then checked again in full on their next use and recorded anew.
Writes are atomic (`elmo_core.files.atomic_output`); two processes that
download at once may each drop the other's new record, which only costs a
full check on the next use.
"""

import datetime
import json
import os
import re
import sys

from elmo_core.files import atomic_output
from elmo_core.pretrained.archive import name_problem
from elmo_core.pretrained.cache.location import cache_dir

INDEX_NAME = "index.json"
INDEX_FORMAT = "keras_elmo cache index"
INDEX_VERSION = 1
# An index larger than this is not read (thousands of records fit in 1 MiB).
MAX_INDEX_BYTES = 16 << 20
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_warned = set()


def index_path():
    return os.path.join(cache_dir(), INDEX_NAME)


def read_index():
    """`{url: record}`; empty (with a note on stderr) if damaged."""
    path = index_path()
    try:
        size = os.path.getsize(path)
    except OSError:
        return {}
    try:
        if size > MAX_INDEX_BYTES:
            raise ValueError(f"{size:,} bytes, more than {MAX_INDEX_BYTES:,}")
        with open(path, "rb") as f:
            index = json.loads(f.read().decode("utf-8"))
        return _checked(index)
    except (OSError, ValueError, RecursionError) as e:
        _warn_once(path, f"{type(e).__name__}: {e}")
        return {}


def record(url, entry):
    """Records (or replaces) `entry` for `url`, atomically.

    Returns False (after a note on stderr) if the index cannot be written,
    e.g. in a read-only cache; the file is then checked in full each use.
    """
    files = read_index()
    files[url] = dict(entry, recorded=_now())
    document = {"format": INDEX_FORMAT, "version": INDEX_VERSION}
    document["files"] = dict(sorted(files.items()))
    path = index_path()
    try:
        with atomic_output(path) as temporary:
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump(document, f, indent=1)
    except OSError as e:
        _warn_once(path, f"cannot write it ({e.strerror or e})", "write")
        return False
    return True


def file_entry(size, sha256, origin="downloaded"):
    """A record: `size` in bytes and `sha256` (hex) of a verified file;
    `origin`: "downloaded", or "found in the cache" (put there by hand or
    by an older keras_elmo, and checked in full before it was recorded)."""
    return {"size": size, "sha256": sha256, "origin": origin}


def _now():
    moment = datetime.datetime.now(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _warn_once(path, reason, action="read"):
    key = (path, action)
    if key in _warned:
        return
    _warned.add(key)
    if action == "read":
        print(
            f"keras_elmo: the cache index {path} is damaged ({reason}); "
            "treating it as missing: cached files are checked again in "
            "full on their next use and recorded anew.",
            file=sys.stderr,
        )
    else:
        print(
            f"keras_elmo: the cache index {path}: {reason}; cached files "
            "are checked in full on each use.",
            file=sys.stderr,
        )


def _checked(index):
    """The `files` of a parsed index; ValueError if it is not an index."""
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        raise ValueError(f"not a {INDEX_FORMAT!r} JSON object")
    if index.get("version") != INDEX_VERSION:
        raise ValueError(
            f"version {index.get('version')!r}, expected {INDEX_VERSION}"
        )
    files = index.get("files")
    if not isinstance(files, dict):
        raise ValueError("'files' is not an object")
    for url, entry in files.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{url}: not an object")
        members = entry.get("members")
        if members is None or "size" in entry or "sha256" in entry:
            _check_entry(entry, url)
        if members is not None:
            if not isinstance(members, dict) or not members:
                raise ValueError(f"{url}: 'members' is not an object")
            for name, member in members.items():
                if name_problem(name):
                    raise ValueError(
                        f"{url}: member {name!r} {name_problem(name)}"
                    )
                _check_entry(member, f"{url} member {name}")
    return files


def _check_entry(entry, where):
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: not an object")
    size = entry.get("size")
    if type(size) is not int or size < 0:
        raise ValueError(f"{where}: size {size!r} is not a byte count")
    sha256 = entry.get("sha256")
    if not isinstance(sha256, str) or not _SHA256.match(sha256):
        raise ValueError(f"{where}: sha256 {sha256!r} is not a SHA-256")
