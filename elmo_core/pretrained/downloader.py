"""The downloader: resumable, retried, verified, written atomically.

A transient failure (HTTP 408, 429, 500, 502, 503, 504; a connection reset
or dropped; a transfer cut short) is retried up to `DOWNLOAD_ATTEMPTS`
times in all, after `RETRY_PAUSE_SECONDS` x 1, 2, 4, ... seconds, or after
the server's `Retry-After` where that is longer and at most
`MAX_RETRY_AFTER_SECONDS` (a server asking for a longer wait gets an error
that says so). An interrupted transfer resumes with an HTTP `Range`
request, and only from the same object: beside the partial file, a
record (`RECORD_SUFFIX`) keeps the source it came from (the mirror's URL
when a mirror is set) and the validators the server gave (ETag,
Last-Modified, total length). A resume asks for the rest with `Range` and
`If-Range` (so a server whose file changed sends all of it), and the
answer must carry the same validators; another source, a changed
validator, or a partial file without a record (or without any validator)
starts over from the first byte, so bytes of two different files are never
joined. A file with neither ETag nor Last-Modified is resumed on its
length alone (the weakest check HTTP allows); its hash and load checks
follow as for any download. A host that cannot be reached at all (refused,
no route, DNS, a connect time-out) raises `Unreachable` at once: that is
offline, and the caller explains what to do.
"""

import email.utils
import http.client
import json
import os
import time
import urllib.error
import urllib.request

from elmo_core import progress as progress_output
from elmo_core.errors import DownloadError
from elmo_core.files import atomic_output
from elmo_core.files.proofs import read_json_object
from elmo_core.pretrained.cache import CACHE_VARIABLE
from elmo_core.pretrained.mirror import local_mirror_path
from elmo_core.pretrained.mirror import mirror_url
from elmo_core.pretrained.units import human_size
from elmo_core.pretrained.verify import file_problem
from elmo_core.pretrained.verify import sha256
from elmo_core.version import __version__

# An unfinished download; kept between attempts and calls to be resumed.
DOWNLOAD_SUFFIX = ".download"
# Beside an unfinished download: its source and validators (JSON).
RECORD_SUFFIX = ".source.json"
# What identifies the object a partial download holds the start of.
_VALIDATORS = ("etag", "last_modified", "length")
# A record is a few hundred bytes; a larger one is not read.
_MAX_RECORD_BYTES = 1 << 16
DOWNLOAD_ATTEMPTS = 4
# Seconds before retry k: RETRY_PAUSE_SECONDS * 2**(k-1); tests set it to 0.
RETRY_PAUSE_SECONDS = 2.0
# The longest `Retry-After` waited for; a longer one ends the download.
MAX_RETRY_AFTER_SECONDS = 120.0
# Seconds without data after which a connection counts as dropped.
TIMEOUT_SECONDS = 60.0
TRANSIENT_STATUS = (408, 429, 500, 502, 503, 504)
_CHUNK_BYTES = 1 << 20
# The pause function (tests replace it to record the pauses).
_sleep = time.sleep


class Unreachable(Exception):
    """The server could not be reached at all (offline, refused, DNS)."""


class _Transient(Exception):
    """A failure worth retrying; `retry_after`: seconds the server asked."""

    def __init__(self, message, retry_after=None):
        super().__init__(message)
        self.retry_after = retry_after


class _RangeRefused(Exception):
    """The server cannot continue the partial file (HTTP 416)."""


def download_file(url, path, expected, progress):
    """Downloads `url` (from its mirror, if one is set) to `path`.

    Returns the SHA-256 of the verified file. Raises `Unreachable` when
    offline, `DownloadError` when the file cannot be had intact.
    """
    source = mirror_url(url)
    partial = f"{path}{DOWNLOAD_SUFFIX}"
    _make_parent(path)
    problems, retry_after = [], None
    for attempt in range(DOWNLOAD_ATTEMPTS):
        if attempt:
            _sleep(_pause(attempt, retry_after))
        try:
            _transfer(url, source, partial, expected, progress)
        except _Transient as e:
            problems.append(str(e))
            retry_after = _bounded(e.retry_after, source, problems)
            continue
        digest = sha256(partial)
        problem = file_problem(partial, expected, digest)
        if problem is None:
            with atomic_output(path) as temporary:
                os.replace(partial, temporary)
            _discard(partial)
            return digest
        _discard(partial)
        problems.append(f"the download was damaged: {problem}")
        if progress and attempt + 1 < DOWNLOAD_ATTEMPTS:
            print(f"{source}: {problem}; downloading it again", flush=True)
    raise DownloadError(
        f"Could not download {_named(url, source)} intact in "
        f"{DOWNLOAD_ATTEMPTS} attempts ({'; '.join(problems)}). Run the "
        "command again to retry (an interrupted download resumes), or put "
        f"the file at {path} by hand."
    )


