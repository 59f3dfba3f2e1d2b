"""Mirrors: where the publishers' files are fetched from behind a firewall.

A mirror is set by `$KERAS_ELMO_MIRROR` or by `set_mirror(...)` (which
wins over the variable while set). Two forms:

- `PUBLISHER=BASE ...` (separated by spaces or commas), e.g.
  `allennlp=https://mirror.example.org/elmo nlpl=file:///srv/nlpl`: a file
  under a publisher's base URL (`PUBLISHERS`) is fetched from the same
  relative path under BASE; other URLs are fetched as they are.
- one `BASE` alone: every URL `scheme://host/path` is fetched from
  `BASE/host/path` (the layout `wget -x` writes), e.g. a directory copied
  from a machine with network access.

BASE is an `http(s)://` URL or a local directory (`file:///abs/path` or an
absolute path). Only where the bytes come from changes: the cache still
keys every file by its publisher's URL, so a file fetched from a mirror
lands where a direct download would, the cache stays valid when the mirror
is switched on or off, and the size, hash and load checks are the same.
"""

import os
import re
import urllib.parse

from elmo_core.errors import KerasElmoError
from elmo_core.pretrained.preset_table import PUBLISHERS

MIRROR_VARIABLE = "KERAS_ELMO_MIRROR"
# A single base for every host (the `BASE` form above).
EVERY_HOST = "*"

_setting = None
_NAMED = re.compile(r"^([A-Za-z0-9_.-]+)=(.*)$")


def set_mirror(mirror):
    """Fetches pretrained files from a mirror (see the module docstring).

    Args:
        mirror: str, dict or None. `"BASE"`, `"allennlp=BASE nlpl=BASE"`,
            `{"allennlp": BASE, "nlpl": BASE}`, or None to go back to
            `$KERAS_ELMO_MIRROR` (or the publishers themselves).

    Example:

    >>> elmo_core.pretrained.set_mirror("allennlp=file:///srv/elmo")
    >>> elmo_core.pretrained.mirror_url(
    ...     "https://allennlp.s3.amazonaws.com/models/elmo/x/options.json")
    'file:///srv/elmo/x/options.json'
    >>> elmo_core.pretrained.set_mirror(None)
    """
    global _setting
    if mirror is not None:
        mirror = _parse(mirror, "set_mirror()", "mirror")
    _setting = mirror


def current_mirror():
    """`{publisher base URL or EVERY_HOST: mirror base}`; empty if none."""
    if _setting is not None:
        return _setting
    value = os.environ.get(MIRROR_VARIABLE, "").strip()
    return _parse(value, f"${MIRROR_VARIABLE}") if value else {}


def describe_mirror():
    """The mirror setting in words, for messages; None without one."""
    mapping = current_mirror()
    if not mapping:
        return None
    where = "set_mirror()" if _setting is not None else f"${MIRROR_VARIABLE}"
    pairs = [
        base if key == EVERY_HOST else f"{key} -> {base}"
        for key, base in mapping.items()
    ]
    return f"{where}: {', '.join(pairs)}"


def mirror_url(url):
    """Where `url` is fetched from: its mirrored address, or itself.

    Example (a mirror given by `$KERAS_ELMO_MIRROR`, `MIRROR_VARIABLE`):

    >>> import os, unittest.mock
    >>> url = elmo_core.pretrained.PRESETS["small"].files["options"].url
    >>> mirror = {elmo_core.pretrained.MIRROR_VARIABLE: "/srv/elmo-files"}
    >>> with unittest.mock.patch.dict(os.environ, mirror):
    ...     print(elmo_core.pretrained.mirror_url(url)[:45])
    file:///srv/elmo-files/allennlp.s3.amazonaws.
    """
    if not isinstance(url, str):
        raise KerasElmoError(
            "`url` must be a URL (a str).", "url", received=url
        )
    mapping = current_mirror()
    for publisher, base in mapping.items():
        if publisher != EVERY_HOST and url.startswith(publisher + "/"):
            return base + url[len(publisher) :]
    if EVERY_HOST in mapping:
        parts = urllib.parse.urlsplit(url)
        host = parts.netloc.rsplit("@", 1)[-1].replace(":", "_")
        return f"{mapping[EVERY_HOST]}/{host}{parts.path}"
    return url


def _parse(mirror, where, argument=None):
    if isinstance(mirror, dict):
        items = [(str(k), v) for k, v in mirror.items()]
    elif isinstance(mirror, str):
        items = []
        for item in mirror.replace(",", " ").split():
            named = _NAMED.match(item)
            items.append(named.groups() if named else (EVERY_HOST, item))
    else:
        raise KerasElmoError(
            f"{where}: expected a mirror URL, 'PUBLISHER=URL ...' or a dict "
            "{publisher: URL}.",
            argument,
            received=mirror,
        )
    mapping = {}
    for name, base in items:
        if name != EVERY_HOST and name not in PUBLISHERS:
            raise KerasElmoError(
                f"{where}: unknown publisher {name!r} in {mirror!r}; "
                f"expected {' or '.join(PUBLISHERS)} (e.g. "
                "allennlp=https://mirror.example.org/elmo), or one URL "
                "alone for every host.",
                argument,
            )
        key = EVERY_HOST if name == EVERY_HOST else PUBLISHERS[name]
        mapping[key] = _base(base, where, argument)
    if EVERY_HOST in mapping and len(mapping) > 1:
        raise KerasElmoError(
            f"{where}: {mirror!r} mixes one base for every host with "
            "PUBLISHER=URL pairs; give one form.",
            argument,
        )
    return mapping


def _base(base, where, argument=None):
    if not isinstance(base, str):
        raise KerasElmoError(
            f"{where}: a mirror base must be a string.",
            argument,
            received=base,
        )
    if os.path.isabs(base) and "://" not in base:
        base = "file://" + urllib.parse.quote(os.path.normpath(base))
    parts = urllib.parse.urlsplit(base)
    if parts.scheme in ("http", "https") and parts.hostname:
        return base.rstrip("/")
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        if parts.path.startswith("/"):
            return f"file://{parts.path.rstrip('/')}"
    raise KerasElmoError(
        f"{where}: cannot use {base!r} as a mirror; expected an http(s):// "
        "URL or a local directory (file:///srv/mirror or /srv/mirror).",
        argument,
    )


def local_mirror_path(source):
    """The local path of a `file://` source, else None."""
    parts = urllib.parse.urlsplit(source)
    if parts.scheme != "file":
        return None
    return urllib.parse.unquote(parts.path)
