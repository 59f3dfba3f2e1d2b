"""Local paths of presets and URLs: cached copies, downloaded on first use."""

from keras_elmo.pretrained import presets
from keras_elmo.pretrained.cache import cache_path
from keras_elmo.pretrained.cache import is_cached
from keras_elmo.pretrained.cache import is_url
from keras_elmo.pretrained.cache import local_path
from keras_elmo.pretrained.download import download
from keras_elmo.pretrained.download import unpack


def cached_file(url, expected=None, progress=True, command=None):
    """The local path of `url`, downloaded into the cache if needed.

    Args:
        url: str. An `http(s)://` URL.
        expected: `PresetFile` or None. What the file should be (size,
            hash, archive); None looks `url` up in `PRESETS`.
        progress: bool. Print download progress. Defaults to `True`.
        command: str or None. The `keras-elmo download ...` argument to
            suggest in the offline error. Defaults to the URL.

    Returns:
        str, the path of the file (of the unpacked folder for an archive).
    """
    expected = expected or presets.known_file(url)
    target = local_path(url, expected)
    if is_cached(target, expected):
        return target
    path = cache_path(url)
    download(url, path, expected, progress, command or url)
    if expected.extract:
        unpack(path, target)
    return target


def local_file(path_or_url, progress=True):
    """A local path unchanged; an `http(s)://` URL as its cached copy."""
    if is_url(path_or_url):
        return cached_file(path_or_url, progress=progress)
    return path_or_url


def fetch(preset, progress=True):
    """Downloads what is missing of a preset; `{role: local path}`.

    Args:
        preset: str or `Preset`. A name from `PRESETS`.
        progress: bool. Print download progress. Defaults to `True`.
    """
    preset = presets.get_preset(preset)
    return {
        role: cached_file(record.url, record, progress, command=preset.name)
        for role, record in preset.files.items()
    }


def cached_files(preset):
    """`{role: local path or None}`: what of a preset is in the cache now."""
    preset = presets.get_preset(preset)
    paths = {}
    for role, record in preset.files.items():
        path = local_path(record.url, record)
        paths[role] = path if is_cached(path, record) else None
    return paths
