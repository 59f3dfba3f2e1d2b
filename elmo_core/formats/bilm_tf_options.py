"""Official `options.json` in and out: the options of a bilm-tf biLM as
`BiLM` arguments and back (SPEC §1, §4), each option checked and named
in its errors. The weights are `keras_elmo.formats.bilm_tf`.
"""

from elmo_core.characters import MAX_CHARACTERS_PER_TOKEN
from elmo_core.characters import NUM_CHARACTER_IDS
from elmo_core.characters import OPTIONS_NUM_CHARACTERS
from elmo_core.errors import InputPathError
from elmo_core.errors import KerasElmoError
from elmo_core.errors import MissingInputError
from elmo_core.errors import WeightFileError
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.files.paths import check_input_file
from elmo_core.formats.json_text import MAX_CONFIG_BYTES
from elmo_core.formats.json_text import read_json

# The token encoders bilm-tf's files hold: the char CNN, or a word table
# (options without `char_cnn`).
TOKEN_ENCODERS = ("characters", "words")


def check_input(path, what, expected):
    """`check_input_file`, a missing file a `FileNotFoundError`, any other
    wrong kind of path a `WeightFileError`."""
    try:
        check_input_file(path, what, expected)
    except MissingInputError:
        raise
    except InputPathError as error:
        raise error.within(kind=WeightFileError) from None


def check_options_file(path):
    """Refuses, naming it, an options path where no readable file lies."""
    check_input(
        path,
        "Options file",
        "the options.json file itself (e.g. elmo_2x4096_512_2048cnn"
        "_2xhighway_options.json, the one that came with the weights)",
    )


def check_weight_file(path):
    """Refuses, naming it, a weights path where no readable file lies."""
    check_input(
        path,
        "Weight file",
        "the hdf5 file that came with the options (e.g. ..._weights.hdf5)",
    )


def read_options(options_file):
    """The parsed `options.json` (a dict is returned as is); a missing,
    unreadable or non-JSON file is an error naming it."""
    if isinstance(options_file, dict):
        return options_file
    check_options_file(options_file)
    options = read_json(
        options_file, MAX_CONFIG_BYTES, WeightFileError, "Options file"
    )
    if not isinstance(options, dict):
        raise WeightFileError(
            f"Options file {options_file} holds a JSON "
            f"{type(options).__name__}; expected an object with 'lstm' (and "
            "'char_cnn') sections."
        )
    return options


def _get(options, path, default=KeyError, kind=None, minimum=None):
    """`options[a][b]...` for `path` "a.b...", checked: of type `kind`
    (int, float or list; None: any) and >= `minimum`; a missing key takes
    `default` (or is an error). Errors name the key."""
    value = options
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            if default is KeyError:
                raise WeightFileError(
                    f"options.json has no `{path}`; it is required (see the "
                    "official options files for the layout)."
                )
            return default
        value = value[key]
    if value is None and default is None:
        return None
    return _check_option(path, value, kind, minimum)


def _check_option(path, value, kind, minimum):
    where = f"options.json `{path}`"
    if kind is None:
        return value
    if kind is list:
        if not isinstance(value, list):
            raise WeightFileError(f"{where} must be a list.", received=value)
        return value
    check = check_integer if kind is int else check_number
    try:
        return check(value, where=where, minimum=minimum)
    except KerasElmoError as error:
        raise error.within(kind=WeightFileError) from None


def _filters_option(options):
    filters = _get(options, "char_cnn.filters", kind=list)
    pairs_ok = all(
        isinstance(f, list)
        and len(f) == 2
        and all(
            not isinstance(x, bool) and isinstance(x, int) and x >= 1 for x in f
        )
        for f in filters
    )
    if not filters or not pairs_ok:
        raise WeightFileError(
            "options.json `char_cnn.filters` must be a non-empty list of "
            "[width, num_filters] pairs of integers >= 1, e.g. "
            "[[1, 32], [2, 32]].",
            received=filters,
        )
    return [list(f) for f in filters]


