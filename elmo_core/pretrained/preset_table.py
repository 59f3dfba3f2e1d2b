"""The table of published pretrained biLMs: `PRESETS`, by name."""

import dataclasses
import difflib

from elmo_core.errors import BiLMSourceError

# The file formats a preset may have.
KINDS = ("bilm-tf", "elmo_for_many_langs")


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

    Example:

    >>> options = elmo_core.pretrained.PRESETS["small"].files["options"]
    >>> options.url.rsplit("/", 1)[1], options.extract
    ('elmo_2x1024_128_2048cnn_1xhighway_options.json', None)
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
            weights, roles `"options"` and `"weights"`) or
            `"elmo_for_many_langs"` (an ELMoForManyLangs model folder).
        language: str. ISO 639-1 code where one exists, e.g. `"en"`.
        description: str. One line for `keras-elmo presets`.
        files: dict `role -> PresetFile`.
        source: str. Where the record's facts come from (a URL).

    Example:

    >>> preset = elmo_core.pretrained.PRESETS["original"]
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
        kind="elmo_for_many_langs",
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

# The publishers' base URLs, by the short names a mirror setting uses.
PUBLISHERS = {"allennlp": _ALLENNLP_ELMO, "nlpl": _EFML_REPOSITORY}


def get_preset(name):
    """The `Preset` called `name`; else an error that suggests close names.

    The one place that turns a name into a preset, so every caller
    (`load_bilm`, `ELMoEmbedding`, `--model`, `--init-from`, `download`)
    gives the same suggestion for a typo or a case difference.

    >>> elmo_core.pretrained.get_preset("zh").language
    'zh'
    >>> elmo_core.pretrained.preset_table.close_names("Original")
    ['original']
    >>> elmo_core.pretrained.preset_table.close_names("orignal")
    ['original', 'original_5.5b']
    """
    return preset_for(name, "name")


def preset_for(name, argument):
    """`get_preset(name)`, its error naming `argument` (the caller's name
    of `name`)."""
    if isinstance(name, Preset):
        return name
    if isinstance(name, str) and name in PRESETS:
        return PRESETS[name]
    close = close_names(name) if isinstance(name, str) else []
    suggestion = (
        f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    )
    raise BiLMSourceError(
        f"{name!r} is not a pretrained model name.{suggestion} "
        f"`keras-elmo presets` lists the {len(PRESETS)} names (e.g. "
        f"{', '.join(list(PRESETS)[:4])}); or pass local files or "
        "http(s):// URLs for the options and the weights.",
        argument,
    )


def close_names(name, limit=3):
    """Preset names close to `name`: the same letters in another case, else
    difflib's closest (at most `limit`)."""
    text = str(name).strip().lower()
    same = [known for known in PRESETS if known.lower() == text]
    if same:
        return same
    return difflib.get_close_matches(text, PRESETS, n=limit, cutoff=0.6)


def known_file(url):
    """The table's record of `url` (so its size and hash apply), if any."""
    for preset in PRESETS.values():
        for record in preset.files.values():
            if record.url == url:
                return record
    return PresetFile(url)
