"""The teacher cache on disk: a distilled run's teacher layer outputs, one
entry per sentence, written in the first epoch and read in the later
ones (`distill(teacher_cache=...)`; the run's side of it is
`keras_elmo.training.cached_teacher`). NumPy only.

A cache is a directory of three files:

- `teacher_cache.json`: what the outputs are of, its identity (the
  SHA-256 of the teacher's weights and of the text, the precision the
  teacher ran in, which teacher layers, their width) and the precision
  they are kept in. A run whose identity differs is refused, naming what
  differs.
- `outputs.bin`: each sentence's outputs, `(positions, layers, width)`
  in that precision, `positions` those of `<S> tokens </S>`, one after
  another.
- `index.bin`: a 32-byte record a sentence (`RECORD`): the BLAKE2b digest
  of its tokens, where its outputs start in `outputs.bin`, its positions
  and the CRC-32 of its outputs.

Both files only grow, and a sentence is in the cache once its record is
written, after its outputs. Every file is untrusted: the header is read
within a bound and checked, every record's size and offset against the
files before any output is read, and each sentence's outputs against
their checksum when read. A record cut short, or outputs without a
record (a run killed while writing), are dropped, and said; anything
else that does not add up is refused, with how to fix it. One run at a
time writes a cache (a lock where the system has `fcntl`).
"""

import hashlib
import os
import threading
import zlib

import numpy as np

from elmo_core.errors import KerasElmoError
from elmo_core.formats.json_text import read_json
from elmo_core.formats.run_layout import write_json
from elmo_core.pretrained.units import human_size

try:
    import fcntl
except ImportError:  # no advisory locks on this system
    fcntl = None

HEADER_FILE = "teacher_cache.json"
OUTPUTS_FILE = "outputs.bin"
INDEX_FILE = "index.bin"
FILES = (HEADER_FILE, OUTPUTS_FILE, INDEX_FILE)
FORMAT = "keras_elmo teacher cache"
VERSION = 1
RECORD = np.dtype(
    [("key", "V16"), ("offset", "<u8"), ("positions", "<u4"), ("crc", "<u4")]
)
_MAX_HEADER_BYTES = 64 * 1024
# The identity of a cache's outputs, each with what a cache of another
# value holds (for the refusal).
IDENTITY = {
    "teacher_digest": "the outputs of another teacher (its weights differ)",
    "text_digest": "the outputs of another text (the `train` files differ)",
    "teacher_precision": "a teacher run in another precision",
    "precision": "outputs kept in another `teacher_cache_precision`",
    "layers": "other teacher layers (those of a student of another depth)",
    "width": "the outputs of a teacher of another width",
}


def sentence_key(tokens):
    """The 16-byte key of a sentence: the BLAKE2b digest of its tokens
    (bytes) joined by spaces."""
    return hashlib.blake2b(b" ".join(tokens), digest_size=16).digest()


def open_teacher_cache(directory, identity, size_limit):
    """The `TeacherCache` in `directory`, created where it is missing or
    empty, refused where it is not a cache, is damaged or holds other
    outputs than `identity` (a dict of the `IDENTITY` keys) names.

    Returns:
        `(cache, notes)`: notes are lines to say (the tail of an
        interrupted write dropped).
    """
    _check_directory(directory)
    os.makedirs(directory, exist_ok=True)
    lock = open(os.path.join(directory, INDEX_FILE), "ab")  # the lock too
    try:
        _lock(lock, directory)
        _check_or_write_header(directory, identity)
        entries, end, notes = _read_index(directory, identity)
    except BaseException:
        lock.close()
        raise
    cache = TeacherCache(directory, identity, size_limit, lock)
    cache.entries, cache.end = entries, end
    return cache, notes


class TeacherCache:
    """An open teacher cache (see the module): `lookup` a batch's
    sentences, `read` one found, `add` one's outputs while the size limit
    allows; `close` releases the files."""

    def __init__(self, directory, identity, size_limit, index_file):
        self.directory = directory
        self.dtype = np.dtype(identity["precision"])
        self.row_bytes = (
            len(identity["layers"]) * identity["width"] * self.dtype.itemsize
        )
        self.shape = (len(identity["layers"]), identity["width"])
        self.size_limit = size_limit
        self.full = False
        self.entries = {}
        self.end = 0
        self._index = index_file
        path = os.path.join(directory, OUTPUTS_FILE)
        self._writer = open(path, "ab")
        self._reader = open(path, "rb")
        # The data pipeline's thread reads and adds; the run closes.
        self._lock = threading.Lock()
        self.closed = False

    @property
    def size(self):
        """Bytes the entries take (outputs and records)."""
        return self.end + len(self.entries) * RECORD.itemsize

    def lookup(self, keys):
        """The entry of each key, None where it is not cached."""
        return [self.entries.get(key) for key in keys]

    def read(self, entry, positions):
        """The outputs `(positions, layers, width)` of an entry, refused
        when they are not of the sentence's `positions` or do not match
        their checksum."""
        offset, recorded, crc = entry
        with self._lock:
            if self.closed:
                raise ValueError("the teacher cache is closed")
            self._reader.seek(offset)
            data = self._reader.read(recorded * self.row_bytes)
        if recorded != positions:
            why = f"a sentence of {positions} positions recorded as {recorded}"
        elif len(data) != positions * self.row_bytes:
            why = f"{OUTPUTS_FILE} is shorter than when it was opened"
        elif zlib.crc32(data) != crc:
            why = "a sentence's outputs do not match their checksum"
        else:
            why = None
        if why:
            raise _damaged(self.directory, why)
        return np.frombuffer(data, self.dtype).reshape(positions, *self.shape)

    def add(self, key, outputs):
        """Keeps `outputs` `(positions, layers, width)` of this dtype as
        the sentence `key`'s, unless it is cached or the size limit would
        be passed (then the cache is `full`, and takes nothing more)."""
        data = np.ascontiguousarray(outputs, self.dtype).tobytes()
        with self._lock:
            if key in self.entries or self.full or self.closed:
                return
            if self.size + len(data) + RECORD.itemsize > self.size_limit:
                self.full = True
                return
            entry = (self.end, len(outputs), zlib.crc32(data))
            self._writer.write(data)
            self._writer.flush()  # the outputs before their record
            record = np.array([(key, *entry)], RECORD)
            self._index.write(record.tobytes())
            self._index.flush()
            self.entries[key] = entry
            self.end += len(data)

    def describe(self):
        """The cache's contents, in a line."""
        return (
            f"{len(self.entries):,} sentences, {human_size(self.size)} of "
            f"{human_size(self.size_limit)}"
        )

    def close(self):
        with self._lock:
            self.closed = True
            for file in (self._writer, self._reader, self._index):
                file.close()


