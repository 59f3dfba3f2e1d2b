"""The sources that need the network, fetched ahead of use: `download`
(what `keras-elmo download` runs for each name)."""

import os

from elmo_core.errors import BiLMSourceError
from elmo_core.errors.blame import renamed
from elmo_core.pretrained.cache import check_url_scheme
from elmo_core.pretrained.cache import is_url
from elmo_core.pretrained.local_files import cached_file
from elmo_core.pretrained.local_files import fetch
from elmo_core.pretrained.preset_table import get_preset


def looks_like_path(source):
    """Whether the str `source` reads as a file path (a separator, or the
    ending of a weight file), so that it cannot be a preset name."""
    return os.sep in source or source.endswith(
        (".json", ".hdf5", ".h5", ".keras")
    )


def download(source, progress=True, verify=False):
    """Downloads a pretrained model, a URL or a pair of URLs into the
    cache ahead of use, so that later loads run offline; what is cached
    already is checked, and fetched again if damaged.

    The sources are classified as `keras_elmo.load_bilm` classifies them;
    a local path needs no download and is refused.

    Args:
        source: str. A pretrained model name (`presets()` lists them), an
            `http(s)://` URL, or `OPTIONS_URL,WEIGHTS_URL`.
        progress: bool. Print download progress. Defaults to `True`.
        verify: bool. Also check the SHA-256 of cached copies against the
            cache index (a damaged copy is fetched again). Defaults to
            `False` (the size is checked on every use).

    Returns:
        `{role: local path}`: a preset's roles (`options` and `weights`,
        or `model` for an ELMoForManyLangs folder), `file` for one URL,
        `options` and `weights` for a pair.

    Raises:
        BiLMSourceError: a local path, or no pretrained model name.
        DownloadError: a file that could not be fetched whole.

    Example (from a mirror folder, laid out by host as the publishers'
    files, as behind a firewall; `$KERAS_ELMO_MIRROR`, see `set_mirror`):

    >>> import os, shutil, tempfile, unittest.mock
    >>> mirror = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(mirror, "example.org", "elmo"))
    >>> _ = shutil.copy("tests/fixtures/bilm-tf/model/options.json",
    ...                 os.path.join(mirror, "example.org", "elmo"))
    >>> settings = {elmo_core.pretrained.CACHE_VARIABLE: tempfile.mkdtemp(),
    ...             elmo_core.pretrained.MIRROR_VARIABLE: mirror}
    >>> with unittest.mock.patch.dict(os.environ, settings):
    ...     paths = elmo_core.pretrained.download(
    ...         "https://example.org/elmo/options.json", progress=False)
    ...     cached = elmo_core.pretrained.cache_dir()
    >>> os.path.relpath(paths["file"], cached)
    'example.org/elmo/options.json'
    """
    if not isinstance(source, str) or not source.strip():
        raise BiLMSourceError(
            "`source` must be a pretrained model name, an http(s) URL, or "
            "OPTIONS_URL,WEIGHTS_URL (a non-empty str).",
            "source",
            received=source,
        )
    parts = source.split(",", 1)
    for part in parts:
        check_url_scheme(part, repr(part[:80]))
    if len(parts) == 2 and all(is_url(part) for part in parts):
        return {
            role: cached_file(part, progress=progress, verify=verify)
            for role, part in zip(("options", "weights"), parts)
        }
    if is_url(source):
        return {"file": cached_file(source, progress=progress, verify=verify)}
    if os.path.exists(source) or looks_like_path(source):
        raise BiLMSourceError(
            f"{source!r} is a local path; keras-elmo download takes the "
            "sources that need the network: a pretrained model name, an "
            "http(s) URL, or OPTIONS_URL,WEIGHTS_URL.",
            "source",
        )
    try:
        preset = get_preset(source)
    except BiLMSourceError as error:  # `get_preset`'s `name` is `source`
        raise renamed(error, {"name": "source"}) from None
    return fetch(preset, progress=progress, verify=verify)
