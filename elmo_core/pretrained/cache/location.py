"""Where downloaded files live: the cache directory and the path of a URL
in it."""

import hashlib
import os
import re
import urllib.parse

from elmo_core.errors import KerasElmoError

CACHE_VARIABLE = "KERAS_ELMO_HOME"


def cache_dir():
    """The cache directory: `$KERAS_ELMO_HOME` (`CACHE_VARIABLE`), else
    `$KERAS_HOME/keras_elmo`, else `~/.keras/keras_elmo`.

    Example:

    >>> import os, tempfile, unittest.mock
    >>> folder = tempfile.mkdtemp()
    >>> cache = {elmo_core.pretrained.CACHE_VARIABLE: folder}
    >>> with unittest.mock.patch.dict(os.environ, cache):
    ...     print(elmo_core.pretrained.cache_dir() == folder)
    True
    """
    if os.environ.get(CACHE_VARIABLE):
        return os.path.abspath(os.path.expanduser(os.environ[CACHE_VARIABLE]))
    home = os.environ.get("KERAS_HOME") or os.path.join(
        os.path.expanduser("~"), ".keras"
    )
    existing = home
    while not os.path.exists(existing) and os.path.dirname(existing) != (
        existing
    ):
        existing = os.path.dirname(existing)
    if not os.access(existing, os.W_OK):
        # keras.utils.get_file falls back to /tmp/.keras the same way.
        home = os.path.join("/tmp", ".keras")
    return os.path.join(os.path.abspath(home), "keras_elmo")


def is_url(value):
    """Whether `value` is an `http://` or `https://` URL.

    Example:

    >>> elmo_core.pretrained.is_url("https://example.org/options.json")
    True
    >>> elmo_core.pretrained.is_url("options.json")
    False
    """
    return isinstance(value, str) and value.startswith(("http://", "https://"))


# Schemes written without "//" that still name no local file.
_BARE_SCHEMES = ("data", "file", "mailto", "urn", "javascript")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")


def check_url_scheme(value, name, argument=None):
    """Refuses a URL of a scheme other than http(s) (`ftp://`, `s3://`,
    `data:`, `file:`...): keras_elmo downloads http(s) only, and such a
    string is no path either. `name` says how the user gave it, value
    included ("`source` 'ftp://...'"); `argument`, the Python argument it
    came in, is carried on the error.

    Example:

    >>> elmo_core.pretrained.check_url_scheme("options.json", "`source`")
    >>> try:
    ...     elmo_core.pretrained.check_url_scheme("s3://b/o.json", "`source`")
    ... except keras_elmo.KerasElmoError as error:
    ...     print(str(error)[:44])
    `source` is a URL of unsupported scheme 's3'
    """
    if not isinstance(value, str) or is_url(value):
        return
    match = _SCHEME.match(value)
    if match is None:
        return
    scheme = match.group(1).lower()
    if value[match.end() :].startswith("//") or scheme in _BARE_SCHEMES:
        raise KerasElmoError(
            f"{name} is a URL of unsupported scheme "
            f"{scheme!r}; keras_elmo downloads http:// and https:// URLs. "
            "Fetch the file another way and pass its local path.",
            argument,
        )


def cache_path(url):
    """Where `url` is (or will be) cached: `<cache>/host/path/of/file`.

    Example:

    >>> import os
    >>> path = elmo_core.pretrained.cache_path(
    ...     "https://example.org/elmo/options.json")
    >>> os.path.relpath(path, elmo_core.pretrained.cache_dir())
    'example.org/elmo/options.json'
    """
    if not isinstance(url, str):
        raise KerasElmoError(
            "`url` must be an http(s):// URL (a str).", "url", received=url
        )
    parts = urllib.parse.urlsplit(url)
    segments = [urllib.parse.unquote(s) for s in parts.path.split("/") if s]
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or not segments
        or any(s in (".", "..") or "/" in s or "\\" in s for s in segments)
    ):
        raise KerasElmoError(
            f"Cannot download {url!r}: expected an http(s):// URL of a file, "
            "e.g. https://host/path/options.json.",
            "url",
        )
    if parts.query:
        digest = hashlib.sha256(parts.query.encode()).hexdigest()[:12]
        segments[-1] = f"{segments[-1]}-{digest}"
    host = parts.netloc.rsplit("@", 1)[-1].replace(":", "_")
    return os.path.join(cache_dir(), host, *segments)


def unpacked_path(path):
    root, extension = os.path.splitext(path)
    return root if extension.lower() == ".zip" else f"{path}-unpacked"


def local_path(url, expected):
    path = cache_path(url)
    return unpacked_path(path) if expected.extract else path
