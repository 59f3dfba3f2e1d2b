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

from elmo_core.errors import KerasElmoError


def start_from_teacher(student, teacher, what, description):
    """Copies the teacher biLM's character embeddings ("embeddings"), and
    its strongest filters of each width ("filters"), into the student
    biLM; "auto" copies the most the two allow. Returns a line on how the
    student starts, or None for "none". `description` names the teacher
    in messages: an explicit choice the two do not allow is refused."""
    if what == "none":
        return None
    most, why, fix = _most_to_copy(student, teacher, description)
    if what == "auto":
        what = most
        if what == "none":
            return f"the student starts fresh (auto: {why})"
    elif _ORDER.index(what) > _ORDER.index(most):
        raise KerasElmoError(
            f"{why[0].upper()}{why[1:]}: {fix}", "from_teacher", received=what
        )
    student.char_cnn.embeddings.assign(
        np.asarray(teacher.char_cnn.embeddings.numpy(), "float32")
    )
    if what == "embeddings":
        return "the student starts from the teacher's character embeddings"
    copied = sum(
        _copy_filters(student.char_cnn, teacher.char_cnn, index)
        for index in range(len(student.filters))
    )
    total = sum(n for _, n in student.filters)
    return (
        "the student starts from the teacher's character embeddings and "
        f"{copied:,} of {total:,} filters"
    )


# Least to most.
_ORDER = ("none", "embeddings", "filters")


def _most_to_copy(student, teacher, description):
    """`(most, why, fix)`: the most the student can start from, of
    `_ORDER`; why not more, and what to do about it (None, None for
    "filters")."""
    leave_out = "Leave out `from_teacher`."
    if teacher.token_encoder != "characters":
        why = (
            f"the teacher ({description}) reads {teacher.token_encoder} "
            f"(token_encoder={teacher.token_encoder!r}), not bilm-tf's "
            "character ids"
        )
        return "none", why, f"it has no character layers. {leave_out}"
    if student.token_encoder != "characters":
        why = f"the student reads {student.token_encoder}"
        return "none", why, f"it has no character layers. {leave_out}"
    theirs, ours = teacher.char_embedding_dim, student.char_embedding_dim
    if theirs != ours:
        why = (
            f"the teacher ({description}) embeds characters in {theirs} "
            f"dimensions and the student in {ours}"
        )
        fix = (
            "its embeddings cannot be copied. Give the student "
            f"`char_embedding_dim` {theirs}, or leave out `from_teacher`."
        )
        return "none", why, fix
    if teacher.activation != student.activation:
        why = (
            f"the teacher's filters ({description}) use "
            f"{teacher.activation} and the student's {student.activation}"
        )
        fix = (
            "copied filters would mean something else. Give the student "
            "the teacher's activation, or `from_teacher` embeddings."
        )
        return "embeddings", why, fix
    return "filters", None, None


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