def _make_parent(path):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as e:
        raise DownloadError(
            f"Cannot create the cache directory {os.path.dirname(path)} "
            f"({e.strerror}). Set {CACHE_VARIABLE} to a writable directory."
        ) from None


def _pause(attempt, retry_after):
    backoff = RETRY_PAUSE_SECONDS * 2 ** (attempt - 1)
    return max(backoff, retry_after or 0.0)


def _bounded(retry_after, source, problems):
    if retry_after is not None and retry_after > MAX_RETRY_AFTER_SECONDS:
        raise DownloadError(
            f"{source} asks to wait {retry_after:,.0f} s before the next "
            f"try (Retry-After), longer than keras_elmo waits "
            f"({MAX_RETRY_AFTER_SECONDS:.0f} s) ({'; '.join(problems)}). "
            "Try again later."
        )
    return retry_after


def _named(url, source):
    return url if source == url else f"{url} (from the mirror: {source})"


def _retry_after(headers):
    """Seconds from a `Retry-After` header (seconds or an HTTP date)."""
    value = (headers.get("Retry-After") or "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _open(source, start, record):
    local = local_mirror_path(source)
    if local is not None:
        return _open_local(local, source)
    request = urllib.request.Request(
        source, headers={"User-Agent": f"keras-elmo/{__version__}"}
    )
    if start:
        request.add_header("Range", f"bytes={start}-")
        condition = _if_range(record)
        if condition:
            request.add_header("If-Range", condition)
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS)
    except urllib.error.HTTPError as e:
        headers = e.headers or {}
        e.close()
        if e.code == 416 and start:
            raise _RangeRefused() from None
        if e.code in TRANSIENT_STATUS:
            raise _Transient(
                f"HTTP {e.code} ({e.reason})", _retry_after(headers)
            ) from None
        raise DownloadError(
            f"{source} answered HTTP {e.code} ({e.reason}). Check the URL "
            "(`keras-elmo presets` lists the known models) or the mirror."
        ) from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, (ConnectionResetError, ConnectionAbortedError)):
            raise _Transient(f"the connection was reset ({e.reason})") from None
        raise Unreachable(getattr(e.reason, "strerror", None) or e.reason)
    except (ConnectionResetError, ConnectionAbortedError) as e:
        raise _Transient(f"the connection was reset ({e})") from None
    except http.client.HTTPException as e:
        raise _Transient(f"a broken answer ({type(e).__name__}: {e})") from None
    except OSError as e:
        raise Unreachable(e) from None


class _LocalFile:
    """A `file://` mirror's file, read like an HTTP answer (status 200)."""

    status = 200

    def __init__(self, path):
        self.file = open(path, "rb")
        self.headers = {"Content-Length": str(os.path.getsize(path))}

    def read(self, size):
        return self.file.read(size)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def _open_local(path, source):
    if not os.path.isfile(path):
        raise DownloadError(
            f"The mirror has no file {path} (for {source}). Copy the file "
            "there, or fix the mirror setting."
        )
    try:
        return _LocalFile(path)
    except OSError as e:
        raise DownloadError(f"Cannot read the mirror's {path}: {e}") from None


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


