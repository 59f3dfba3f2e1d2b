"""Model sizes: the published ELMo configurations and a CPU demo size.

A size is a dict of `BiLM` arguments (`BILM_KEYS`). `bilm_size` turns the
ways a user gives one (a size name, an official options file, single
values, or the size of the weights a run starts from) into one such dict,
checking each value under its own name.
"""

import inspect
import os

from keras_elmo.characters import DEFAULT_FILTERS
from keras_elmo.characters import MAX_CHARACTERS_PER_TOKEN
from keras_elmo.characters import NUM_CHARACTER_IDS
from keras_elmo.characters import check_filters
from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import check_integer
from keras_elmo.errors import check_number

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
SIZES = {
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
DEFAULT_SIZE = "cpu"
BILM_KEYS = tuple(SIZES[DEFAULT_SIZE])
# The token encoders a run can train from scratch (`token_encoder`), and
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

# Size arguments that may be given one by one: name -> (type, smallest
# value).
SIZE_ARGUMENTS = {
    "units": (int, 1),
    "projection_dim": (int, 1),
    "num_layers": (int, 1),
    "num_highway_layers": (int, 0),
    "char_embedding_dim": (int, 1),
    "cell_clip": (float, 0.0),
    "proj_clip": (float, 0.0),
}


def check_size_value(name, value, where=None):
    """Checks one size value under its own name (`where` names it for
    the user otherwise, e.g. the options key)."""
    where = where or f"`{name}`"
    kind, smallest = SIZE_ARGUMENTS[name]
    if kind is int:
        return check_integer(value, where, minimum=smallest)
    return check_number(value, where, minimum=smallest)


# Bytes one float32 weight takes in training: the weight, its gradient and
# up to two optimizer slots (Adam's moments).
TRAINING_BYTES_PER_WEIGHT = 16
# The bound where the machine's memory cannot be read.
DEFAULT_MEMORY_BYTES = 2**40


def _bilm_defaults(token_encoder):
    """The defaults of `BiLM` and of its token encoder's arguments."""
    from keras_elmo.layers.bilm import BiLM
    from keras_elmo.layers.token_encoders import get_token_encoder

    defaults = {}
    for function in (BiLM.__init__, get_token_encoder(token_encoder).__init__):
        for name, p in inspect.signature(function).parameters.items():
            if p.default is not inspect.Parameter.empty:
                defaults[name] = p.default
    return defaults


def parameter_count(size, vocabulary_size):
    """The weights of a biLM of `size` (`BiLM` arguments; missing ones
    take BiLM's defaults) and of its softmax over `vocabulary_size`."""
    kind = size.get("token_encoder", DEFAULT_TOKEN_ENCODER)
    size = dict(_bilm_defaults(kind), **size)
    units, projection = size["units"], size["projection_dim"]
    projected = projection < units
    recurrent_input = projection if projected else units
    lstm = (projection + recurrent_input + 1) * 4 * units
    lstm += units * projection if projected else 0
    count = 2 * size["num_layers"] * lstm
    count += (projection + 1) * vocabulary_size  # the softmax
    if size.get("token_encoder") == "words":
        return count + vocabulary_size * projection
    dim = size["char_embedding_dim"]
    features = sum(n for _, n in size["filters"])
    count += NUM_CHARACTER_IDS * dim
    count += sum((width * dim + 1) * n for width, n in size["filters"])
    count += size["num_highway_layers"] * 2 * (features + 1) * features
    return count + (features + 1) * projection


def activation_bytes_per_token(size, num_sampled=0):
    """A lower estimate of the float32 activations one token of a batch
    keeps for the backward pass: each LSTM layer's gates, cell, output and
    projection in both directions, the char CNN's feature maps over the
    characters, and the sampled softmax's logits."""
    kind = size.get("token_encoder", DEFAULT_TOKEN_ENCODER)
    size = dict(_bilm_defaults(kind), **size)
    units, projection = size["units"], size["projection_dim"]
    values = 2 * size["num_layers"] * (6 * units + projection)
    values += num_sampled
    if size.get("token_encoder") != "words":
        features = sum(n for _, n in size["filters"])
        values += MAX_CHARACTERS_PER_TOKEN * (
            size["char_embedding_dim"] + features
        )
    return 4 * values


def memory_bytes():
    """The machine's physical memory (or `DEFAULT_MEMORY_BYTES`)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return DEFAULT_MEMORY_BYTES


def check_bilm_size(
    size,
    vocabulary_size,
    where="the biLM size",
    tokens_per_batch=0,
    num_sampled=0,
):
    """Each size value of its kind, and the whole model within memory:
    its weights in training (`TRAINING_BYTES_PER_WEIGHT` each) and the
    activations of a batch of `tokens_per_batch` at most the machine's
    memory, checked before anything is allocated."""
    if not isinstance(size, dict):
        raise KerasElmoError(
            f"{where} must be a dict of BiLM arguments; received "
            f"{type(size).__name__}."
        )
    checked = dict(size)
    for name in SIZE_ARGUMENTS:
        if checked.get(name) is not None:
            checked[name] = check_size_value(name, checked[name])
    if "filters" in checked:
        checked["filters"] = _check_filters(checked["filters"])
    weights = parameter_count(checked, vocabulary_size)
    needed = weights * TRAINING_BYTES_PER_WEIGHT
    available = memory_bytes()
    batch = tokens_per_batch * activation_bytes_per_token(checked, num_sampled)
    if needed <= available < needed + batch:
        raise KerasElmoError(
            f"A batch of {tokens_per_batch:,} tokens (`tokens_per_batch`) "
            f"of {where} keeps about {batch / 2**30:,.1f} GiB of "
            f"activations, beside {needed / 2**30:,.1f} GiB of weights and "
            f"optimizer state; this machine has {available / 2**30:,.1f} "
            "GiB. Give a smaller `tokens_per_batch` (the original recipe "
            "uses 4096 per device).",
            "tokens_per_batch",
        )
    if needed > available:
        sizes = ", ".join(
            f"`{name}` {checked[name]}"
            for name in ("units", "projection_dim", "num_layers")
            if name in checked
        )
        raise KerasElmoError(
            f"{where} ({sizes}, a vocabulary of {vocabulary_size:,}) has "
            f"{weights:,} weights, which need {needed / 2**30:,.1f} GiB "
            f"to train ({TRAINING_BYTES_PER_WEIGHT} bytes each: weight, "
            f"gradient, optimizer state); this machine has "
            f"{available / 2**30:,.1f} GiB. Choose smaller sizes (the "
            "published 'original' has 4096 units, 512 dims, 2 layers).",
            "units",
        )
    return checked


# Bytes of one float32 weight of a biLM that is loaded (not trained).
LOADED_BYTES_PER_WEIGHT = 4
# At most this many LSTM layers (per direction), highway layers or filter
# widths: the published biLMs have 2, 2 and 7; each is a Keras layer
# that takes milliseconds to create, so 256 builds in about a second,
# while a file's 10**6 would take an hour before any memory bound bit.
MAX_LAYERS = 256


def check_bilm_config(config, where):
    """The size arguments of a serialized `BiLM` (a `.keras` file's
    config), each of its kind, their counts within `MAX_LAYERS` and the
    whole within memory (`check_bilm_memory`): checked before the layer
    is even constructed (its constructor creates one layer per count).
    `where` names the source."""
    checked = dict(config)
    for name in SIZE_ARGUMENTS:
        if checked.get(name) is not None:
            checked[name] = check_size_value(
                name, checked[name], f"{where}: `{name}`"
            )
    if checked.get("vocabulary_size") is not None:
        checked["vocabulary_size"] = check_integer(
            checked["vocabulary_size"], f"{where}: `vocabulary_size`", 1
        )
    if checked.get("filters") is not None:
        try:
            checked["filters"] = [
                list(f)
                for f in check_filters(
                    checked["filters"], MAX_CHARACTERS_PER_TOKEN
                )
            ]
        except KerasElmoError as error:
            raise KerasElmoError(f"{where}: {error}") from None
    counts = {
        "num_layers": checked.get("num_layers"),
        "num_highway_layers": checked.get("num_highway_layers"),
        "filters": len(checked.get("filters") or ()),
    }
    for name, count in counts.items():
        if count is not None and count > MAX_LAYERS:
            raise KerasElmoError(
                f"{where}: `{name}` gives {count:,} layers, more than "
                f"{MAX_LAYERS} (published biLMs have 2 to 7). The file is "
                "damaged or not the one meant."
            )
    check_bilm_memory(checked, where)


def check_bilm_memory(config, where):
    """A biLM of `config` (`BiLM` arguments, each already checked, as
    `BiLM(...)` checks them) fits in this machine's memory: its weights
    (`LOADED_BYTES_PER_WEIGHT` each) at most `memory_bytes()`. Checked
    before it is built, so that a file that declares absurd sizes is
    refused instead of filling memory. `where` names the biLM's source.
    """
    kind = config.get("token_encoder", DEFAULT_TOKEN_ENCODER)
    lstm_keys = (*LSTM_KEYS, "token_encoder")
    if kind in TRAINABLE_TOKEN_ENCODERS:
        size = {key: config[key] for key in BILM_KEYS if key in config}
        size["token_encoder"] = kind
    else:  # another token encoder: its LSTMs at least
        size = {key: config[key] for key in lstm_keys if key in config}
        size["token_encoder"] = "words"
    weights = parameter_count(size, 0)
    if size["token_encoder"] == "words":
        table = config.get("vocabulary_size") or 0
        weights += table * config["projection_dim"]
    needed = weights * LOADED_BYTES_PER_WEIGHT
    available = memory_bytes()
    if needed > available:
        sizes = ", ".join(
            f"{key}={config[key]:,}"
            for key in (
                "units",
                "projection_dim",
                "num_layers",
                "vocabulary_size",
            )
            if key in config
        )
        raise KerasElmoError(
            f"{where} declares a biLM of {weights:,} weights ({sizes}), "
            f"which need {needed / 2**30:,.1f} GiB; this machine has "
            f"{available / 2**30:,.1f} GiB. The file is damaged or not "
            "the one meant."
        )


def size_of(config):
    """The size (`BiLM` arguments) of a `BiLM.get_config()`."""
    encoder = config.get("token_encoder", DEFAULT_TOKEN_ENCODER)
    if encoder not in TRAINABLE_TOKEN_ENCODERS:
        raise KerasElmoError(
            f"A biLM with token_encoder={encoder!r} cannot be trained here "
            f"(training trains {', '.join(TRAINABLE_TOKEN_ENCODERS)} "
            "biLMs); `init_from` needs one of those.",
            "init_from",
        )
    if encoder == "words":
        keys = (*LSTM_KEYS, "token_encoder", "vocabulary_size")
    else:
        keys = BILM_KEYS
    return {key: config[key] for key in keys}


def _check_filters(filters):
    return [list(f) for f in check_filters(filters, MAX_CHARACTERS_PER_TOKEN)]


def _check_options_kind(options_config, token_encoder):
    """Options of one kind of biLM with a `token_encoder` of the other
    would silently drop half of the options file."""
    if options_config is None or token_encoder is None:
        return
    kind = options_config.get("token_encoder", DEFAULT_TOKEN_ENCODER)
    if kind != token_encoder:
        raise KerasElmoError(
            f"`options_config` describes a biLM that reads {kind}, but "
            f"`token_encoder` is {token_encoder!r}; the options' "
            f"{'char CNN' if kind == 'characters' else 'word table'} sizes "
            "would be ignored. Leave `token_encoder` out to take the "
            "options' kind, or give options of that kind.",
            "token_encoder",
        )


def bilm_size(
    size=None,
    options_config=None,
    flags=None,
    source_size=None,
    token_encoder=None,
    vocabulary_size=None,
):
    """The `BiLM` arguments of a run.

    Args:
        size: str or None. A training size, a name of `SIZES`.
        options_config: dict or None. `BiLM` arguments read from an official
            options file; they replace the size's.
        flags: dict or None. Single values (`units=...`, `filters=...`,
            `use_skip_connections=...`) applied last.
        source_size: a function or None. With nothing else given, the run
            takes the size of the weights it starts from: this function's
            result (e.g. a biLM source's `bilm_size`), asked only then.
        token_encoder: str or None. `"characters"` or `"words"`; None
            means the source's, the options file's, or `"characters"`.
        vocabulary_size: int or None. The run's vocabulary size, the table
            size of a word-input biLM.

    Returns:
        A dict with the keys `BILM_KEYS`; for a word-input biLM, the keys
        `LSTM_KEYS`, `token_encoder` and `vocabulary_size`.
    """
    size_name = size
    if token_encoder not in (None, *TRAINABLE_TOKEN_ENCODERS):
        raise KerasElmoError(
            "`token_encoder` must be one of "
            f"{list(TRAINABLE_TOKEN_ENCODERS)}. Received: "
            f"token_encoder={token_encoder!r}.",
            "token_encoder",
        )
    flags = dict(flags or {})
    _check_options_kind(options_config, token_encoder)
    if size_name is not None and size_name not in SIZES:
        raise KerasElmoError(
            f"Unknown training size {size_name!r}; expected one of "
            f"{sorted(SIZES)}."
        )
    for name, value in flags.items():
        if name in SIZE_ARGUMENTS:
            flags[name] = check_size_value(name, value)
    if "filters" in flags:
        flags["filters"] = _check_filters(flags["filters"])
    if source_size is not None and not (
        size_name or options_config or flags or token_encoder
    ):
        size = dict(source_size())
    else:
        size = dict(SIZES[size_name or DEFAULT_SIZE])
        size.update(options_config or {})
        size.update(flags)
    encoder = token_encoder or size.get("token_encoder", DEFAULT_TOKEN_ENCODER)
    if encoder == "characters":
        return {key: size[key] for key in BILM_KEYS}
    char_sizes = [f"`{name}`" for name in flags if name not in LSTM_KEYS]
    if char_sizes:
        raise KerasElmoError(
            f"{', '.join(char_sizes)} size(s) the char CNN; a word-input "
            "biLM (`token_encoder` 'words') has none. Leave them out.",
            char_sizes[0].strip("`"),
        )
    table = vocabulary_size or size.get("vocabulary_size")
    if table is None:
        raise KerasElmoError(
            "A word-input biLM needs the size of its vocabulary (its word "
            "table has one row per line)."
        )
    size = {key: size[key] for key in LSTM_KEYS}
    return dict(size, token_encoder=encoder, vocabulary_size=int(table))
