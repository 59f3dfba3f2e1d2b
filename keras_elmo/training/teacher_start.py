"""A distilled student that starts from its teacher's character layers
(`distill --from-teacher`).

The student's char CNN is narrower than its teacher's, but it reads the
same character ids: its character embeddings can be the teacher's as they
are, and for each filter width the student has, its filters can be the
teacher's filters of that width that matter most (the largest weights).
The highway layers and everything above them are of the student's own
width and start fresh.
"""

import numpy as np

from keras_elmo.errors import KerasElmoError

FROM_TEACHER = ("none", "embeddings", "filters")
DEFAULT_FROM_TEACHER = "none"


def start_from_teacher(student, teacher, what, description):
    """Copies the teacher biLM's character embeddings (`what` is
    "embeddings"), and its strongest filters of each width (`what` is
    "filters"), into the student biLM; returns what was copied, in words.
    `description` names the teacher in errors."""
    if what == "none":
        return None
    _check_same_characters(student, teacher, description)
    student.char_cnn.embeddings.assign(
        np.asarray(teacher.char_cnn.embeddings.numpy(), "float32")
    )
    if what == "embeddings":
        return "character embeddings"
    _check_same_activation(student, teacher, description)
    copied = sum(
        _copy_filters(student.char_cnn, teacher.char_cnn, index)
        for index in range(len(student.filters))
    )
    total = sum(n for _, n in student.filters)
    return f"character embeddings and {copied:,} of {total:,} filters"


def _check_same_characters(student, teacher, description):
    if teacher.token_encoder != "characters":
        raise KerasElmoError(
            f"The teacher ({description}) reads "
            f"{teacher.token_encoder} (token_encoder="
            f"{teacher.token_encoder!r}), not bilm-tf's character ids: it "
            "has no character layers to start the student from. Leave out "
            "`from_teacher`.",
            "from_teacher",
        )
    if student.token_encoder != "characters":
        raise KerasElmoError(
            "This student reads "
            f"{student.token_encoder}: it has no character layers to start "
            "from the teacher's. Leave out `from_teacher`.",
            "from_teacher",
        )
    theirs = teacher.char_embedding_dim
    ours = student.char_embedding_dim
    if theirs != ours:
        raise KerasElmoError(
            f"The teacher ({description}) embeds characters in {theirs} "
            f"dimensions and this student in {ours}: its embeddings cannot "
            f"be copied. Give the student char_embedding_dim {theirs} "
            "(in `options`), or leave out `from_teacher`.",
            "from_teacher",
        )


def _check_same_activation(student, teacher, description):
    if teacher.activation != student.activation:
        raise KerasElmoError(
            f"The teacher's filters ({description}) use {teacher.activation}"
            f" and this student's {student.activation}: copied filters "
            "would mean something else. Give the student the teacher's "
            "activation, or `from_teacher` embeddings.",
            "from_teacher",
        )


def _copy_filters(student_cnn, teacher_cnn, index):
    """Copies into the student's filters of one width the teacher's filters
    of that width with the largest weights (as many as both have; the
    rest keep their fresh start); returns how many were copied."""
    width, count = student_cnn.filters[index]
    widths = [w for w, _ in teacher_cnn.filters]
    if width not in widths:
        return 0
    source = widths.index(width)
    kernel = np.asarray(teacher_cnn.kernels[source].numpy(), "float32")
    bias = np.asarray(teacher_cnn.biases[source].numpy(), "float32")
    norms = np.sqrt(np.square(kernel).sum(axis=(0, 1)))
    chosen = np.sort(np.argsort(-norms, kind="stable")[:count])
    ours = student_cnn.kernels[index]
    new_kernel = np.array(ours.numpy(), "float32")
    new_bias = np.array(student_cnn.biases[index].numpy(), "float32")
    new_kernel[:, :, : len(chosen)] = kernel[:, :, chosen]
    new_bias[: len(chosen)] = bias[chosen]
    ours.assign(new_kernel)
    student_cnn.biases[index].assign(new_bias)
    return len(chosen)