def options_to_config(options):
    """Maps an official options dict to `BiLM` constructor arguments.

    Options without a `char_cnn` section describe a word-input biLM
    (bilm-tf's; its table is the weight file's `embedding`). A missing
    `lstm.use_skip_connections` means False, as in bilm-tf's training code
    (its inference code would fail on it).
    """
    if isinstance(options, dict) and "char_cnn" not in options:
        return _word_options_to_config(options)
    n_characters = _get(options, "char_cnn.n_characters", NUM_CHARACTER_IDS)
    if n_characters not in OPTIONS_NUM_CHARACTERS:
        raise WeightFileError(
            f"options.json has char_cnn.n_characters={n_characters}; "
            "expected 261 (training files) or 262 (inference files)."
        )
    max_chars = _get(
        options,
        "char_cnn.max_characters_per_token",
        MAX_CHARACTERS_PER_TOKEN,
    )
    if max_chars != MAX_CHARACTERS_PER_TOKEN:
        raise WeightFileError(
            "options.json has char_cnn.max_characters_per_token="
            f"{max_chars}; keras_elmo supports 50, the value of every "
            "published model."
        )
    activation = _get(options, "char_cnn.activation")
    if activation not in ("relu", "tanh"):
        raise WeightFileError(
            f"options.json has char_cnn.activation={activation!r}; expected "
            "'relu' or 'tanh'."
        )
    return {
        "filters": _filters_option(options),
        "char_embedding_dim": _get(
            options, "char_cnn.embedding.dim", kind=int, minimum=1
        ),
        "activation": activation,
        "num_highway_layers": _get(
            options, "char_cnn.n_highway", 0, kind=int, minimum=0
        ),
        **_lstm_options_to_config(options),
    }


def _lstm_options_to_config(options):
    return {
        "units": _get(options, "lstm.dim", kind=int, minimum=1),
        "projection_dim": _get(
            options, "lstm.projection_dim", kind=int, minimum=1
        ),
        "num_layers": _get(options, "lstm.n_layers", kind=int, minimum=1),
        "cell_clip": _get(options, "lstm.cell_clip", None, float, 0),
        "proj_clip": _get(options, "lstm.proj_clip", None, float, 0),
        "use_skip_connections": bool(
            _get(options, "lstm.use_skip_connections", False)
        ),
    }


def _word_options_to_config(options):
    config = {"token_encoder": "words", **_lstm_options_to_config(options)}
    # The table's size comes from the weight file (as in bilm-tf), which
    # `read_bilm` checks against `n_tokens_vocab` when the options have it.
    if _get(options, "n_tokens_vocab", None) is not None:
        config["vocabulary_size"] = _get(
            options, "n_tokens_vocab", kind=int, minimum=3
        )
    return config


def config_to_options(bilm):
    """The official (inference) options dict of a `BiLM`."""
    if bilm.token_encoder not in TOKEN_ENCODERS:
        raise WeightFileError(
            f"A BiLM with token_encoder={bilm.token_encoder!r} has no "
            "official bilm-tf weight format; save it with model.save "
            "(.keras) instead."
        )
    options = {
        "lstm": {
            "dim": bilm.units,
            "projection_dim": bilm.projection_dim,
            "n_layers": bilm.num_layers,
            "cell_clip": bilm.cell_clip,
            "proj_clip": bilm.proj_clip,
            "use_skip_connections": bilm.use_skip_connections,
        },
    }
    if bilm.token_encoder == "words":
        # No char_cnn section: bilm-tf then reads the table `embedding`.
        options["n_tokens_vocab"] = bilm.vocabulary_size
        return options
    options["char_cnn"] = {
        "embedding": {"dim": bilm.char_embedding_dim},
        "filters": [list(f) for f in bilm.filters],
        "n_highway": bilm.num_highway_layers,
        "activation": bilm.activation,
        "n_characters": NUM_CHARACTER_IDS,
        "max_characters_per_token": bilm.max_characters_per_token,
    }
    return options


def options_file_config(options_file):
    """`options_to_config` of a file; its errors name the file."""
    options = read_options(options_file)
    try:
        return options_to_config(options)
    except WeightFileError as error:
        if isinstance(options_file, dict):
            raise
        raise error.within(options_file) from None
