"""Zip archives (ELMoForManyLangs models): bounded, safe unpacking.

Before anything is decompressed, the archive's directory is checked: at
most `MAX_MEMBERS` members, each name relative and without `..`, and the
declared unpacked sizes within `MAX_UNPACKED_BYTES` in all, within
`MAX_COMPRESSION_RATIO` times the archive's own size (a zip bomb declares
far more), and within the free disk space; then every member's data is
streamed and checked (`elmo_core.files.zip_archive`: its exact size, a
complete deflate stream, its CRC, nested zips), so a truncated or damaged
member is refused before anything is unpacked. Unpacking checks each
member's size once more as it writes it.
"""

import hashlib
import os
import shutil
import zipfile

from elmo_core.errors import DownloadError
from elmo_core.files import atomic_output
from elmo_core.files.zip_archive import MAX_COMPRESSION_RATIO
from elmo_core.files.zip_archive import MAX_MEMBERS
from elmo_core.files.zip_archive import unreadable_zip
from elmo_core.files.zip_archive import zip_problem
from elmo_core.pretrained.units import human_size

# The largest ELMoForManyLangs model unpacks to some 700 MB.
MAX_UNPACKED_BYTES = 8 << 30
_CHUNK_BYTES = 1 << 20


def archive_problem(path, destination):
    """None if the zip at `path` may be unpacked into `destination`'s
    file system, else what is wrong (names, counts, sizes, space)."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        return unreadable_zip(path, error)
    if len(members) > MAX_MEMBERS:
        return f"it has {len(members):,} members, more than {MAX_MEMBERS:,}"
    for member in members:
        problem = name_problem(member.filename)
        if problem:
            return f"member {member.filename!r} {problem}"
    total = sum(member.file_size for member in members)
    if total > MAX_UNPACKED_BYTES:
        return (
            f"it declares {human_size(total)} unpacked, more than the "
            f"bound of {human_size(MAX_UNPACKED_BYTES)}"
        )
    ratio_bound = MAX_COMPRESSION_RATIO * max(os.path.getsize(path), 1)
    if total > ratio_bound:
        return (
            f"it declares {human_size(total)} unpacked from "
            f"{human_size(os.path.getsize(path))}, more than "
            f"{MAX_COMPRESSION_RATIO}x (a zip bomb?)"
        )
    free = shutil.disk_usage(_existing(destination)).free
    if total > free:
        return (
            f"it unpacks to {human_size(total)}, but only "
            f"{human_size(free)} is free there"
        )
    return zip_problem(path, MAX_UNPACKED_BYTES)


def name_problem(name):
    """None for a safe relative member name, else what is wrong with it."""
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    if ".." in parts:
        return "reaches outside the folder with '..'"
    if "\0" in name or not name.strip("/"):
        return "is not a file name"
    return None


def _existing(path):
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def unpack(archive, folder):
    """Unpacks a checked zip into `folder` (atomically); deletes the zip.

    Returns `{member name: {"size", "sha256"}}` of the files written.
    """
    written = {}
    with atomic_output(folder, directory=True) as temporary:
        with zipfile.ZipFile(archive) as source:
            for member in source.infolist():
                target = os.path.join(temporary, *member.filename.split("/"))
                if member.is_dir():
                    os.makedirs(target, exist_ok=True)
                    continue
                os.makedirs(os.path.dirname(target), exist_ok=True)
                written[member.filename] = _copy(source, member, target)
    os.remove(archive)
    return written


def _copy(source, member, target):
    digest, size = hashlib.sha256(), 0
    with source.open(member) as data, open(target, "wb") as out:
        for block in iter(lambda: data.read(_CHUNK_BYTES), b""):
            digest.update(block)
            out.write(block)
            size += len(block)
    if size != member.file_size:
        # Checked before unpacking; the archive changed since.
        raise DownloadError(
            f"Member {member.filename} of {source.filename} gave {size:,} "
            f"bytes but declares {member.file_size:,}; it is damaged. "
            "Download it again."
        )
    return {"size": size, "sha256": digest.hexdigest()}


def member_path(folder, name):
    return os.path.join(folder, *name.split("/"))
