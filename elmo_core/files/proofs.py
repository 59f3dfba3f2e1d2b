"""What proves that a file is the one a record describes.

A program that writes files beside a record of them (`prepare` writes
`train.txt.gz` beside `prepare.json`) puts each file's `proof` into the
record: its size and SHA-256. A later reader believes the record of a
file only when the file still fits its proof (`proven`): a file's name
proves nothing, since a user's own file may share it, and a record
copied from another folder describes other files.

A record is untrusted: `read_json_object` reads one, and a record too
large, not JSON or not an object counts as none.
"""

import hashlib
import json
import os

_BLOCK_BYTES = 1 << 20
_SHA256_HEX = 64


def proof(path):
    """`{"bytes": size, "sha256": hex}` of the file at `path`.

    Example:

    >>> from elmo_core.files.proofs import proof
    >>> proof("tests/fixtures/bilm-tf/train/vocab.txt")["bytes"]
    190
    """
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while block := f.read(_BLOCK_BYTES):
            digest.update(block)
            size += len(block)
    return {"bytes": size, "sha256": digest.hexdigest()}


def proven(path, recorded):
    """Whether the regular file at `path` fits `recorded` (a `proof`, or
    whatever an untrusted record holds there): the size first, so that
    another file is rarely read whole."""
    if not isinstance(recorded, dict):
        return False
    size, digest = recorded.get("bytes"), recorded.get("sha256")
    if not isinstance(size, int) or not isinstance(digest, str):
        return False
    if len(digest) != _SHA256_HEX:
        return False
    try:
        if not os.path.isfile(path) or os.path.getsize(path) != size:
            return False
        return proof(path)["sha256"] == digest.lower()
    except OSError:
        return False


def read_json_object(path, max_bytes):
    """The JSON object of the file `path`, or None when the file is
    missing or unreadable, larger than `max_bytes`, not JSON or not an
    object."""
    try:
        if os.path.getsize(path) > max_bytes:
            return None
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
