"""`distill`: a small student biLM trained on a teacher biLM's layers
(what `keras-elmo distill` runs): a `train` run with a teacher."""

import inspect
import os
import time

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.files import check_output_directory
from elmo_core.settings.distillation import DEFAULT_FROM_TEACHER
from elmo_core.settings.distillation import DEFAULT_LAYER_LOSS
from elmo_core.settings.distillation import DEFAULT_LAYER_WEIGHT
from elmo_core.settings.distillation import DEFAULT_LM_WEIGHT
from elmo_core.settings.distillation import DEFAULT_STUDENT_KIND
from elmo_core.settings.distillation import STUDENT_KINDS
from elmo_core.settings.distillation import STUDENT_SIZES
from elmo_core.settings.distillation import teacher_cache_settings
from keras_elmo.loading import classify
from keras_elmo.runs.train import run_training
from keras_elmo.runs.train import train as train_run
from keras_elmo.training.distill_settings import distill_settings

# What `train` takes, and the defaults of the settings not given.
_TRAIN_PARAMETERS = inspect.signature(train_run).parameters


def distill(
    teacher,
    train,
    output,
    *,
    layer_loss=DEFAULT_LAYER_LOSS,
    lm_weight=DEFAULT_LM_WEIGHT,
    layer_weight=DEFAULT_LAYER_WEIGHT,
    from_teacher=DEFAULT_FROM_TEACHER,
    teacher_cache=None,
    teacher_cache_precision=None,
    teacher_cache_size=None,
    student_kind=DEFAULT_STUDENT_KIND,
    **settings,
):
    """Distils `teacher` into a small student biLM: a run of
    `keras_elmo.train` (resumable the same way) whose student learns each
    teacher layer through a learned map, beside the language-model loss.

    Args:
        teacher: str. The teacher biLM's source: a pretrained model name, a
            URL, a training run or export directory, an ELMoForManyLangs
            model folder or a `.keras` file (see `keras_elmo.loading`).
        train: str or list of str. The training files (globs allowed): one
            whitespace-tokenised sentence a line, `.gz` allowed.
        output: str. The run directory (resumed when it holds the run).
        layer_loss: str. How each mapped student layer is compared with
            its teacher layer: "mse", "cosine" or "both".
        lm_weight: float. Weight of the language-model loss (0: the
            teacher's layers alone).
        layer_weight: float. Weight of the layer loss.
        from_teacher: str. Start the student's character layers from the
            teacher's: "filters", "embeddings", "none", or "auto", the most
            the two biLMs allow.
        teacher_cache: str or None. A directory (new, empty, or a cache
            of the same teacher and text) to keep the teacher's layer
            outputs in: the first epoch fills it, the later ones read it
            instead of running the teacher. None: no cache.
        teacher_cache_precision: str or None. The cache's: "float16"
            (default) or "float32".
        teacher_cache_size: int, str or None. The most the cache takes:
            bytes, or a size such as "500M" or "20G" (default "10G").
        student_kind: str. The student's recurrences: "elmo", ELMo's own
            cell (projected, clipped; default size "tiny"); "lstm", plain
            LSTMs, no projection, no clips (default size "tiny-lstm"),
            which the ONNX and LiteRT exports run as the runtimes' fused
            LSTM kernels (`keras_elmo.export.fused_lstm`).
        **settings: any other argument of `keras_elmo.train`
            (`build_vocab=True` or `vocab="vocab.txt"`, `time_budget="15m"`,
            `steps`, `size`, `units`, `init_from`, `verbose`, ...); the
            student's size is `size` (default: the kind's) unless sizes
            are given.

    Returns:
        `output`, the run directory: `keras_elmo.load_bilm(output)` is the
        student.

    Raises:
        KerasElmoError: a setting `train` does not take, or a value it
            refuses, named.

    Example:

    >>> import tempfile
    >>> run = keras_elmo.distill(
    ...     "tests/fixtures/bilm-tf/model",  # the teacher
    ...     "tests/fixtures/bilm-tf/train/data.txt",
    ...     tempfile.mkdtemp(),
    ...     vocab="tests/fixtures/bilm-tf/train/vocab.txt",
    ...     steps=2, units=16, projection_dim=8, verbose=0)
    >>> student = keras_elmo.load_bilm(run)
    >>> student.units, student.projection_dim
    (16, 8)
    """
    started = time.monotonic()
    check_choice(student_kind, "student_kind", choices=STUDENT_KINDS)
    values = _train_settings(teacher, train, output, settings)
    source = classify(teacher, argument="teacher")
    from_teacher = _student_start(values, from_teacher, student_kind)
    cache = _cache_settings(
        teacher_cache, teacher_cache_precision, teacher_cache_size, values,
        source,
    )  # fmt: skip
    settings = distill_settings(
        teacher,
        source.read().bilm,
        layer_loss=layer_loss,
        lm_weight=lm_weight,
        layer_weight=layer_weight,
        from_teacher=from_teacher,
        teacher_cache=cache,
        student_kind=student_kind,
    )
    return run_training(values, started, teacher=source, distill=settings)


