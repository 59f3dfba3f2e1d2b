"""How big a biLM is: its size arguments, its weight count, its memory.

A biLM's *size* is a dict of `BiLM` arguments (`BILM_KEYS`; for a
word-input biLM `LSTM_KEYS`, `token_encoder` and `vocabulary_size`). The
arithmetic here counts its weights and activations from a size alone, so
that a weight file or a `.keras` file that declares absurd sizes is
refused before anything is allocated, and a training run that cannot fit
is refused before it starts (`elmo_core.settings.sizes`).
"""

import os

from elmo_core.characters import DEFAULT_FILTERS
from elmo_core.characters import MAX_CHARACTERS_PER_TOKEN
from elmo_core.characters import NUM_CHARACTER_IDS
from elmo_core.characters import check_filters
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.settings.limits import MAX_LAYERS

# The size arguments of a character-input biLM, in the published order.
BILM_KEYS = (
    "filters",
    "char_embedding_dim",
    "activation",
    "use_token_projection",
    "cell_clip",
    "proj_clip",
    "use_skip_connections",
    "num_layers",
    "num_highway_layers",
    "units",
    "projection_dim",
)
# The token encoders whose size arguments are known here (a run trains
# these), and BiLM's own default.
SIZED_TOKEN_ENCODERS = ("characters", "words")
DEFAULT_TOKEN_ENCODER = "characters"
# The size keys of a word-input biLM: the LSTMs' (its table is one row per
# vocabulary line).
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
    """Checks one size value: the argument `name`, or a value of a file
    that `where` names (e.g. the options key)."""
    argument = None if where else name
    kind, smallest = SIZE_ARGUMENTS[name]
    check = check_integer if kind is int else check_number
    return check(value, argument, where=where, minimum=smallest)


# The value of each size argument that a size leaves out: `BiLM`'s defaults
# (the published original ELMo's; tests/test_bilm.py checks that they are
# those of `BiLM` and its character encoder).
BILM_DEFAULTS = dict(
    units=4096,
    projection_dim=512,
    num_layers=2,
    cell_clip=3.0,
    proj_clip=3.0,
    use_skip_connections=True,
    filters=DEFAULT_FILTERS,
    char_embedding_dim=16,
    activation="relu",
    num_highway_layers=2,
    use_token_projection=None,
)
# The bound where the machine's memory cannot be read.
DEFAULT_MEMORY_BYTES = 2**40


def parameter_count(size, vocabulary_size):
    """The weights of a biLM of `size` (`BiLM` arguments; missing ones
    take BiLM's defaults) and of its softmax over `vocabulary_size`."""
    size = dict(BILM_DEFAULTS, **size)
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
    size = dict(BILM_DEFAULTS, **size)
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


# Bytes of one float32 weight of a biLM that is loaded (not trained).
LOADED_BYTES_PER_WEIGHT = 4


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
            checked["vocabulary_size"],
            where=f"{where}: `vocabulary_size`",
            minimum=1,
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
            raise error.within(where, KerasElmoError) from None
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
    if kind in SIZED_TOKEN_ENCODERS:
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
