"""Whether a file is what it should be: size, SHA-256, and that it loads."""

import hashlib
import json
import os
import urllib.parse
import zipfile
import zlib

from elmo_core.pretrained.archive import archive_problem
from elmo_core.pretrained.units import human_size

_CHUNK_BYTES = 1 << 20
# How much of a file is read to tell an HTML page from a model file.
_SNIFF_BYTES = 512


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def file_problem(path, expected, digest=None):
    """None if the file at `path` is whole, else what is wrong with it.

    Checks the size and SHA-256 the table records (if any), that it is not
    an HTML page (a proxy's or portal's answer), and that it loads by its
    type. `digest`: its SHA-256 if already computed.
    """
    size = os.path.getsize(path)
    if expected.size is not None and size != expected.size:
        found, wanted = _sizes(size, expected.size)
        return f"{found} instead of {wanted}"
    if expected.sha256 is not None:
        found = digest or sha256(path)
        if found != expected.sha256.lower():
            return f"SHA-256 {found}, expected {expected.sha256}"
    if _is_html(path, expected):
        return (
            "it is an HTML or XML page, not the file (a proxy's login or "
            "error page?)"
        )
    return _load_problem(path, expected)


def size_problem(path, recorded):
    size = os.path.getsize(path)
    if size != recorded:
        found, wanted = _sizes(size, recorded)
        return f"{found}, but {wanted} was recorded"
    return None


def _sizes(a, b):
    """Two different sizes as text that shows the difference."""
    if human_size(a) != human_size(b):
        return human_size(a), human_size(b)
    return f"{a:,} bytes", f"{b:,} bytes"


def _is_html(path, expected):
    if _name(expected).endswith((".html", ".htm")):
        return False
    with open(path, "rb") as f:
        start = f.read(_SNIFF_BYTES).lstrip().lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<?xml"))


def _name(expected):
    return urllib.parse.urlsplit(expected.url).path.lower()


def _load_problem(path, expected):
    """Loads the file by its type; None if it loads, else why it does not."""
    name = _name(expected)
    try:
        if expected.extract == "zip":
            # Every member streamed and checked (sizes, CRCs, nested zips).
            return archive_problem(path, os.path.dirname(path))
        if name.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                if not isinstance(json.load(f), dict):
                    return "it is JSON but not a JSON object"
        elif name.endswith((".hdf5", ".h5")):
            import h5py

            with h5py.File(path, "r") as f:
                f.visititems(_read_dataset)
    except (
        OSError,
        ValueError,
        KeyError,
        EOFError,
        RuntimeError,
        NotImplementedError,
        zipfile.BadZipFile,
        zlib.error,
    ) as e:
        return f"it does not load ({type(e).__name__}: {e})"
    return None


def _read_dataset(name, item):
    import h5py

    if isinstance(item, h5py.Dataset):
        item[...]