def _transfer(url, source, partial, expected, progress):
    """Downloads `source` into `partial`, continuing what it holds if it
    is the start of the same object (see the module docstring)."""
    start, record = _resume_point(partial, source)
    try:
        response = _open(source, start, record)
    except _RangeRefused:
        _discard(partial)
        raise _Transient(
            "the server refused to continue the partial download"
        ) from None
    with response:
        offset = _resumed_from(response, start)
        if offset is None:
            _discard(partial)
            raise _Transient(
                "the server answered with another part of the file than "
                "asked for"
            )
        validators = _validators(response, source)
        if offset and not _same_object(record, validators):
            _discard(partial)
            raise _Transient(
                f"{source} now serves another file than the partial "
                "download came from (its ETag, Last-Modified or length "
                "changed); starting over"
            )
        if not offset:
            _write_record(partial, validators)
        total = _total_size(response)
        _check_total(url, source, expected, total)
        if progress:
            _announce(url, source, offset, total)
        _copy(response, partial, offset, total, progress)
    size = os.path.getsize(partial)
    if total is not None and size < total:
        raise _Transient(
            f"the connection closed after {human_size(size)} of "
            f"{human_size(total)}"
        )
    if total is not None and size > total:
        # E.g. two processes appending to the same partial file.
        _discard(partial)
        raise _Transient(
            f"{human_size(size)} arrived for a file of {human_size(total)}; "
            "starting over"
        )


def _record_path(partial):
    return partial + RECORD_SUFFIX


def _discard(partial):
    """Deletes a partial download and its record."""
    for path in (partial, _record_path(partial)):
        if os.path.exists(path):
            os.remove(path)


def _validators(response, source):
    """What identifies the object an answer carries."""
    headers = response.headers
    return {
        "source": source,
        "etag": headers.get("ETag"),
        "last_modified": headers.get("Last-Modified"),
        "length": _total_size(response),
    }


def _write_record(partial, validators):
    with atomic_output(_record_path(partial)) as temporary:
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(validators, f)


def _resume_point(partial, source):
    """`(offset, record)` to continue `partial` from; `(0, None)` (after
    deleting it) when it cannot be: no record of where it came from,
    another source, or no validator to check the object by."""
    if not os.path.exists(partial):
        return 0, None
    record = read_json_object(_record_path(partial), _MAX_RECORD_BYTES)
    if (
        record is None
        or record.get("source") != source
        or all(record.get(key) is None for key in _VALIDATORS)
    ):
        _discard(partial)
        return 0, None
    return os.path.getsize(partial), record


def _if_range(record):
    """The `If-Range` value of a record: its strong ETag, else its
    Last-Modified (a weak ETag may not be used), else None."""
    etag = record.get("etag")
    if isinstance(etag, str) and not etag.startswith("W/"):
        return etag
    modified = record.get("last_modified")
    return modified if isinstance(modified, str) else None


def _same_object(record, validators):
    """Whether an answer is of the object `record` was made from: every
    validator recorded is there, unchanged."""
    return all(
        record.get(key) is None or record.get(key) == validators[key]
        for key in _VALIDATORS
    )


def _check_total(url, source, expected, total):
    if expected.size is not None and total not in (None, expected.size):
        raise DownloadError(
            f"{_named(url, source)} is {human_size(total)} ({total:,} "
            f"bytes) there, but keras_elmo expects {expected.size:,} bytes: "
            "the file has changed (or the mirror holds another one)."
        )


def _announce(url, source, offset, total):
    size = f" {human_size(total)}" if total is not None else ""
    if offset:
        verb = f"Resuming at {human_size(offset)} of{size or ' ?'}"
    else:
        verb = f"Downloading{size}"
    print(f"{verb}: {_named(url, source)}", flush=True)


def _copy(response, partial, offset, total, progress):
    bar = progress_output.Progress(
        total,
        "byte",
        verbose=int(progress),
        label="download",
        interval=progress_output.LOG_INTERVAL,
        amount=human_size,
    )
    done = offset
    bar.update(done)
    with open(partial, "ab" if offset else "wb") as f:
        while True:
            try:
                chunk = response.read(_CHUNK_BYTES)
            except (OSError, http.client.HTTPException) as e:
                raise _Transient(
                    f"the connection broke after {human_size(done)} "
                    f"({e or type(e).__name__})"
                ) from None
            if not chunk:
                break
            f.write(chunk)
            done += len(chunk)
            bar.update(done)
