"""Model sizes: the published ELMo configurations and a CPU demo size.

A size is a dict of `BiLM` arguments (`BILM_KEYS`). `bilm_size` turns the
ways a user gives one (a preset name, an official options file, single
flags, or the size of the weights a run starts from) into one such dict,
checking each value under its own name.
"""

from keras_elmo.char_cnn_filters import DEFAULT_FILTERS
from keras_elmo.char_cnn_filters import check_filters
from keras_elmo.characters import MAX_CHARACTERS_PER_TOKEN
from keras_elmo.errors import KerasElmoError

_PUBLISHED = dict(
    filters=[list(f) for f in DEFAULT_FILTERS],
    char_embedding_dim=16,
    activation="relu",
    use_token_projection=None,
    cell_clip=3.0,
    proj_clip=3.0,
    use_skip_connections=True,
    num_layers=2,
)
# The published ELMo configurations (SPEC §1), and "cpu", a small biLM that
# trains on a laptop CPU in minutes (the README's demo).
PRESETS = {
    "cpu": dict(
        _PUBLISHED,
        filters=[[1, 32], [2, 32], [3, 64], [4, 128], [5, 256]],
        num_highway_layers=1,
        units=512,
        projection_dim=128,
    ),
    "small": dict(
        _PUBLISHED, num_highway_layers=1, units=1024, projection_dim=128
    ),
    "medium": dict(
        _PUBLISHED, num_highway_layers=1, units=2048, projection_dim=256
    ),
    "original": dict(
        _PUBLISHED, num_highway_layers=2, units=4096, projection_dim=512
    ),
}
DEFAULT_PRESET = "cpu"
BILM_KEYS = tuple(PRESETS[DEFAULT_PRESET])
# The token encoders a run can train from scratch (`--token-encoder`), and
# the size keys of a word-input biLM: the LSTMs' (its table is one row per
# vocabulary line).
TRAINABLE_TOKEN_ENCODERS = ("characters", "words")
DEFAULT_TOKEN_ENCODER = "characters"
LSTM_KEYS = (
    "units",
    "projection_dim",
    "num_layers",
    "cell_clip",
    "proj_clip",
    "use_skip_connections",
)

# Size arguments that single flags may set: name -> (type, smallest value).
SIZE_ARGUMENTS = {
    "units": (int, 1),
    "projection_dim": (int, 1),
    "num_layers": (int, 1),
    "num_highway_layers": (int, 0),
    "char_embedding_dim": (int, 1),
    "cell_clip": (float, 0.0),
    "proj_clip": (float, 0.0),
}


def _flag(name):
    return "--" + name.replace("_", "-")


def check_size_value(name, value, where=None):
    """Checks one size value under its own name (`where` names it for
    the user, e.g. the flag or the options key)."""
    where = where or _flag(name)
    kind, smallest = SIZE_ARGUMENTS[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise KerasElmoError(
            f"{where} must be a number; received {value!r} "
            f"({type(value).__name__})."
        )
    if kind is int and value != int(value):
        raise KerasElmoError(f"{where} must be an integer; received {value!r}.")
    if value < smallest:
        raise KerasElmoError(
            f"{where} must be >= {smallest}; received {value!r}."
        )
    return kind(value)


def size_of(config):
    """The size (`BiLM` arguments) of a `BiLM.get_config()`."""
    if config.get("token_encoder") == "words":
        keys = (*LSTM_KEYS, "token_encoder", "vocabulary_size")
    else:
        keys = BILM_KEYS
    return {key: config[key] for key in keys}


def _check_filters_flag(filters):
    try:
        return [
            list(f) for f in check_filters(filters, MAX_CHARACTERS_PER_TOKEN)
        ]
    except KerasElmoError as error:
        raise KerasElmoError(f"--filters: {error}") from None


def bilm_size(
    preset=None,
    options_config=None,
    flags=None,
    source=None,
    token_encoder=None,
    vocabulary_size=None,
):
    """The `BiLM` arguments of a run.

    Args:
        preset: str or None. A name of `PRESETS`.
        options_config: dict or None. `BiLM` arguments read from an official
            options file; they replace the preset's.
        flags: dict or None. Single values (`units=...`, `filters=...`,
            `use_skip_connections=...`) applied last.
        source: a `keras_elmo.loading.BiLMSource` or None. With nothing
            else given, the run takes the size of the weights it starts from.
        token_encoder: str or None. `"characters"` or `"words"`; None
            means the source's, the options file's, or `"characters"`.
        vocabulary_size: int or None. The run's vocabulary size, the table
            size of a word-input biLM.

    Returns:
        A dict with the keys `BILM_KEYS`; for a word-input biLM, the keys
        `LSTM_KEYS`, `token_encoder` and `vocabulary_size`.
    """
    if token_encoder not in (None, *TRAINABLE_TOKEN_ENCODERS):
        raise KerasElmoError(
            f"--token-encoder must be one of {list(TRAINABLE_TOKEN_ENCODERS)};"
            f" received {token_encoder!r}."
        )
    flags = dict(flags or {})
    if preset is not None and preset not in PRESETS:
        raise KerasElmoError(
            f"Unknown preset {preset!r}; expected one of {sorted(PRESETS)}."
        )
    for name, value in flags.items():
        if name in SIZE_ARGUMENTS:
            flags[name] = check_size_value(name, value)
    if "filters" in flags:
        flags["filters"] = _check_filters_flag(flags["filters"])
    if source is not None and not (
        preset or options_config or flags or token_encoder
    ):
        size = dict(source.bilm_size())
    else:
        size = dict(PRESETS[preset or DEFAULT_PRESET])
        size.update(options_config or {})
        size.update(flags)
    encoder = token_encoder or size.get("token_encoder", DEFAULT_TOKEN_ENCODER)
    if encoder == "characters":
        return {key: size[key] for key in BILM_KEYS}
    char_flags = [_flag(name) for name in flags if name not in LSTM_KEYS]
    if char_flags:
        raise KerasElmoError(
            f"{', '.join(char_flags)} size(s) the char CNN; a word-input "
            "biLM (--token-encoder words) has none. Drop the flag(s)."
        )
    table = vocabulary_size or size.get("vocabulary_size")
    if table is None:
        raise KerasElmoError(
            "A word-input biLM needs the size of its vocabulary (its word "
            "table has one row per line)."
        )
    size = {key: size[key] for key in LSTM_KEYS}
    return dict(size, token_encoder=encoder, vocabulary_size=int(table))
