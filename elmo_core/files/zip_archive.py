"""Zip archives from untrusted files, checked member by member.

Python's `zipfile` trusts the archive's central directory: a member that
declares more bytes than its data holds comes out short without an error,
a deflate stream cut in the middle ends early when its CRC was written
for the cut data, and members may overlap (one compressed block counted
by many). `zip_problem` checks every member before anything is used:

- the directory: at most `MAX_MEMBERS` members, no encrypted one, only
  stored or deflated data, each member's data inside the archive and
  apart from the others, its local header agreeing with the directory;
- the data, streamed through a bounded inflater: exactly the declared
  size, a complete deflate stream, the declared CRC-32; what inflates
  past the declared size stops the check at once, so a bomb costs no
  more than its declared size;
- the sizes: in all at most `max_bytes` (across nested archives too) and
  at most `MAX_COMPRESSION_RATIO` times the compressed size per member;
- a member that is itself a zip (an ELMoForManyLangs archive holds
  PyTorch zip files) is checked the same way, up to `MAX_NESTING` levels.
"""

import os
import struct
import tempfile
import zipfile
import zlib

MAX_MEMBERS = 10_000
# Weights compress to ~90%, vocabularies to ~30%, JSON to ~20%: 100x is
# no real model file (a zip bomb reaches 1,000x).
MAX_COMPRESSION_RATIO = 100
# An ELMoForManyLangs archive holds PyTorch zip files; nothing deeper.
MAX_NESTING = 2
# A nested archive is checked from memory up to this size, else from a
# temporary file.
_SPOOL_BYTES = 64 << 20
_CHUNK_BYTES = 1 << 20
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_ZIP64_SIZE = 0xFFFFFFFF


class _Budget:
    """Bytes that may still be inflated, shared by nested archives."""

    def __init__(self, total):
        self.total = total
        self.left = total


def zip_problem(path, max_bytes):
    """None if the zip at `path` (a path or a binary file) is whole and
    within the bounds of the module docstring, else what is wrong, in
    words that name the member."""
    budget = _Budget(max_bytes)
    if isinstance(path, (str, os.PathLike)):
        with open(path, "rb") as f:
            return _problem(f, budget, 0)
    return _problem(path, budget, 0)


def _problem(file, budget, depth):
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        return unreadable_zip(file, e)
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            return f"it has {len(members):,} members, more than {MAX_MEMBERS:,}"
        declared = sum(m.file_size for m in members)
        if declared > budget.left:
            left = "" if depth == 0 else f"the {budget.left:,} left of "
            return (
                f"its members declare {declared:,} bytes unpacked, more "
                f"than {left}the bound of {budget.total:,}"
            )
        ends = []
        for member in members:
            problem, end = _directory_problem(file, archive, member)
            if problem is None:
                problem = _data_problem(file, member, end, budget, depth)
            if problem is not None:
                return f"member {member.filename!r} {problem}"
            ends.append((member.header_offset, end, member.filename))
        return _overlap_problem(ends)


def unreadable_zip(file, error):
    """Why the zip `file` (a path or a binary file) that `zipfile` could
    not open (`error`) is not one, in words: a file that starts as a zip
    but has no end is truncated."""
    try:
        if isinstance(file, (str, os.PathLike)):
            with open(file, "rb") as f:
                start = f.read(len(_LOCAL_SIGNATURE))
        else:
            file.seek(0)
            start = file.read(len(_LOCAL_SIGNATURE))
    except OSError:
        start = b""
    if start == _LOCAL_SIGNATURE:
        return (
            "it is truncated: it starts as a zip archive, but its end (the "
            "directory of its members) is missing, so the download or copy "
            f"was cut short ({error})"
        )
    return f"it is not a complete zip archive ({error})"


def _directory_problem(file, archive, member):
    """(problem or None, offset where the member's data ends)."""
    if member.flag_bits & 0x1:
        return "is encrypted", 0
    if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return f"uses compression method {member.compress_type}", 0
    if member.compress_type == zipfile.ZIP_STORED and (
        member.compress_size != member.file_size
    ):
        return (
            f"is stored uncompressed but declares {member.compress_size:,} "
            f"bytes of data for {member.file_size:,} bytes"
        ), 0
    ratio = member.file_size / max(member.compress_size, 1)
    if ratio > MAX_COMPRESSION_RATIO:
        return (
            f"declares {member.file_size:,} bytes from "
            f"{member.compress_size:,} compressed, more than "
            f"{MAX_COMPRESSION_RATIO}x (a zip bomb?)"
        ), 0
    file.seek(member.header_offset)
    header = file.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size:
        return "starts past the end of the archive (truncated?)", 0
    fields = _LOCAL_HEADER.unpack(header)
    signature, _, flags, method, _, _, crc, compressed, size = fields[:9]
    name_length, extra_length = fields[9:]
    if signature != _LOCAL_SIGNATURE or method != member.compress_type:
        return "has a local header that disagrees with the directory", 0
    sized = not flags & 0x8 and _ZIP64_SIZE not in (compressed, size)
    if sized and (crc, compressed, size) != (
        member.CRC,
        member.compress_size,
        member.file_size,
    ):
        return (
            f"declares {size:,} bytes (CRC {crc:08x}) in its local header "
            f"but {member.file_size:,} (CRC {member.CRC:08x}) in the "
            "directory"
        ), 0
    start = member.header_offset + _LOCAL_HEADER.size + name_length
    end = start + extra_length + member.compress_size
    if end > archive.start_dir:
        return (
            f"declares {member.compress_size:,} bytes of data, past the "
            "end of the archive's data (truncated?)"
        ), 0
    return None, end


