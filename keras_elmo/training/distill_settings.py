"""A run's `TrainingConfig.distill` from its teacher biLM, and the student
model it trains (the settings and their check:
`elmo_core.settings.distillation`).

A distilled run trains a student biLM (the run's `bilm` size) on a
teacher's layers (`keras_elmo.models.DistilledLanguageModel`). Its config
keeps the teacher as given (for messages, and so that a resume names the
same one) and the teacher's shape (so that the run builds, loads,
evaluates and exports without the teacher); the teacher's weights are
read only when the run trains.
"""

from elmo_core.settings.distillation import DEFAULT_FROM_TEACHER
from elmo_core.settings.distillation import DEFAULT_LAYER_LOSS
from elmo_core.settings.distillation import DEFAULT_LAYER_WEIGHT
from elmo_core.settings.distillation import DEFAULT_LM_WEIGHT
from elmo_core.settings.distillation import DEFAULT_STUDENT_KIND
from elmo_core.settings.distillation import check_distillation


def distill_settings(
    teacher,
    teacher_bilm,
    layer_loss=DEFAULT_LAYER_LOSS,
    lm_weight=DEFAULT_LM_WEIGHT,
    layer_weight=DEFAULT_LAYER_WEIGHT,
    from_teacher=DEFAULT_FROM_TEACHER,
    teacher_cache=None,
    student_kind=DEFAULT_STUDENT_KIND,
):
    """The `TrainingConfig.distill` of a run that learns from the biLM
    `teacher_bilm`, given as `teacher` (str: what the user gave);
    `teacher_cache`: None, or its settings
    (`elmo_core.settings.distillation.teacher_cache_settings`)."""
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
            "teacher_cache": teacher_cache,
            "student_kind": student_kind,
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
