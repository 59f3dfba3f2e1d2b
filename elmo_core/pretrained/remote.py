"""The sources that need the network, fetched ahead of use: `download`
(what `keras-elmo download` runs for each name)."""

import os

from elmo_core.errors import BiLMSourceError
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

    Example (a file already in the cache: nothing is fetched):

    >>> import os, shutil, tempfile, unittest.mock
    >>> cache = {elmo_core.pretrained.CACHE_VARIABLE: tempfile.mkdtemp()}
    >>> url = "https://example.org/elmo/options.json"
    >>> with unittest.mock.patch.dict(os.environ, cache):
    ...     path = elmo_core.pretrained.cache_path(url)  # put there by hand
    ...     os.makedirs(os.path.dirname(path))
    ...     _ = shutil.copy("tests/fixtures/bilm-tf/model/options.json", path)
    ...     paths = elmo_core.pretrained.download(url, progress=False)
    >>> paths == {"file": path}
    True
    """
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
            "http(s) URL, or OPTIONS_URL,WEIGHTS_URL."
        )
    return fetch(get_preset(source), progress=progress, verify=verify)
