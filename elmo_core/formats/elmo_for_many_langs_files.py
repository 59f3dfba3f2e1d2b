"""The files of an ELMoForManyLangs model folder, read by EFML's rules:
which folder is one, its network config (found as EFML finds it) and its
`.dic` dictionaries. The conversion to a Keras `BiLM` is
`keras_elmo.formats.elmo_for_many_langs`.
"""

import os

from elmo_core.errors import InputPathError
from elmo_core.errors import MissingInputError
from elmo_core.errors import WeightFileError
from elmo_core.files.paths import check_input_directory
from elmo_core.files.paths import check_input_file
from elmo_core.formats.json_text import MAX_CONFIG_BYTES
from elmo_core.formats.json_text import read_json

# EFML's packaged network configs (the published models name one of them).
_PACKAGED_CONFIG = {
    "encoder": {
        "name": "elmo",
        "projection_dim": 512,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 4096,
        "n_layers": 2,
    },
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "filters": [
            [1, 32],
            [2, 32],
            [3, 64],
            [4, 128],
            [5, 256],
            [6, 512],
            [7, 1024],
        ],
        "n_highway": 2,
        "word_dim": 100,
        "char_dim": 50,
        "max_characters_per_token": 50,
    },
}
PACKAGED_CONFIGS = {
    "cnn_50_100_512_4096_sample.json": _PACKAGED_CONFIG,
    "cnn_0_100_512_4096_sample.json": _PACKAGED_CONFIG,
}
MODEL_FILES = ("config.json", "char.dic", "token_embedder.pkl", "encoder.pkl")
# Files only an EFML model folder has (a keras_elmo training run has a
# config.json too): any of them makes a folder one, and the loader then
# names what is missing.
_OWN_FILES = ("char.dic", "word.dic", "token_embedder.pkl", "encoder.pkl")


def is_model_dir(path):
    """Whether `path` is a folder that looks like an EFML model: it holds
    one of the files only such a folder has (`char.dic`, `word.dic`,
    `token_embedder.pkl`, `encoder.pkl`)."""
    return isinstance(path, (str, os.PathLike)) and any(
        os.path.isfile(os.path.join(path, name)) for name in _OWN_FILES
    )


def inner_model_dir(path):
    """The only subfolder of `path` that `is_model_dir` (an archive
    unpacked with its folder), or None."""
    if not os.path.isdir(path):
        return None
    inner = [
        os.path.join(path, name)
        for name in sorted(os.listdir(path))
        if is_model_dir(os.path.join(path, name))
    ]
    return inner[0] if len(inner) == 1 else None


def find_model_dir(path):
    """The EFML model folder at `path`, or its only subfolder holding one
    (an archive unpacked with its folder)."""
    try:
        check_input_directory(
            path,
            "ELMoForManyLangs model folder",
            expected="the folder unpacked from the model's zip (it holds "
            "config.json, char.dic, word.dic, token_embedder.pkl and "
            "encoder.pkl)",
            hint="For bilm-tf files, pass options.json and the hdf5 weights "
            "together.",
        )
    except InputPathError as error:
        raise error.within(kind=WeightFileError) from None
    if os.path.isfile(os.path.join(path, "config.json")):
        return path
    inner = inner_model_dir(path)
    if inner is not None:
        return inner
    raise WeightFileError(
        f"{path} has no config.json; an ELMoForManyLangs model folder holds "
        f"{', '.join(MODEL_FILES)} (and word.dic). Found: "
        f"{sorted(os.listdir(path))[:10]}"
    )


def _read_json(path, what):
    try:
        check_input_file(path, what.capitalize(), "a JSON file")
    except InputPathError as error:
        raise error.within(kind=WeightFileError) from None
    try:
        value = read_json(path, MAX_CONFIG_BYTES, WeightFileError)
    except OSError as e:
        raise WeightFileError(
            f"Could not read {what} {path} as JSON ({e})."
        ) from None
    if not isinstance(value, dict):
        raise WeightFileError(
            f"{what} {path} holds a JSON {type(value).__name__}; expected "
            "an object."
        )
    return value


def read_network_config(model_dir):
    """The network config of an EFML model folder, found as EFML finds it.

    Returns `(config, source)`: the dict and where it came from (a path,
    or the name of a packaged config).
    """
    options = _read_json(os.path.join(model_dir, "config.json"), "config")
    config_path = options.get("config_path")
    if not isinstance(config_path, str) or not config_path:
        raise WeightFileError(
            f"{os.path.join(model_dir, 'config.json')} has no `config_path` "
            "(the network config file, e.g. "
            '"cnn_50_100_512_4096_sample.json").'
        )
    name = os.path.basename(config_path.replace("\\", "/"))
    for candidate in (
        os.path.join(model_dir, config_path),
        os.path.join(model_dir, name),
    ):
        if os.path.lexists(candidate):  # a link or pipe: _read_json says
            return _read_json(candidate, "network config"), candidate
    if name in PACKAGED_CONFIGS:
        return PACKAGED_CONFIGS[name], name
    raise WeightFileError(
        f"The network config {config_path!r} named by "
        f"{os.path.join(model_dir, 'config.json')} is neither at that path "
        f"nor in the model folder as {name}, nor one of EFML's packaged "
        f"configs ({', '.join(PACKAGED_CONFIGS)}). Put the file in the "
        "model folder."
    )


def read_dictionary(path, specials):
    """An EFML `.dic` file, read by EFML's rules, as a dict entry -> id.

    Each line is `entry<TAB>id`, stripped of surrounding whitespace first;
    a line left with the id alone is the entry U+3000 (EFML writes a
    whitespace character that way, and reads it back as U+3000). Lines are
    split as Python's `str.splitlines` does. A later line wins over an
    earlier one with the same entry.
    """
    try:
        check_input_file(path, "Dictionary", "a UTF-8 text file")
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except MissingInputError:
        raise WeightFileError(
            f"{path} not found; an ELMoForManyLangs model folder has "
            f"{os.path.basename(path)} beside config.json."
        ) from None
    except InputPathError as error:
        raise error.within(kind=WeightFileError) from None
    except UnicodeDecodeError as e:
        raise WeightFileError(f"{path} is not UTF-8 ({e}).") from None
    entries = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.strip().split("\t")
        if len(parts) == 1:
            parts.insert(0, "\u3000")
        if len(parts) != 2 or not parts[1].lstrip("-").isdigit():
            raise WeightFileError(
                f"{path}, line {number}: {line[:60]!r} is not 'entry<TAB>id'."
            )
        if parts[1].startswith("-") or len(parts[1]) > 9:
            raise WeightFileError(
                f"{path}, line {number}: id {parts[1][:20]} of "
                f"{parts[0][:20]!r} is not in 0..999999999; ids are rows "
                "of the model's embedding table."
            )
        entries[parts[0]] = int(parts[1])
    missing = [s for s in specials if s not in entries]
    if missing:
        raise WeightFileError(
            f"{path} lacks the special entries {missing}; ELMoForManyLangs "
            f"needs {list(specials)}. Is it a complete model folder?"
        )
    return entries