def _data_problem(file, member, end, budget, depth):
    """Streams the member's data: exact size, complete stream, CRC; a
    member that is a zip is checked in turn."""
    file.seek(end - member.compress_size)
    stream = _Stream(member)
    left = member.compress_size
    while left or stream.pending():
        raw = b""
        if not stream.pending():
            raw = file.read(min(_CHUNK_BYTES, left))
            if not raw:
                return "is cut short: the archive ends inside its data"
            left -= len(raw)
        problem = stream.feed(raw)
        if problem is not None:
            return problem
    problem = stream.finish()
    if problem is not None:
        return problem
    budget.left -= stream.produced
    if stream.copy is None:
        return None
    with stream.copy:
        if depth + 1 > MAX_NESTING:
            return f"is a zip nested more than {MAX_NESTING} levels deep"
        stream.copy.seek(0)
        problem = _problem(stream.copy, budget, depth + 1)
    return None if problem is None else f"(a zip inside): {problem}"


class _Stream:
    """One member's data, inflated within its declared size: its CRC, and
    a copy when it is a zip itself."""

    def __init__(self, member):
        self.member = member
        self.inflater = None
        if member.compress_type == zipfile.ZIP_DEFLATED:
            self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        self.produced = 0
        self.crc = 0
        self.copy = None
        self.decided = False
        self.head = b""

    def pending(self):
        return self.inflater is not None and bool(self.inflater.unconsumed_tail)

    def feed(self, raw):
        if self.inflater is None:
            return self._take(raw)
        if self.pending():
            raw = self.inflater.unconsumed_tail
        room = self.member.file_size - self.produced + 1
        try:
            data = self.inflater.decompress(raw, room)
        except zlib.error as e:
            return f"is damaged ({e})"
        return self._take(data)

    def finish(self):
        if self.inflater is not None:
            problem = self._take(self.inflater.flush())
            if problem is not None:
                return problem
            if not self.inflater.eof or self.inflater.unused_data:
                return (
                    "has a deflate stream that is cut short or padded "
                    "(damaged or truncated)"
                )
        if self.produced != self.member.file_size:
            return (
                f"holds {self.produced:,} bytes but declares "
                f"{self.member.file_size:,} (truncated)"
            )
        if self.crc != self.member.CRC:
            return (
                f"is damaged (CRC {self.crc:08x}, expected "
                f"{self.member.CRC:08x})"
            )
        return None

    def _take(self, data):
        self.produced += len(data)
        if self.produced > self.member.file_size:
            return (
                f"inflates to more than the {self.member.file_size:,} "
                "bytes it declares"
            )
        self.crc = zlib.crc32(data, self.crc)
        self._keep(data)
        return None

    def _keep(self, data):
        """Copies the data when its first bytes are a zip's."""
        if self.decided:
            if self.copy is not None:
                self.copy.write(data)
            return
        self.head += data
        if len(self.head) < len(_LOCAL_SIGNATURE):
            return
        self.decided = True
        if self.head.startswith(_LOCAL_SIGNATURE):
            self.copy = tempfile.SpooledTemporaryFile(_SPOOL_BYTES)
            self.copy.write(self.head)
        self.head = b""


def _overlap_problem(ends):
    ends.sort()
    for (_, end, name), (start, _, following) in zip(ends, ends[1:]):
        if end > start:
            return (
                f"members {name!r} and {following!r} overlap (one block of "
                "data counted twice: a zip bomb?)"
            )
    return None


def read_member(archive, name, limit):
    """The bytes of member `name` of an open `zipfile.ZipFile`, at most
    `limit` (declared and inflated); None if larger."""
    info = archive.getinfo(name)
    if info.file_size > limit:
        return None
    with archive.open(info) as member:
        data = member.read(limit + 1)
    return None if len(data) > limit else data
