"""What to do when a pretrained file is not usable: one message for a
URL and for a preset, listing every missing file at once."""

import os

from elmo_core.pretrained.cache import CACHE_VARIABLE
from elmo_core.pretrained.cache import cache_dir
from elmo_core.pretrained.cache import cache_path
from elmo_core.pretrained.downloader import DOWNLOAD_SUFFIX
from elmo_core.pretrained.mirror import MIRROR_VARIABLE
from elmo_core.pretrained.mirror import describe_mirror
from elmo_core.pretrained.mirror import mirror_url


def unavailable_message(missing, failures, reason, command, name=None, total=1):
    """The error for files that are neither usable in the cache nor
    downloadable.

    Args:
        missing: list of `(url, local path, PresetFile, problem)` not
            fetched because the network is not there (`reason`).
        failures: list of str, downloads that failed otherwise.
        reason: the `Unreachable` exception, or None.
        command: the `keras-elmo download` argument to suggest.
        name: the preset's name, or None for a URL.
        total: how many files the preset has.
    """
    lines = [_head(missing, failures, reason, name, total)]
    for url, path, expected, problem in missing:
        lines.append(f"  {_source(url)}")
        lines.append(f"    -> {path} ({problem}){_by_hand(url, expected)}")
    lines.extend(f"  {failure}" for failure in failures)
    if missing:
        lines.append(_fix(command))
    lines.extend(_resumable(missing))
    return "\n".join(lines)


def _head(missing, failures, reason, name, total):
    what = f"the pretrained model {name!r}" if name else missing[0][0]
    if not missing:
        return f"Cannot get {what}: {len(failures)} of {total} failed:"
    if not name:
        return (
            f"Cannot download {what} ({reason}), and the cache has no usable "
            "copy:"
        )
    verb = "has" if len(missing) == 1 else "have"
    return (
        f"Cannot download {what} ({reason}): {len(missing)} of its {total} "
        f"files {verb} no usable copy in the cache:"
    )


def _source(url):
    source = mirror_url(url)
    return url if source == url else f"{url} (from the mirror: {source})"


def _by_hand(url, expected):
    if not expected.extract:
        return ""
    return f"; or put the archive itself at {cache_path(url)}"


def _fix(command):
    mirror = describe_mirror()
    using = f" (the mirror now: {mirror})" if mirror else ""
    return (
        f"To fix: where there is network access, run `keras-elmo download "
        f"{command}` and copy that cache directory to {cache_dir()} (or "
        f"point {CACHE_VARIABLE} at the copy); or download each URL and put "
        f"it at the path shown; or set {MIRROR_VARIABLE} to a mirror or "
        f"folder that holds the files{using}."
    )


def _resumable(missing):
    for url, _, _, _ in missing:
        partial = f"{cache_path(url)}{DOWNLOAD_SUFFIX}"
        if os.path.exists(partial):
            yield (
                f"The part of {url} downloaded so far is kept in {partial} "
                "and resumes on the next try."
            )
