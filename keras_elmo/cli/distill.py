"""`keras-elmo distill`: train a small student biLM on a teacher biLM's
layers (a `keras-elmo train` run with a teacher)."""

from keras_elmo.cli.arguments import QUIET_DONE
from keras_elmo.cli.arguments import add_quiet
from keras_elmo.cli.arguments import non_negative_float
from keras_elmo.cli.train import ARGUMENT_FLAGS as TRAIN_FLAGS
from keras_elmo.cli.train_flags import add_train_flags

ARGUMENT_FLAGS = {**TRAIN_FLAGS, "teacher": "--teacher"}


def add_parser(commands):
    from keras_elmo.training.sizes import STUDENT_SIZE

    parser = commands.add_parser(
        "distill",
        help="train a small student biLM on a teacher biLM's layers",
        description="Trains a student biLM (the --size, default "
        f"{STUDENT_SIZE}, or single size flags on it) to reproduce each "
        "layer of a teacher biLM on your text, through a learned map per "
        "layer, with the language-model loss beside it. The student is an "
        "ordinary run: evaluate, export, embed and fine-tune it like any "
        "other. Every train flag works as in `keras-elmo train`; running "
        "the same command again on the same --output resumes.",
    )
    _add_teacher_flags(parser)
    add_train_flags(parser)
    add_quiet(parser, QUIET_DONE)
    parser.set_defaults(run=run, argument_flags=ARGUMENT_FLAGS)
    parser.set_defaults(flag_default=parser.get_default)


def _add_teacher_flags(parser):
    from keras_elmo.models.layer_losses import DEFAULT_LAYER_LOSS
    from keras_elmo.models.layer_losses import DEFAULT_LAYER_WEIGHT
    from keras_elmo.models.layer_losses import DEFAULT_LM_WEIGHT
    from keras_elmo.models.layer_losses import LAYER_LOSSES
    from keras_elmo.training.teacher_start import DEFAULT_FROM_TEACHER
    from keras_elmo.training.teacher_start import FROM_TEACHER

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
        "--layer-weight",
        type=non_negative_float,
        default=DEFAULT_LAYER_WEIGHT,
        help="weight of the layer loss (default %(default)s)",
    )


def run(args):
    import time

    from keras_elmo.cli.train import run as train
    from keras_elmo.errors import KerasElmoError
    from keras_elmo.loading import classify
    from keras_elmo.training.distill_settings import distill_settings
    from keras_elmo.training.sizes import STUDENT_SIZE

    started = time.monotonic()
    teacher = classify(args.teacher, argument="teacher")
    if args.init_from and args.from_teacher == "auto":
        args.from_teacher = "none"  # the student starts from --init-from
    if args.init_from and args.from_teacher != "none":
        raise KerasElmoError(
            "The student starts either from `init_from` or from its "
            "teacher's character layers (`from_teacher`), not both: leave "
            "one out.",
            "from_teacher",
            received=args.from_teacher,
        )
    if args.size is None and args.options is None and not args.init_from:
        args.size = STUDENT_SIZE
    distill = distill_settings(
        args.teacher,
        teacher.read().bilm,
        layer_loss=args.layer_loss,
        lm_weight=args.lm_weight,
        layer_weight=args.layer_weight,
        from_teacher=args.from_teacher,
    )
    train(args, started, teacher=teacher, distill=distill)


def distill(teacher, train, output, **settings):
    """Distils `teacher` into a small student biLM: `keras-elmo distill`
    from Python (the same run, resumable the same way).

    Args:
        teacher: str. The teacher biLM's source: a pretrained model name, a
            URL, a training run or export directory, an ELMoForManyLangs
            model folder or a `.keras` file (see `keras_elmo.loading`).
        train: str or list of str. The training files (globs allowed): one
            whitespace-tokenised sentence a line, `.gz` allowed.
        output: str. The run directory (resumed when it holds the run).
        **settings: the command's other flags, named as their Python
            destinations: `build_vocab=True` or `vocab="vocab.txt"`,
            `validation=["heldout.txt"]`, `time_budget="15m"` (or
            seconds), `steps`, `size="tiny"`, `units`, `projection_dim`,
            `layer_loss`, `lm_weight`, `layer_weight`, `from_teacher`,
            `mixed_precision`, `quiet=True`, ... (`keras-elmo distill
            --help` lists them).

    Returns:
        `output`, the run directory: `keras_elmo.load_bilm(output)` is the
        student.

    Raises:
        KerasElmoError: a setting the command does not take, or a value it
            refuses, named.

    Example:

    >>> import tempfile
    >>> run = keras_elmo.distill(
    ...     "tests/fixtures/bilm-tf/model",  # the teacher
    ...     "tests/fixtures/bilm-tf/train/data.txt",
    ...     tempfile.mkdtemp(),
    ...     vocab="tests/fixtures/bilm-tf/train/vocab.txt",
    ...     steps=2, units=16, projection_dim=8, quiet=True)
    >>> student = keras_elmo.load_bilm(run)
    >>> student.units, student.projection_dim
    (16, 8)
    """
    import os

    from keras_elmo.cli import build_parser
    from keras_elmo.errors import KerasElmoError
    from keras_elmo.training.time_budget import parse_duration

    paths = (str, os.PathLike)
    for name, value in (("teacher", teacher), ("output", output)):
        if not isinstance(value, paths) or not str(value):
            raise KerasElmoError(
                f"`{name}` must be a path or name (a str).",
                name,
                received=value,
            )
    files = [train] if isinstance(train, paths) else train
    if (
        not isinstance(files, (list, tuple))
        or not files
        or not all(isinstance(f, paths) and str(f) for f in files)
    ):
        raise KerasElmoError(
            "`train` must be a file or glob (a str), or a list of them.",
            "train",
            received=train,
        )
    parser = build_parser().commands["distill"]
    required = ["--teacher", str(teacher), "--output", str(output)]
    args = parser.parse_args([*required, "--train", *map(str, files)])
    unknown = sorted(set(settings) - set(vars(args)) - {"run"})
    if unknown:
        raise KerasElmoError(
            f"distill takes no setting {unknown[0]!r}; `keras-elmo distill "
            "--help` lists the flags (their names with _ for -).",
            unknown[0],
        )
    lists = {a.dest for a in parser.actions() if a.nargs in ("+", "*")}
    for name, value in settings.items():
        if name in lists and isinstance(value, (str, os.PathLike)):
            value = [value]  # one file, given alone
        setattr(args, name, value)
    if isinstance(args.time_budget, str):
        args.time_budget = parse_duration(args.time_budget)
    run(args)
    return output
