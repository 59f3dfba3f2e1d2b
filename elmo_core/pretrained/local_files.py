"""Local paths of presets and URLs: cached copies, downloaded on first use,
checked on every use (`cache/integrity.py`) and fetched again when damaged."""

import os

from elmo_core.errors import DownloadError
from elmo_core.files.paths import check_path
from elmo_core.pretrained import preset_table
from elmo_core.pretrained.advice import unavailable_message
from elmo_core.pretrained.archive import unpack
from elmo_core.pretrained.cache import MISSING
from elmo_core.pretrained.cache import cache_path
from elmo_core.pretrained.cache import cache_problem
from elmo_core.pretrained.cache import check_url_scheme
from elmo_core.pretrained.cache import index
from elmo_core.pretrained.cache import is_url
from elmo_core.pretrained.cache import local_path
from elmo_core.pretrained.downloader import Unreachable
from elmo_core.pretrained.downloader import download_file
from elmo_core.pretrained.verify import file_problem
from elmo_core.pretrained.verify import sha256


def cached_file(url, expected=None, progress=True, command=None, verify=False):
    """The local path of `url`, downloaded into the cache if needed.

    Args:
        url: str. An `http(s)://` URL.
        expected: `PresetFile` or None. What the file should be (size,
            hash, archive); None looks `url` up in `PRESETS`.
        progress: bool. Print download progress. Defaults to `True`.
        command: str or None. The `keras-elmo download ...` argument to
            suggest in the offline error. Defaults to the URL.
        verify: bool. Also check a cached copy's SHA-256 against the
            cache index (`keras-elmo download --verify`). Defaults to
            `False` (the size is checked on every use).

    Returns:
        str, the path of the file (of the unpacked folder for an archive).

    Example (a file already in the cache: no download):

    >>> import os, shutil, tempfile, unittest.mock
    >>> cache = {elmo_core.pretrained.CACHE_VARIABLE: tempfile.mkdtemp()}
    >>> url = "https://example.org/elmo/options.json"
    >>> with unittest.mock.patch.dict(os.environ, cache):
    ...     path = elmo_core.pretrained.cache_path(url)  # put there by hand
    ...     os.makedirs(os.path.dirname(path))
    ...     _ = shutil.copy("tests/fixtures/bilm-tf/model/options.json", path)
    ...     found = elmo_core.pretrained.cached_file(
    ...         url, elmo_core.pretrained.PresetFile(url))
    >>> found == path
    True
    """
    expected = expected or preset_table.known_file(url)
    target = local_path(url, expected)
    problem = cache_problem(url, target, expected, verify)
    if problem is None:
        return target
    try:
        return _obtain(url, expected, target, problem, progress)
    except Unreachable as e:
        missing = [(url, target, expected, problem)]
        raise DownloadError(
            unavailable_message(missing, [], e, command or url)
        ) from None


def _obtain(url, expected, target, problem, progress):
    """Downloads (again) what `problem` says is missing or damaged."""
    if problem != MISSING and progress:
        print(f"{target}: {problem}; downloading it again", flush=True)
    path = cache_path(url)
    digest = None
    if expected.extract and os.path.isfile(path):
        # An archive put in the cache by hand: used if it is whole.
        digest = sha256(path)
        if file_problem(path, expected, digest) is not None:
            digest = None
    if digest is None:
        digest = download_file(url, path, expected, progress)
    entry = index.file_entry(os.path.getsize(path), digest)
    if expected.extract:
        entry["members"] = unpack(path, target)
    index.record(url, entry)
    return target


def local_file(path_or_url, progress=True):
    """A local path unchanged; an `http(s)://` URL as its cached copy
    (`cached_file`, whose example shows one); another scheme is refused.

    Example:

    >>> elmo_core.pretrained.local_file("options.json")
    'options.json'
    >>> elmo_core.pretrained.local_file("ftp://example.org/options.json")
    Traceback (most recent call last):
    ...
    elmo_core.errors.kinds.KerasElmoError: The file ... unsupported scheme ...
    """
    path_or_url = check_path(path_or_url, "path_or_url")
    check_url_scheme(path_or_url, f"The file {path_or_url[:80]!r}")
    if is_url(path_or_url):
        return cached_file(path_or_url, progress=progress)
    return path_or_url


def fetch(preset, progress=True, verify=False):
    """Downloads what is missing (or damaged) of a preset.

    Every file is tried; when some cannot be had, one `DownloadError`
    lists them all (offline: every file without a usable copy).

    Args:
        preset: str or `Preset`. A name from `PRESETS`.
        progress: bool. Print download progress. Defaults to `True`.
        verify: bool. Also check cached copies' SHA-256 (see
            `cached_file`). Defaults to `False`.

    Returns:
        `{role: local path}`.

    Example (files already in the cache: no download):

    >>> import os, shutil, tempfile, unittest.mock
    >>> files = elmo_core.pretrained.PresetFile
    >>> preset = elmo_core.pretrained.Preset(
    ...     name="mine", kind="bilm-tf", language="en",
    ...     description="a model put in the cache by hand",
    ...     files={"options": files("https://example.org/m/options.json"),
    ...            "weights": files("https://example.org/m/weights.hdf5")})
    >>> cache = {elmo_core.pretrained.CACHE_VARIABLE: tempfile.mkdtemp()}
    >>> fixture = "tests/fixtures/bilm-tf/model/"
    >>> with unittest.mock.patch.dict(os.environ, cache):
    ...     for role, name in (("options", "options.json"),
    ...                        ("weights", "lm_weights.hdf5")):
    ...         path = elmo_core.pretrained.cache_path(
    ...             preset.files[role].url)
    ...         os.makedirs(os.path.dirname(path), exist_ok=True)
    ...         _ = shutil.copy(fixture + name, path)
    ...     paths = elmo_core.pretrained.fetch(preset)
    >>> sorted(paths)
    ['options', 'weights']
    """
    preset = preset_table.preset_for(preset, "preset")
    paths, missing, failures, offline = {}, [], [], None
    for role, record in preset.files.items():
        target = local_path(record.url, record)
        problem = cache_problem(record.url, target, record, verify)
        if problem is None:
            paths[role] = target
            continue
        if offline is not None:
            missing.append((record.url, target, record, problem))
            continue
        try:
            paths[role] = _obtain(record.url, record, target, problem, progress)
        except Unreachable as e:
            offline = e
            missing.append((record.url, target, record, problem))
        except DownloadError as e:
            failures.append(str(e))
    if missing or failures:
        raise DownloadError(
            unavailable_message(
                missing,
                failures,
                offline,
                preset.name,
                preset.name,
                len(preset.files),
            )
        )
    return paths


def cached_files(preset):
    """`{role: local path or None}`: what of a preset is in the cache now
    (a copy without a record in the index counts, unchecked).

    Example (an empty cache; `fetch`'s example fills one):

    >>> import os, tempfile, unittest.mock
    >>> cache = {elmo_core.pretrained.CACHE_VARIABLE: tempfile.mkdtemp()}
    >>> with unittest.mock.patch.dict(os.environ, cache):
    ...     elmo_core.pretrained.cached_files("original")
    {'options': None, 'weights': None}
    """
    preset = preset_table.preset_for(preset, "preset")
    paths = {}
    for role, record in preset.files.items():
        path = local_path(record.url, record)
        problem = cache_problem(record.url, path, record, adopt=False)
        paths[role] = path if problem is None else None
    return paths
