"""The downloader: resumable, retried, verified, written atomically."""

import hashlib
import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

import h5py

from keras_elmo import progress as progress_output
from keras_elmo.errors import DownloadError
from keras_elmo.files import atomic_output
from keras_elmo.pretrained.cache import CACHE_VARIABLE
from keras_elmo.pretrained.cache import cache_dir
from keras_elmo.pretrained.cache import unpacked_path
from keras_elmo.version import __version__

# An unfinished download; kept between attempts and calls to be resumed.
DOWNLOAD_SUFFIX = ".download"
DOWNLOAD_ATTEMPTS = 3
# Seconds to wait before retry k (times k); tests set it to 0.
RETRY_PAUSE_SECONDS = 2.0
# Seconds without data after which a connection counts as dropped.
TIMEOUT_SECONDS = 60.0
_CHUNK_BYTES = 1 << 20


class _Unreachable(Exception):
    """The server could not be reached at all (offline, refused, DNS)."""


class _Interrupted(Exception):
    """The transfer stopped before the end; the partial file is kept."""


class _RangeRefused(Exception):
    """The server cannot continue the partial file (HTTP 416)."""


def download(url, path, expected, progress, command):
    partial = f"{path}{DOWNLOAD_SUFFIX}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as e:
        raise DownloadError(
            f"Cannot create the cache directory {os.path.dirname(path)} "
            f"({e.strerror}). Set {CACHE_VARIABLE} to a writable directory."
        ) from None
    problems = []
    for attempt in range(DOWNLOAD_ATTEMPTS):
        if attempt:
            time.sleep(RETRY_PAUSE_SECONDS * attempt)
        try:
            _transfer(url, partial, expected, progress)
        except _Unreachable as e:
            raise DownloadError(
                _offline_message(url, expected, path, partial, command, e)
            ) from None
        except _Interrupted as e:
            problems.append(str(e))
            continue
        problem = _verify(partial, expected)
        if problem is None:
            with atomic_output(path) as temporary:
                os.replace(partial, temporary)
            return
        os.remove(partial)
        problems.append(f"the download was damaged: {problem}")
        if progress and attempt + 1 < DOWNLOAD_ATTEMPTS:
            print(f"{url}: {problem}; downloading it again", flush=True)
    raise DownloadError(
        f"Could not download {url} intact in {DOWNLOAD_ATTEMPTS} attempts "
        f"({'; '.join(problems)}). Run the command again to retry (an "
        f"interrupted download resumes), or put the file at {path} by hand."
    )


def _offline_message(url, expected, path, partial, command, reason):
    where = (
        f"unpack the archive into {unpacked_path(path)}"
        if expected.extract
        else f"put the file at {path}"
    )
    resume = (
        f" The part downloaded so far is kept in {partial} and resumes on "
        "the next try."
        if os.path.exists(partial)
        else ""
    )
    return (
        f"Cannot download {url} ({reason}) and it is not in the cache. "
        f"Download it where there is network access and {where}; or run "
        f"`keras-elmo download {command}` on a machine with network access "
        f"and copy its cache directory to {cache_dir()} (or point "
        f"{CACHE_VARIABLE} at a copy).{resume}"
    )


def _open(url, start):
    request = urllib.request.Request(
        url, headers={"User-Agent": f"keras-elmo/{__version__}"}
    )
    if start:
        request.add_header("Range", f"bytes={start}-")
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS)
    except urllib.error.HTTPError as e:
        e.close()
        if e.code == 416 and start:
            raise _RangeRefused() from None
        raise DownloadError(
            f"{url} answered HTTP {e.code} ({e.reason}). Check the URL "
            "(`keras-elmo presets` lists the known models)."
        ) from None
    except urllib.error.URLError as e:
        raise _Unreachable(getattr(e.reason, "strerror", None) or e.reason)
    except (OSError, http.client.HTTPException) as e:
        raise _Unreachable(e) from None