def _check_directory(directory):
    """A cache directory holds a cache's files, or nothing (or the empty
    files of a cache whose header was never written)."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise KerasElmoError(
            "`teacher_cache` is a file; it must be a directory (new, "
            "empty, or a teacher cache).",
            "teacher_cache",
            received=directory,
        )
    if not os.path.isdir(directory):
        return
    names = set(os.listdir(directory))
    others = sorted(names - set(FILES))
    if not others and HEADER_FILE not in names:
        sizes = [os.path.getsize(os.path.join(directory, n)) for n in names]
        others = ["data without a header"] if any(sizes) else []
    if others:
        raise KerasElmoError(
            "`teacher_cache` holds what is not a teacher cache's "
            f"({', '.join(others[:3])}): give a new or empty directory, or "
            "one a distillation cached its teacher in.",
            "teacher_cache",
            received=directory,
        )


def _lock(file, directory):
    if fcntl is None:
        return
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise KerasElmoError(
            f"The teacher cache in {directory} is in use by another run: "
            "wait for it to end, or give another `teacher_cache`.",
            "teacher_cache",
        ) from None


def _check_or_write_header(directory, identity):
    path = os.path.join(directory, HEADER_FILE)
    expected = {"format": FORMAT, "version": VERSION, **identity}
    if not os.path.exists(path):
        write_json(path, expected)
        return
    try:
        header = read_json(path, _MAX_HEADER_BYTES, what="its header")
    except KerasElmoError as error:
        raise _damaged(directory, str(error)) from None
    if not isinstance(header, dict) or set(header) != set(expected):
        raise _damaged(directory, f"{HEADER_FILE} is not a cache's header")
    if (header["format"], header["version"]) != (FORMAT, VERSION):
        raise KerasElmoError(
            f"{path} is not a keras_elmo teacher cache of version {VERSION} "
            "(another program's, or a later version's): give another "
            "`teacher_cache`.",
            "teacher_cache",
        )
    for name, holds in IDENTITY.items():
        if header[name] != identity[name]:
            raise KerasElmoError(
                f"The teacher cache in {directory} holds {holds} than this "
                "run's: give another `teacher_cache` directory, or delete "
                "this one for the run to fill it again.",
                "teacher_cache",
            )


def _read_index(directory, identity):
    """`(entries, end of the outputs, notes)` of a cache whose header
    matched: every record checked against the files before use."""
    index_path = os.path.join(directory, INDEX_FILE)
    outputs_path = os.path.join(directory, OUTPUTS_FILE)
    index_size = os.path.getsize(index_path)
    outputs_size = (
        os.path.getsize(outputs_path) if os.path.exists(outputs_path) else 0
    )
    records = np.fromfile(index_path, RECORD, index_size // RECORD.itemsize)
    row = len(identity["layers"]) * identity["width"]
    row *= np.dtype(identity["precision"]).itemsize
    sizes = records["positions"].astype(np.int64) * row
    end = int(sizes.sum())
    starts = np.cumsum(sizes) - sizes
    why = None
    if np.any(records["positions"] < 3):
        why = "a record of fewer positions than <S> token </S>"
    elif np.any(records["offset"].astype(np.int64) != starts):
        why = "its records do not follow one another in outputs.bin"
    elif end > outputs_size:
        why = f"its records name {end:,} bytes; {OUTPUTS_FILE} holds fewer"
    elif len(set(records["key"].tolist())) != len(records):
        why = "a sentence recorded twice"
    if why:
        raise _damaged(directory, why)
    notes = _drop_tails(directory, index_size, outputs_size, end)
    entries = {
        key: (int(offset), int(positions), int(crc))
        for key, offset, positions, crc in records.tolist()
    }
    return entries, end, notes


def _drop_tails(directory, index_size, outputs_size, end):
    """Cuts off what an interrupted write left: part of a record, outputs
    without their record."""
    notes = []
    for name, size, whole in (
        (INDEX_FILE, index_size, index_size - index_size % RECORD.itemsize),
        (OUTPUTS_FILE, outputs_size, end),
    ):
        if size > whole:
            with open(os.path.join(directory, name), "r+b") as f:
                f.truncate(whole)
            notes.append(
                f"teacher cache: dropped the last {size - whole:,} bytes of "
                f"{name}, an interrupted write's (no sentence was whole there)"
            )
    return notes


def _damaged(directory, why):
    return KerasElmoError(
        f"The teacher cache in {directory} is damaged ({why}); nothing "
        "damaged was used. Delete the directory: the run fills it again "
        "(the same command resumes a run from its last checkpoint).",
        "teacher_cache",
    )
