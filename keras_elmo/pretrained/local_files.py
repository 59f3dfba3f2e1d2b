"""Local paths of presets and URLs: cached copies, downloaded on first use."""

from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import WeightFileError
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


def load_preset(name, progress=True, **kwargs):
    """Builds the `BiLM` of a preset, downloading its files if needed.

    Args:
        name: str. A name from `PRESETS`, e.g. `"original"`.
        progress: bool. Print download progress. Defaults to `True`.
        **kwargs: extra `BiLM` arguments, e.g. `stateful=True`.

    Returns:
        A built `keras_elmo.layers.BiLM` holding the pretrained weights.
    """
    preset = presets.get_preset(name)
    paths = fetch(preset, progress=progress)
    try:
        if preset.kind == "bilm-tf":
            from keras_elmo.formats.bilm_tf import load_bilm

            return load_bilm(paths["options"], paths["weights"], **kwargs)
        if preset.kind == "efml":
            from keras_elmo.formats.elmo_for_many_langs import (
                load_elmo_for_many_langs,
            )

            return load_elmo_for_many_langs(paths["model"], **kwargs)
        raise KerasElmoError(
            f"Preset {preset.name!r} has kind {preset.kind!r}, which this "
            "version of keras_elmo cannot load (it loads "
            f"{', '.join(presets.KINDS)})."
        )
    except WeightFileError as e:
        raise WeightFileError(
            f"{e} (Preset {preset.name!r}, read from the cache: "
            f"{', '.join(paths.values())}. Delete these files to download "
            "them again.)"
        ) from None
