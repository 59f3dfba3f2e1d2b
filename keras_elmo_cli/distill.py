"""`keras-elmo distill`: train a small student biLM on a teacher biLM's
layers (a `keras-elmo train` run with a teacher)."""

from keras_elmo_cli.arguments import QUIET_DONE
from keras_elmo_cli.arguments import add_quiet
from keras_elmo_cli.arguments import library_arguments
from keras_elmo_cli.arguments import non_negative_float
from keras_elmo_cli.train_flags import add_train_flags


def add_parser(commands):
    from elmo_core.settings.distillation import STUDENT_SIZES

    sizes = ", ".join(
        f"{size} for {kind}" for kind, size in STUDENT_SIZES.items()
    )
    parser = commands.add_parser(
        "distill",
        help="train a small student biLM on a teacher biLM's layers",
        description="Trains a student biLM (the --size, default the "
        f"--student-kind's: {sizes}; or single size flags on it) to "
        "reproduce each "
        "layer of a teacher biLM on your text, through a learned map per "
        "layer, with the language-model loss beside it. The student is an "
        "ordinary run: evaluate, export, embed and fine-tune it like any "
        "other. Every train flag works as in `keras-elmo train`; running "
        "the same command again on the same --output resumes. "
        "keras_elmo.distill(...) from Python.",
    )
    _add_teacher_flags(parser)
    _add_cache_flags(parser)
    add_train_flags(parser)
    add_quiet(parser, QUIET_DONE)
    parser.set_defaults(run=run)


def _add_teacher_flags(parser):
    from elmo_core.settings.distillation import DEFAULT_FROM_TEACHER
    from elmo_core.settings.distillation import DEFAULT_LAYER_LOSS
    from elmo_core.settings.distillation import DEFAULT_LAYER_WEIGHT
    from elmo_core.settings.distillation import DEFAULT_LM_WEIGHT
    from elmo_core.settings.distillation import DEFAULT_STUDENT_KIND
    from elmo_core.settings.distillation import FROM_TEACHER
    from elmo_core.settings.distillation import LAYER_LOSSES
    from elmo_core.settings.distillation import STUDENT_KINDS

    teacher = parser.add_argument_group("teacher")
    teacher.add_argument(
        "--teacher",
        required=True,
        help="the biLM to learn from: a pretrained model name, a URL, a "
        "training run directory, an export directory, "
        "OPTIONS.json,WEIGHTS.hdf5, an ELMoForManyLangs model folder or a "
        ".keras file (as --model of the other commands)",
    )
    teacher.add_argument(
        "--layer-loss",
        choices=LAYER_LOSSES,
        default=DEFAULT_LAYER_LOSS,
        help="how each mapped student layer is compared with its teacher "
        "layer at each position: mse, the mean squared difference "
        "(default); cosine, 1 - the cosine; both, their sum",
    )
    teacher.add_argument(
        "--lm-weight",
        type=non_negative_float,
        default=DEFAULT_LM_WEIGHT,
        help="weight of the language-model loss (default %(default)s; 0: "
        "the teacher's layers alone)",
    )
    teacher.add_argument(
        "--from-teacher",
        choices=FROM_TEACHER,
        default=DEFAULT_FROM_TEACHER,
        help="start the student's character layers from the teacher's: "
        "filters, its character embeddings and for each filter width its "
        "strongest filters; embeddings, the embeddings alone; none; auto "
        "(default), the most the two biLMs allow (none for a teacher that "
        "does not read characters)",
    )
    teacher.add_argument(
        "--student-kind",
        choices=STUDENT_KINDS,
        default=DEFAULT_STUDENT_KIND,
        help="the student's recurrences: elmo (default), ELMo's projected, "
        "clipped LSTM cell; lstm, plain LSTMs, which export-onnx and "
        "export-litert write as the runtimes' fused LSTM kernels (faster "
        "on a device)",
    )
    teacher.add_argument(
        "--layer-weight",
        type=non_negative_float,
        default=DEFAULT_LAYER_WEIGHT,
        help="weight of the layer loss (default %(default)s)",
    )


def _add_cache_flags(parser):
    from elmo_core.settings.distillation import DEFAULT_TEACHER_CACHE_PRECISION
    from elmo_core.settings.distillation import DEFAULT_TEACHER_CACHE_SIZE
    from elmo_core.settings.distillation import TEACHER_CACHE_PRECISIONS

    cache = parser.add_argument_group("teacher cache")
    cache.add_argument(
        "--teacher-cache",
        metavar="DIR",
        help="keep the teacher's layer outputs in DIR (new, empty, or the "
        "cache of an earlier run of the same teacher and text): the first "
        "epoch fills it, the later ones read it instead of running the "
        "teacher (default: none, the teacher runs in every step)",
    )
    cache.add_argument(
        "--teacher-cache-precision",
        choices=TEACHER_CACHE_PRECISIONS,
        help="what the cache keeps the outputs in (default "
        f"{DEFAULT_TEACHER_CACHE_PRECISION})",
    )
    cache.add_argument(
        "--teacher-cache-size",
        metavar="SIZE",
        help="the most the cache may take, e.g. 500M or 20G (default "
        f"{DEFAULT_TEACHER_CACHE_SIZE}); the sentences beyond it go "
        "through the teacher in every epoch",
    )


def run(args):
    """Runs `keras-elmo distill`: `keras_elmo.distill` with the flags (its
    `**settings` are those of `keras_elmo.train`)."""
    import inspect

    import keras_elmo

    train = inspect.signature(keras_elmo.train).parameters
    keras_elmo.distill(**library_arguments(args, keras_elmo.distill, *train))
