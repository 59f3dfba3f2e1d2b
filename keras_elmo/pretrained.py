"""Pretrained biLMs by name or URL, downloaded once into a local cache.

`PRESETS` is the one table of published models. A preset name, or an
`http(s)://` URL of one file, given to `keras_elmo.load_bilm`,
`ELMoEmbedding` or the command line is resolved here to local files: they
are downloaded on first use into the cache directory and read from there
afterwards, without network.

A download is resumable (an interrupted transfer continues from where it
stopped, with an HTTP `Range` request), written atomically (the cached name
appears only when the file is complete and verified) and verified: its size,
its SHA-256 where the table records one, and that it loads (the JSON parses,
the HDF5 file opens and every dataset reads, the zip archive passes its CRC
check). A damaged download is deleted and fetched again.

The cache directory is `$KERAS_ELMO_HOME` when that is set, else
`keras_elmo/` under the Keras home (`$KERAS_HOME`, default `~/.keras`),
following `keras.utils.get_file`'s rules. A URL
`https://host/a/b/file.hdf5` is cached at `<cache>/host/a/b/file.hdf5`, so a
preset and the same URL share one copy, and a file can be put there by hand.
"""

import dataclasses
import difflib
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
from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import WeightFileError
from keras_elmo.files import atomic_output
from keras_elmo.version import __version__

CACHE_VARIABLE = "KERAS_ELMO_HOME"
# An unfinished download; kept between attempts and calls to be resumed.
DOWNLOAD_SUFFIX = ".download"
DOWNLOAD_ATTEMPTS = 3
# Seconds to wait before retry k (times k); tests set it to 0.
RETRY_PAUSE_SECONDS = 2.0
# Seconds without data after which a connection counts as dropped.
TIMEOUT_SECONDS = 60.0
_CHUNK_BYTES = 1 << 20
_KINDS = ("bilm-tf", "efml")


@dataclasses.dataclass(frozen=True)
class PresetFile:
    """One downloadable file of a preset.

    Args:
        url: str. Its `http(s)://` address.
        size: int or None. Its size in bytes, where a published source
            confirms it. Defaults to `None` (the server's `Content-Length`
            is checked instead).
        sha256: str or None. Its SHA-256 (hex), where confirmed. Defaults
            to `None`.
        extract: str or None. `"zip"` for an archive that is unpacked into
            a folder of the cache (the archive is then deleted). Defaults
            to `None`, a plain file.
        approximate_size: int or None. Bytes, for display only (never
            checked), where the exact size is not confirmed, e.g. 4 bytes
            per published parameter. Defaults to `None`.
    """

    url: str
    size: int | None = None
    sha256: str | None = None
    extract: str | None = None
    approximate_size: int | None = None


@dataclasses.dataclass(frozen=True)
class Preset:
    """A published pretrained biLM.

    Args:
        name: str. The key in `PRESETS`, e.g. `"original"`.
        kind: str. The file format: `"bilm-tf"` (options.json + hdf5
            weights, roles `"options"` and `"weights"`) or `"efml"`
            (an ELMoForManyLangs model folder).
        language: str. ISO 639-1 code where one exists, e.g. `"en"`.
        description: str. One line for `keras-elmo presets`.
        files: dict `role -> PresetFile`.
        source: str. Where the record's facts come from (a URL).

    Example:

    >>> preset = keras_elmo.pretrained.PRESETS["original"]
    >>> preset.kind, preset.language, sorted(preset.files)
    ('bilm-tf', 'en', ['options', 'weights'])
    >>> preset.files["options"].url.rsplit("/", 1)[1]
    'elmo_2x4096_512_2048cnn_2xhighway_options.json'
    """

    name: str
    kind: str
    language: str
    description: str
    files: dict
    source: str = ""


# === The table ===

_ALLENNLP_ELMO = "https://allennlp.s3.amazonaws.com/models/elmo"


def _allennlp_preset(name, long_name, parameters, description):
    # AllenNLP's naming: models/elmo/NAME/elmo_NAME_{options.json,weights.hdf5}
    base = f"{_ALLENNLP_ELMO}/{long_name}/elmo_{long_name}"
    # float32 weights: about 4 bytes per biLM parameter (SPEC §1 counts).
    approximate = 4 * parameters
    return Preset(
        name=name,
        kind="bilm-tf",
        language="en",
        description=description,
        files={
            "options": PresetFile(f"{base}_options.json"),
            "weights": PresetFile(
                f"{base}_weights.hdf5", approximate_size=approximate
            ),
        },
        source="https://allennlp.org/elmo",
    )


