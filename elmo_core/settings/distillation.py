"""What makes a run a distillation: the settings of `TrainingConfig.distill`
(how each student layer is compared with its teacher's, the weights of
the two losses, what the student starts from, its kind, the teacher
cache) and their check. The arithmetic is
`keras_elmo.models.distilled_language_model`, the run
`keras_elmo.training` (the cache: `keras_elmo.training.teacher_cache`).
"""

import re

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.settings.limits import MAX_LAYERS

# Per position of `<S> tokens </S>`: "mse", the mean squared difference
# over the teacher layer's width; "cosine", 1 - the cosine of the two
# vectors (their direction only); "both", the sum of the two.
LAYER_LOSSES = ("mse", "cosine", "both")
DEFAULT_LAYER_LOSS = "mse"
# The weights of the two losses of a distilled student: the language
# model's and the layers'.
DEFAULT_LM_WEIGHT = 1.0
DEFAULT_LAYER_WEIGHT = 1.0
FROM_TEACHER = ("auto", "filters", "embeddings", "none")
DEFAULT_FROM_TEACHER = "auto"
# What a run distilled before the setting existed did.
BEFORE_FROM_TEACHER = "none"

# The teacher cache (`distill(teacher_cache=...)`): the precision the
# teacher's layer outputs are kept in on disk, and the most bytes the
# cache may take (`teacher_cache_size`; binary units: 10G is 10 GiB).
TEACHER_CACHE_PRECISIONS = ("float16", "float32")
DEFAULT_TEACHER_CACHE_PRECISION = "float16"
DEFAULT_TEACHER_CACHE_SIZE = "10G"
_SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
# A size limit beyond this (a petabyte) is a typo.
MAX_TEACHER_CACHE_SIZE = 2**50

# The kinds of student: "elmo", ELMo's own cell (an LSTM with a projection
# and clipped cell and output); "lstm", plain LSTMs (no projection, no
# clips), which the device runtimes run as their fused LSTM kernels
# (`keras_elmo.export.fused_lstm`). Each kind's default size.
STUDENT_SIZES = {"elmo": "tiny", "lstm": "tiny-lstm"}
STUDENT_KINDS = tuple(STUDENT_SIZES)
DEFAULT_STUDENT_KIND = "elmo"
# What a run distilled before the kinds existed trained.
BEFORE_STUDENT_KIND = "elmo"

# The widest teacher layer a config may name (the original ELMo's is
# 1,024: 2 x 512).
MAX_TEACHER_WIDTH = 2**16
DISTILL_KEYS = (
    "teacher",
    "teacher_digest",
    "teacher_layers",
    "teacher_width",
    "layer_loss",
    "lm_weight",
    "layer_weight",
    "from_teacher",
    "teacher_cache",
    "student_kind",
)
TEACHER_CACHE_KEYS = ("directory", "precision", "size_limit")
# The keys a run of an earlier release may lack, and what it did.
_BEFORE = {
    "from_teacher": BEFORE_FROM_TEACHER,
    "teacher_cache": None,
    "student_kind": BEFORE_STUDENT_KIND,
}


def check_distillation(values, window_length=0):
    """`values` (a `TrainingConfig.distill`) checked, each under its own
    name; a run of windows cannot distil."""
    if isinstance(values, dict):
        # A run started before these settings existed.
        values = {**_BEFORE, **values}
    if not isinstance(values, dict) or set(values) != set(DISTILL_KEYS):
        raise KerasElmoError(
            f"`distill` must be a dict with the keys {list(DISTILL_KEYS)}.",
            "distill",
            received=values,
        )
    if window_length:
        raise KerasElmoError(
            "A distilled student trains on sentences, as its teacher reads "
            "them: windows of continuous text are not offered. Leave "
            "`window_length` at 0.",
            "window_length",
            received=window_length,
        )
    checked = dict(values)
    if not isinstance(checked["teacher"], str) or not checked["teacher"]:
        raise KerasElmoError(
            "`teacher` must name the teacher biLM's source.",
            "teacher",
            received=checked["teacher"],
        )
    digest = checked["teacher_digest"]
    if not (
        isinstance(digest, str)
        and len(digest) == 64
        and all(c in "0123456789abcdef" for c in digest)
    ):
        raise KerasElmoError(
            "`teacher_digest` must be the SHA-256 of the teacher's weights "
            "(64 hexadecimal digits).",
            "teacher_digest",
            received=digest,
        )
    checked["teacher_layers"] = check_integer(
        values["teacher_layers"], "teacher_layers", minimum=1,
        maximum=MAX_LAYERS + 1,
    )  # fmt: skip
    checked["teacher_width"] = check_integer(
        values["teacher_width"], "teacher_width", minimum=2,
        maximum=MAX_TEACHER_WIDTH,
    )  # fmt: skip
    check_choice(values["layer_loss"], "layer_loss", choices=LAYER_LOSSES)
    check_choice(values["from_teacher"], "from_teacher", choices=FROM_TEACHER)
    check_choice(values["student_kind"], "student_kind", choices=STUDENT_KINDS)
    for name in ("lm_weight", "layer_weight"):
        checked[name] = check_number(values[name], name, minimum=0.0)
    checked["teacher_cache"] = _check_saved_cache(values["teacher_cache"])
    if checked["lm_weight"] == 0 and checked["layer_weight"] == 0:
        raise KerasElmoError(
            "`lm_weight` and `layer_weight` are both 0: the student would "
            "learn nothing. Give either a positive weight.",
            "layer_weight",
            received=0,
        )
    return checked


