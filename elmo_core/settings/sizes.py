"""Training sizes: the published ELMo configurations and a CPU demo size.

A size is a dict of `BiLM` arguments (`BILM_KEYS`; the arithmetic of a
size is `elmo_core.settings.bilm_size`). `bilm_size` turns the
ways a user gives one (a size name, an official options file, single
values, or the size of the weights a run starts from) into one such dict,
checking each value under its own name.
"""

from elmo_core.characters import DEFAULT_FILTERS
from elmo_core.characters import MAX_CHARACTERS_PER_TOKEN
from elmo_core.characters import check_filters
from elmo_core.errors import KerasElmoError
from elmo_core.settings.bilm_size import BILM_KEYS
from elmo_core.settings.bilm_size import DEFAULT_TOKEN_ENCODER
from elmo_core.settings.bilm_size import LSTM_KEYS
from elmo_core.settings.bilm_size import SIZE_ARGUMENTS
from elmo_core.settings.bilm_size import SIZED_TOKEN_ENCODERS
from elmo_core.settings.bilm_size import activation_bytes_per_token
from elmo_core.settings.bilm_size import check_size_value
from elmo_core.settings.bilm_size import memory_bytes
from elmo_core.settings.bilm_size import parameter_count

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
# The published ELMo configurations (SPEC §1), "cpu", a small biLM that
# trains on a laptop CPU in minutes (the main job's biLM), and "tiny", a
# student for `keras-elmo distill` with under a tenth of cpu's biLM
# weights (266,688 against 2,996,432, softmax aside) for phones.
SIZES = {
    "tiny": dict(
        _PUBLISHED,
        filters=[[1, 16], [2, 16], [3, 32], [4, 64], [5, 64]],
        num_highway_layers=1,
        units=96,
        projection_dim=48,
    ),
    # The `lstm` student kind's: `tiny`'s character layers and plain
    # LSTMs (no projection, no clips), which the device runtimes run as
    # their fused LSTM kernels (`elmo_core.settings.distillation`).
    "tiny-lstm": dict(
        _PUBLISHED,
        filters=[[1, 16], [2, 16], [3, 32], [4, 64], [5, 64]],
        num_highway_layers=1,
        units=96,
        projection_dim=96,
        cell_clip=None,
        proj_clip=None,
    ),
    # Half of cpu's character filters and LSTM cells, its projection (the
    # same 256-wide vectors), half its LSTM compute: what a time-budgeted
    # run trains where cpu would get too few steps in the budget
    # (`elmo_core.settings.recipe.BUDGET_SIZES`).
    "mini": dict(
        _PUBLISHED,
        filters=[[1, 16], [2, 16], [3, 32], [4, 64], [5, 128]],
        num_highway_layers=1,
        units=256,
        projection_dim=128,
    ),
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
# The size `keras-elmo distill` trains unless told.
STUDENT_SIZE = "tiny"
# The token encoders a run can train from scratch (`token_encoder`): those
# whose sizes are known.
TRAINABLE_TOKEN_ENCODERS = SIZED_TOKEN_ENCODERS

# Bytes one float32 weight takes in training: the weight, its gradient and
# up to two optimizer slots (Adam's moments).
TRAINING_BYTES_PER_WEIGHT = 16


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
            f"{where} must be a dict of BiLM arguments.", received=size
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
            f"`token_encoder` must be one of {list(TRAINABLE_TOKEN_ENCODERS)}.",
            "token_encoder",
            received=token_encoder,
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
