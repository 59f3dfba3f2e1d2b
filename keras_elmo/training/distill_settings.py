"""What makes a run a distillation: `TrainingConfig.distill`.

A distilled run trains a student biLM (the run's `bilm` size) on a
teacher's layers (`keras_elmo.models.DistilledLanguageModel`). Its config
keeps the teacher as given (for messages, and so that a resume names the
same one) and the teacher's shape (so that the run builds, loads,
evaluates and exports without the teacher); the teacher's weights are
read only when the run trains. TensorFlow-free: `--help` reads the
defaults.
"""

from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import check_choice
from keras_elmo.errors import check_integer
from keras_elmo.errors import check_number
from keras_elmo.layers.limits import MAX_LAYERS
from keras_elmo.models.layer_losses import DEFAULT_LAYER_LOSS
from keras_elmo.models.layer_losses import DEFAULT_LAYER_WEIGHT
from keras_elmo.models.layer_losses import DEFAULT_LM_WEIGHT
from keras_elmo.models.layer_losses import LAYER_LOSSES
from keras_elmo.training.teacher_start import BEFORE_FROM_TEACHER
from keras_elmo.training.teacher_start import DEFAULT_FROM_TEACHER
from keras_elmo.training.teacher_start import FROM_TEACHER

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


def distill_settings(
    teacher,
    teacher_bilm,
    layer_loss=DEFAULT_LAYER_LOSS,
    lm_weight=DEFAULT_LM_WEIGHT,
    layer_weight=DEFAULT_LAYER_WEIGHT,
    from_teacher=DEFAULT_FROM_TEACHER,
):
    """The `TrainingConfig.distill` of a run that learns from the biLM
    `teacher_bilm`, given as `teacher` (str: what the user gave)."""
    return check_distillation(
        {
            "teacher": str(teacher),
            "teacher_digest": weights_digest(teacher_bilm),
            "teacher_layers": teacher_bilm.num_layers + 1,
            "teacher_width": 2 * teacher_bilm.projection_dim,
            "layer_loss": layer_loss,
            "lm_weight": lm_weight,
            "layer_weight": layer_weight,
            "from_teacher": from_teacher,
        }
    )


def weights_digest(bilm):
    """The SHA-256 of a biLM's weights (their float32 values, in order):
    a resumed run refuses a teacher whose weights changed under the same
    name."""
    import hashlib

    import numpy as np

    digest = hashlib.sha256()
    for weight in bilm.weights:
        digest.update(np.ascontiguousarray(weight.numpy(), "float32").data)
    return digest.hexdigest()


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


def student_model(bilm, distill, arguments):
    """The `DistilledLanguageModel` of the student `bilm`, a checked
    `distill`, and the `ELMoLanguageModel` `arguments`."""
    from keras_elmo.models.distilled_language_model import (
        DistilledLanguageModel,
    )

    return DistilledLanguageModel(
        bilm,
        teacher_layers=distill["teacher_layers"],
        teacher_width=distill["teacher_width"],
        layer_loss=distill["layer_loss"],
        lm_weight=distill["lm_weight"],
        layer_weight=distill["layer_weight"],
        **arguments,
    )