def teacher_cache_settings(directory, precision=None, size=None):
    """The `teacher_cache` of `TrainingConfig.distill`: None (no cache:
    `directory` None, and neither of the others given), or the cache's
    `directory`, the `precision` its outputs are kept in and its
    `size_limit` in bytes (`size`: bytes, or a size such as "500M" or
    "20G"), the defaults where None."""
    if directory is None:
        for name, value in (
            ("teacher_cache_precision", precision),
            ("teacher_cache_size", size),
        ):
            if value is not None:
                raise KerasElmoError(
                    f"`{name}` sets the teacher cache, and there is none: "
                    "give `teacher_cache` (a directory), or leave it out.",
                    name,
                    received=value,
                )
        return None
    if not isinstance(directory, str) or not directory:
        raise KerasElmoError(
            "`teacher_cache` must be a directory path (a str).",
            "teacher_cache",
            received=directory,
        )
    if precision is None:
        precision = DEFAULT_TEACHER_CACHE_PRECISION
    check_choice(
        precision, "teacher_cache_precision", choices=TEACHER_CACHE_PRECISIONS
    )
    return {
        "directory": directory,
        "precision": precision,
        "size_limit": parse_cache_size(
            DEFAULT_TEACHER_CACHE_SIZE if size is None else size
        ),
    }


def parse_cache_size(value, argument="teacher_cache_size"):
    """Bytes of a size: an integer of bytes, or text such as "2048",
    "500M", "20G" or "1.5TiB" (K, M, G, T: powers of 1,024)."""
    expected = "a size such as 500M or 20G (bytes, or K, M, G, T)"
    if isinstance(value, bool):
        match = None
    elif isinstance(value, int):
        match = re.fullmatch(r"([0-9]+)()", str(value))
    else:
        text = value if isinstance(value, str) else ""
        match = re.fullmatch(
            r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(?:i?B)?\s*", text, re.I
        )
    size = None
    if match:
        size = int(float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()])
    if size is None or not 1 <= size <= MAX_TEACHER_CACHE_SIZE:
        raise KerasElmoError(
            f"`{argument}` must be {expected}, at least 1 byte and at most "
            "a PiB.",
            argument,
            received=value,
            expected=expected,
        )
    return size


def _check_saved_cache(values):
    """A config's `teacher_cache`: None, or its settings checked."""
    if values is None:
        return None
    if not isinstance(values, dict) or set(values) != set(TEACHER_CACHE_KEYS):
        raise KerasElmoError(
            "`teacher_cache` must be None or a dict with the keys "
            f"{list(TEACHER_CACHE_KEYS)}.",
            "teacher_cache",
            received=values,
        )
    checked = teacher_cache_settings(
        values["directory"], values["precision"], values["size_limit"]
    )
    if checked["size_limit"] != values["size_limit"]:
        raise KerasElmoError(
            "`teacher_cache` `size_limit` must be a number of bytes.",
            "teacher_cache",
            received=values["size_limit"],
        )
    return checked


def is_plain_lstm(size):
    """Whether the LSTMs of a biLM size (`BiLM` arguments) are plain: no
    projection (`projection_dim` equal to `units`), no clips."""
    return (
        size.get("cell_clip") is None
        and size.get("proj_clip") is None
        and size.get("units") == size.get("projection_dim")
    )


def check_student_size(kind, size):
    """Refuses a student size (`BiLM` arguments) that is not of `kind`,
    naming the size argument that makes it so."""
    if kind != "lstm" or is_plain_lstm(size):
        return
    for name in ("cell_clip", "proj_clip"):
        if size.get(name) is not None:
            raise KerasElmoError(
                "A student of kind 'lstm' has plain LSTMs, without clips, "
                "which the device runtimes' fused kernels run; its size has "
                f"`{name}` {size[name]}. Leave out the size and the clip "
                f"flags (the kind's size is {STUDENT_SIZES['lstm']!r}) or give "
                "`student_kind` 'elmo'.",
                name,
                received=size[name],
            )
    raise KerasElmoError(
        "A student of kind 'lstm' has plain LSTMs, without a projection: "
        f"`projection_dim` must equal `units` ({size.get('units')}). Give "
        "both the same value, or `student_kind` 'elmo'.",
        "projection_dim",
        received=size.get("projection_dim"),
    )