# Sizes and hashes of AllenNLP's files are not published; the downloads are
# checked against the server's Content-Length and by loading them.
_ENGLISH = (
    _allennlp_preset(
        "small",
        "2x1024_128_2048cnn_1xhighway",
        13_593_296,
        "English (1B Word Benchmark), 13.6M parameters, LSTM 1024, "
        "ELMo vectors of 256",
    ),
    _allennlp_preset(
        "medium",
        "2x2048_256_2048cnn_1xhighway",
        28_027_728,
        "English (1B Word Benchmark), 28.0M parameters, LSTM 2048, "
        "ELMo vectors of 512",
    ),
    _allennlp_preset(
        "original",
        "2x4096_512_2048cnn_2xhighway",
        93_600_848,
        "English (1B Word Benchmark), 93.6M parameters, LSTM 4096, "
        "ELMo vectors of 1024: the paper's model",
    ),
    _allennlp_preset(
        "original_5.5b",
        "2x4096_512_2048cnn_2xhighway_5.5B",
        93_600_848,
        "English (5.5B tokens: Wikipedia + WMT news 2008-2012), 93.6M "
        "parameters, ELMo vectors of 1024",
    ),
)

# === ELMoForManyLangs (HIT-SCIR): 44 languages ===
# Names are ISO 639-1 codes (grc, Ancient Greek, has none); the links are
# those of ELMoForManyLangs' README (zips on the NLPL Vectors Repository,
# http only). Sizes and hashes are not published. Each was trained on 20M
# words of the CoNLL 2018 shared task's raw text (Wikipedia dump + Common
# Crawl) with the same network: char CNN (char 50, 2048 filters, 2
# highway), word embedding 100, 2 x LSTM 4096 projected to 512.
# (The README's simplified-Chinese model is a .tar.bz2 on a bare IP
# address; the downloader unpacks zips only, so it is not listed.)
_EFML_REPOSITORY = "http://vectors.nlpl.eu/repository/11"
_EFML_LANGUAGES = (
    ("ar", "Arabic", 136),
    ("bg", "Bulgarian", 137),
    ("ca", "Catalan", 138),
    ("cs", "Czech", 139),
    ("cu", "Old Church Slavonic", 140),
    ("da", "Danish", 141),
    ("de", "German", 142),
    ("el", "Greek", 143),
    ("en", "English", 144),
    ("es", "Spanish", 145),
    ("et", "Estonian", 146),
    ("eu", "Basque", 147),
    ("fa", "Persian", 148),
    ("fi", "Finnish", 149),
    ("fr", "French", 150),
    ("ga", "Irish", 151),
    ("gl", "Galician", 152),
    ("grc", "Ancient Greek", 153),
    ("he", "Hebrew", 154),
    ("hi", "Hindi", 155),
    ("hr", "Croatian", 156),
    ("hu", "Hungarian", 157),
    ("id", "Indonesian", 158),
    ("it", "Italian", 159),
    ("ja", "Japanese", 160),
    ("ko", "Korean", 161),
    ("la", "Latin", 162),
    ("lv", "Latvian", 163),
    ("nl", "Dutch", 164),
    ("nb", "Norwegian Bokmål", 165),
    ("nn", "Norwegian Nynorsk", 166),
    ("pl", "Polish", 167),
    ("pt", "Portuguese", 168),
    ("ro", "Romanian", 169),
    ("ru", "Russian", 170),
    ("sk", "Slovak", 171),
    ("sl", "Slovene", 172),
    ("sv", "Swedish", 173),
    ("tr", "Turkish", 174),
    ("ug", "Uyghur", 175),
    ("uk", "Ukrainian", 176),
    ("ur", "Urdu", 177),
    ("vi", "Vietnamese", 178),
    ("zh", "Chinese (traditional)", 179),
)
_EFML = tuple(
    Preset(
        name=code,
        kind="efml",
        language=code,
        description=f"{language}, ELMoForManyLangs (CoNLL 2018 raw text, "
        "20M words), ELMo vectors of 1024",
        files={
            "model": PresetFile(
                f"{_EFML_REPOSITORY}/{number}.zip", extract="zip"
            )
        },
        source="https://github.com/HIT-SCIR/ELMoForManyLangs",
    )
    for code, language, number in _EFML_LANGUAGES
)