def _resumed_from(response, start):
    """The offset the server's answer starts at: `start` for a 206 answer
    that continues the partial file, 0 for a whole file (a server that
    ignores `Range`); None for a part that does not fit."""
    if response.status != 206:
        return 0
    content_range = response.headers.get("Content-Range", "")
    try:
        first = int(content_range.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None
    return first if first == start else None


def _total_size(response):
    if response.status == 206:
        total = response.headers.get("Content-Range", "").rpartition("/")[2]
    else:
        total = response.headers.get("Content-Length")
    try:
        return int(total)
    except (TypeError, ValueError):
        return None


def _transfer(url, partial, expected, progress):
    """Downloads `url` into `partial`, continuing what it already holds."""
    start = os.path.getsize(partial) if os.path.exists(partial) else 0
    try:
        response = _open(url, start)
    except _RangeRefused:
        os.remove(partial)
        raise _Interrupted(
            "the server refused to continue the partial download"
        ) from None
    with response:
        offset = _resumed_from(response, start)
        if offset is None:
            os.remove(partial)
            raise _Interrupted(
                "the server answered with another part of the file than "
                "asked for"
            )
        total = _total_size(response)
        if expected.size is not None and total not in (None, expected.size):
            raise DownloadError(
                f"{url} is {total} bytes on the server, but keras_elmo "
                f"expects {expected.size}: the published file has changed. "
                "Please report it."
            )
        if progress:
            verb = f"Resuming at byte {offset:,}" if offset else "Downloading"
            print(f"{verb}: {url}", flush=True)
        bar = progress_output.Progress(
            total,
            "byte",
            verbose=int(progress),
            label="download",
            interval=progress_output.LOG_INTERVAL,
        )
        done = offset
        bar.update(done)
        with open(partial, "ab" if offset else "wb") as f:
            while True:
                try:
                    chunk = response.read(_CHUNK_BYTES)
                except (OSError, http.client.HTTPException) as e:
                    raise _Interrupted(
                        f"the connection broke after {done:,} bytes "
                        f"({e or type(e).__name__})"
                    ) from None
                if not chunk:
                    break
                f.write(chunk)
                done += len(chunk)
                bar.update(done)
    size = os.path.getsize(partial)
    if total is not None and size < total:
        raise _Interrupted(
            f"the connection closed after {size:,} of {total:,} bytes"
        )
    if total is not None and size > total:
        # E.g. two processes appending to the same partial file.
        os.remove(partial)
        raise _Interrupted(
            f"{size:,} bytes arrived for a file of {total:,}; starting over"
        )


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(path, expected):
    """None if the downloaded file is whole, else what is wrong with it."""
    size = os.path.getsize(path)
    if expected.size is not None and size != expected.size:
        return f"{size:,} bytes instead of {expected.size:,}"
    if expected.sha256 is not None:
        found = _sha256(path)
        if found != expected.sha256.lower():
            return f"SHA-256 {found}, expected {expected.sha256}"
    return _load_problem(path, expected)


def _load_problem(path, expected):
    """Loads the file by its type; None if it loads, else why it does not."""
    name = urllib.parse.urlsplit(expected.url).path.lower()
    try:
        if expected.extract == "zip":
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
            return None if bad is None else f"archive member {bad} is damaged"
        if name.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                if not isinstance(json.load(f), dict):
                    return "it is JSON but not a JSON object"
        elif name.endswith((".hdf5", ".h5")):
            with h5py.File(path, "r") as f:
                f.visititems(_read_dataset)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        return f"it does not load ({type(e).__name__}: {e})"
    return None


def _read_dataset(name, item):
    if isinstance(item, h5py.Dataset):
        item[...]


def unpack(archive, folder):
    """Unpacks a verified zip archive into `folder` (atomically)."""
    with atomic_output(folder, directory=True) as temporary:
        with zipfile.ZipFile(archive) as f:
            # extractall drops absolute paths and `..` from member names.
            f.extractall(temporary)
    os.remove(archive)