def _student_start(values, from_teacher, student_kind):
    """What the student starts from (`from_teacher`, "none" where it starts
    from `init_from`); its size, the kind's, where none is given (set in
    `values`)."""
    if values["init_from"] and from_teacher == "auto":
        from_teacher = "none"  # the student starts from `init_from`
    if values["init_from"] and from_teacher != "none":
        raise KerasElmoError(
            "The student starts either from `init_from` or from its "
            "teacher's character layers (`from_teacher`), not both: leave "
            "one out.",
            "from_teacher",
            received=from_teacher,
        )
    if values["size"] is None and values["options"] is None:
        if not values["init_from"]:
            values["size"] = STUDENT_SIZES[student_kind]
    return from_teacher


def _cache_settings(directory, precision, size, values, source):
    """The run's `teacher_cache` settings (None: no cache), its directory
    checked against the run's `values` and teacher `source`."""
    if isinstance(directory, os.PathLike):
        directory = os.fspath(directory)
    cache = teacher_cache_settings(directory, precision, size)
    if cache is not None:
        _check_cache_directory(directory, values, source)
    return cache


def _check_cache_directory(directory, values, source):
    """The teacher cache neither is nor holds the run's directory, nor
    what the run reads."""
    inputs = [*source.inputs(), values["vocab"], values["options"]]
    for files in (values["train"], values["validation"]):
        if isinstance(files, (str, os.PathLike)):
            files = [files]
        if isinstance(files, (list, tuple)):
            inputs += [f for f in files if isinstance(f, (str, os.PathLike))]
    check_output_directory(directory, inputs, "teacher_cache")
    cache = os.path.abspath(directory)
    if os.path.commonpath([cache, os.path.abspath(values["output"])]) == cache:
        raise KerasElmoError(
            "`teacher_cache` is or holds the run's `output`: give the cache "
            "its own directory (one inside the run's is fine).",
            "teacher_cache",
            received=directory,
        )


def _train_settings(teacher, train, output, settings):
    """The arguments of `train` for this run: `settings` checked against
    them, the others their defaults."""
    paths = (str, os.PathLike)
    for name, value in (("teacher", teacher), ("output", output)):
        if not isinstance(value, paths) or not str(value):
            raise KerasElmoError(
                f"`{name}` must be a path or name (a str).",
                name,
                received=value,
            )
    unknown = sorted(set(settings) - set(_TRAIN_PARAMETERS))
    if unknown:
        raise KerasElmoError(
            f"distill takes no setting {unknown[0]!r}; it takes the "
            "arguments of keras_elmo.train.",
            unknown[0],
        )
    values = {
        name: parameter.default
        for name, parameter in _TRAIN_PARAMETERS.items()
        if parameter.default is not inspect.Parameter.empty
    }
    values.update(settings, train=train, output=os.fspath(output))
    return values