PRESETS = {preset.name: preset for preset in _ENGLISH + _EFML}


def get_preset(name):
    """The `Preset` called `name`; a clear error listing the names if none."""
    if isinstance(name, Preset):
        return name
    if isinstance(name, str) and name in PRESETS:
        return PRESETS[name]
    close = difflib.get_close_matches(str(name), PRESETS, n=1)
    suggestion = f" Did you mean {close[0]!r}?" if close else ""
    raise KerasElmoError(
        f"{name!r} is not a pretrained model name.{suggestion} "
        f"`keras-elmo presets` lists the {len(PRESETS)} names (e.g. "
        f"{', '.join(list(PRESETS)[:4])}); or pass local files or "
        "http(s):// URLs for the options and the weights."
    )


# === The cache ===


def cache_dir():
    """The cache directory (see the module docstring for the rules)."""
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
    """Whether `value` is an `http://` or `https://` URL."""
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def cache_path(url):
    """Where `url` is (or will be) cached: `<cache>/host/path/of/file`."""
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
            "e.g. https://host/path/options.json."
        )
    if parts.query:
        digest = hashlib.sha256(parts.query.encode()).hexdigest()[:12]
        segments[-1] = f"{segments[-1]}-{digest}"
    host = parts.netloc.rsplit("@", 1)[-1].replace(":", "_")
    return os.path.join(cache_dir(), host, *segments)


def _unpacked_path(path):
    root, extension = os.path.splitext(path)
    return root if extension.lower() == ".zip" else f"{path}-unpacked"


def _local_path(url, expected):
    path = cache_path(url)
    return _unpacked_path(path) if expected.extract else path


def _is_cached(path, expected):
    if expected.extract:
        return os.path.isdir(path)
    return os.path.isfile(path) and (
        expected.size is None or os.path.getsize(path) == expected.size
    )


def _known_file(url):
    """The table's record of `url` (so its size and hash apply), if any."""
    for preset in PRESETS.values():
        for record in preset.files.values():
            if record.url == url:
                return record
    return PresetFile(url)


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
    expected = expected or _known_file(url)
    target = _local_path(url, expected)
    if _is_cached(target, expected):
        return target
    path = cache_path(url)
    _download(url, path, expected, progress, command or url)
    if expected.extract:
        _unpack(path, target)
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
    preset = get_preset(preset)
    return {
        role: cached_file(record.url, record, progress, command=preset.name)
        for role, record in preset.files.items()
    }


def cached_files(preset):
    """`{role: local path or None}`: what of a preset is in the cache now."""
    preset = get_preset(preset)
    paths = {}
    for role, record in preset.files.items():
        path = _local_path(record.url, record)
        paths[role] = path if _is_cached(path, record) else None
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
    preset = get_preset(name)
    paths = fetch(preset, progress=progress)
    try:
        if preset.kind == "bilm-tf":
            from keras_elmo.checkpoints import load_bilm

            return load_bilm(paths["options"], paths["weights"], **kwargs)
        if preset.kind == "efml":
            from keras_elmo.efml import load_efml_bilm

            return load_efml_bilm(paths["model"], **kwargs)
        raise KerasElmoError(
            f"Preset {preset.name!r} has kind {preset.kind!r}, which this "
            f"version of keras_elmo cannot load (it loads {', '.join(_KINDS)})."
        )
    except WeightFileError as e:
        raise WeightFileError(
            f"{e} (Preset {preset.name!r}, read from the cache: "
            f"{', '.join(paths.values())}. Delete these files to download "
            "them again.)"
        ) from None


# === Downloading ===


class _Unreachable(Exception):
    """The server could not be reached at all (offline, refused, DNS)."""


class _Interrupted(Exception):
    """The transfer stopped before the end; the partial file is kept."""


class _RangeRefused(Exception):
    """The server cannot continue the partial file (HTTP 416)."""


def _download(url, path, expected, progress, command):
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
        f"unpack the archive into {_unpacked_path(path)}"
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


def _unpack(archive, folder):
    """Unpacks a verified zip archive into `folder` (atomically)."""
    with atomic_output(folder, directory=True) as temporary:
        with zipfile.ZipFile(archive) as f:
            # extractall drops absolute paths and `..` from member names.
            f.extractall(temporary)
    os.remove(archive)
