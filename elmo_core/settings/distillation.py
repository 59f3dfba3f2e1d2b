"""What makes a run a distillation: the settings of `TrainingConfig.distill`
(how each student layer is compared with its teacher's, the weights of
the two losses, what the student starts from) and their check. The
arithmetic is `keras_elmo.models.distilled_language_model`, the run
`keras_elmo.training`.
"""

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
)


def check_distillation(values, window_length=0):
    """`values` (a `TrainingConfig.distill`) checked, each under its own
    name; a run of windows cannot distil."""
    if isinstance(values, dict) and "from_teacher" not in values:
        # A run started before the student could start from its teacher.
        values = {**values, "from_teacher": BEFORE_FROM_TEACHER}
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
    for name in ("lm_weight", "layer_weight"):
        checked[name] = check_number(values[name], name, minimum=0.0)
    if checked["lm_weight"] == 0 and checked["layer_weight"] == 0:
        raise KerasElmoError(
            "`lm_weight` and `layer_weight` are both 0: the student would "
            "learn nothing. Give either a positive weight.",
            "layer_weight",
            received=0,
        )
    return checked
