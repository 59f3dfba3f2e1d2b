"""The flags of `keras-elmo train`: data, model size, training and
devices. Their defaults come from the library (the training config, the
sizes, the recipe), read without TensorFlow."""

from keras_elmo_cli.arguments import json_value
from keras_elmo_cli.arguments import non_negative_float
from keras_elmo_cli.arguments import non_negative_int
from keras_elmo_cli.arguments import output_path
from keras_elmo_cli.arguments import positive_float
from keras_elmo_cli.arguments import positive_int
from keras_elmo_cli.arguments import training_size


def add_train_flags(parser):
    """Adds the flags of `keras-elmo train`, in their groups, to `parser`."""
    _add_data_arguments(parser)
    _add_size_arguments(parser)
    _add_training_arguments(parser)
    _add_device_arguments(parser)


def _add_data_arguments(parser):
    from elmo_core.settings.training_config import TrainingConfig
    from elmo_core.text.lines import ON_BAD_LINE

    defaults = TrainingConfig.__dataclass_fields__
    data = parser.add_argument_group("data")
    data.add_argument(
        "--train",
        nargs="+",
        required=True,
        metavar="PATTERN",
        help="training files or quoted globs, e.g. 'data/*.txt'",
    )
    data.add_argument(
        "--validation",
        nargs="+",
        metavar="PATTERN",
        help="held-out files, evaluated once an epoch",
    )
    data.add_argument(
        "--vocab",
        help="the vocabulary to train with (an input: one token a line, "
        "<S> </S> <UNK> first); or --build-vocab",
    )
    data.add_argument(
        "--build-vocab",
        action="store_true",
        help="build the vocabulary from the training files",
    )
    data.add_argument(
        "--min-count",
        type=positive_int,
        help="with --build-vocab: keep the words seen at least this often, "
        "the others are <UNK> (default: "
        f"{_by_size('min_count')})",
    )
    data.add_argument(
        "--max-vocab-size",
        type=positive_int,
        help="with --build-vocab: at most this many tokens",
    )
    data.add_argument(
        "--output", type=output_path, required=True, help="run directory"
    )
    data.add_argument(
        "--tokens-per-batch",
        type=positive_int,
        help="token budget of a batch on one device (default: "
        f"{_by_size('tokens_per_batch')}); a step trains on this many "
        "tokens times the replicas",
    )
    data.add_argument(
        "--max-length",
        type=positive_int,
        default=defaults["max_length"].default,
        help="longer sentences are split evenly (default %(default)s)",
    )
    data.add_argument(
        "--windows",
        dest="window_length",
        type=non_negative_int,
        default=defaults["window_length"].default,
        metavar="N",
        help="train on windows of N tokens cut from continuous text "
        "(sentences laid end to end), each row's LSTM state carried from "
        "one step to the next: bilm-tf's recipe (N=20); a step is "
        "--tokens-per-batch // N rows (default %(default)s: sentences, "
        "each from a zero state)",
    )
    data.add_argument(
        "--on-bad-line",
        choices=ON_BAD_LINE,
        default=defaults["on_bad_line"].default,
        help="a line that is not UTF-8 (in training, validation and "
        "vocabulary files): stop (default) or skip and report it",
    )


def _add_size_arguments(parser):
    from elmo_core.settings.sizes import DEFAULT_SIZE
    from elmo_core.settings.sizes import DEFAULT_TOKEN_ENCODER
    from elmo_core.settings.sizes import SIZE_ARGUMENTS
    from elmo_core.settings.sizes import SIZES
    from elmo_core.settings.sizes import STUDENT_SIZE
    from elmo_core.settings.sizes import TRAINABLE_TOKEN_ENCODERS

    size = parser.add_argument_group("model size")
    size.add_argument(
        "--token-encoder",
        choices=TRAINABLE_TOKEN_ENCODERS,
        help=f"how the biLM reads a token: {DEFAULT_TOKEN_ENCODER} (default, "
        "or the --init-from source's) through the char CNN, or words: one id "
        "of the vocabulary, looked up in a table (bilm-tf's word-input biLM; "
        "the size's char CNN sizes do not apply)",
    )
    size.add_argument(
        "--size",
        "--preset",
        dest="size",
        type=training_size,
        metavar="{" + ",".join(SIZES) + "}",
        help=f"{DEFAULT_SIZE} (train's default): a small CPU-friendly biLM; "
        "mini: half its LSTM compute (with --time-budget and no "
        "size given, train times a step here and trains mini where cpu "
        "would get too few steps); "
        f"{STUDENT_SIZE} (distill's default): a tenth of it, for phones; "
        "tiny-lstm (distill --student-kind lstm's): tiny with plain LSTMs, "
        "which the ONNX and LiteRT exports run as fused kernels; "
        "small, medium, original: the published ELMo sizes (--preset is an "
        "older name of this flag; a pretrained model goes to --init-from)",
    )
    size.add_argument(
        "--options", help="take the size from an official options.json"
    )
    for name, (kind, smallest) in SIZE_ARGUMENTS.items():
        size.add_argument(
            "--" + name.replace("_", "-"),
            type=positive_int if kind is int and smallest else kind,
            help=f"(>= {smallest})",
        )
    size.add_argument(
        "--filters",
        type=json_value,
        help="char CNN filters as JSON, e.g. '[[1,32],[2,64]]'",
    )
    size.add_argument(
        "--no-skip-connections",
        dest="use_skip_connections",
        action="store_const",
        const=False,
        help="no skip connection around the second LSTM layer",
    )


def _by_size(name):
    """A recipe setting's defaults, for --help."""
    from elmo_core.settings.recipe import SMALL_CORPUS
    from elmo_core.settings.recipe import SMALL_CORPUS_TOKENS
    from elmo_core.settings.recipe import large_corpus_setting

    large = large_corpus_setting(name)
    small = SMALL_CORPUS[name]
    if large is None:
        large = "the optimizer's"
    return (
        f"{small} under {SMALL_CORPUS_TOKENS // 10**6}M training tokens, "
        f"else {large}"
    )


def _epochs_by_size():
    from elmo_core.settings.recipe import SMALL_CORPUS_EPOCHS
    from elmo_core.settings.recipe import SMALL_CORPUS_TOKENS
    from elmo_core.settings.recipe import SMALL_CORPUS_TRAINING_TOKENS

    low, high = SMALL_CORPUS_EPOCHS
    return (
        f"under {SMALL_CORPUS_TOKENS // 10**6}M training tokens, enough to "
        f"see about {SMALL_CORPUS_TRAINING_TOKENS // 10**6}M tokens "
        f"({low} to {high}), else 1"
    )


def _duration(text):
    """argparse type of --time-budget: seconds."""
    import argparse

    from elmo_core.errors import KerasElmoError
    from elmo_core.settings.time_budget import parse_duration
    from keras_elmo_cli.messages import command_line_message

    try:
        return parse_duration(text)
    except KerasElmoError as error:
        flags = {
            "time_budget": "--time-budget",
            "steps": "--steps",
            "epochs": "--epochs",
        }
        message = command_line_message(error, flags)
        raise argparse.ArgumentTypeError(message) from None


def _add_training_arguments(parser):
    from elmo_core.settings.recipe import SMALL_CORPUS_TOKENS
    from elmo_core.settings.training_config import DEFAULT_CHECKPOINT_EVERY

    fit = parser.add_argument_group(
        "training",
        "Unset, --optimizer, --learning-rate, --lr-schedule, "
        "--warmup-steps, --dropout, --weight-decay, --tokens-per-batch, "
        "--num-sampled and --epochs follow the recipe for the corpus size "
        "(printed when training starts): under "
        f"{SMALL_CORPUS_TOKENS:,} training tokens the small-corpus recipe, "
        "else bilm-tf's.",
    )
    fit.add_argument(
        "--epochs",
        type=positive_float,
        help=f"passes over the data (default: {_epochs_by_size()})",
    )
    fit.add_argument("--steps", type=positive_int, help="total steps instead")
    fit.add_argument(
        "--time-budget",
        type=_duration,
        metavar="DURATION",
        help="train as long as fits in this wall time (e.g. 15m, 900s, "
        "1.5h), evaluations included: the last step and the learning-rate "
        "decay are planned from the measured speed; instead of --epochs "
        "or --steps",
    )
    _add_optimizer_arguments(fit)
    fit.add_argument(
        "--checkpoint-every",
        type=positive_int,
        default=DEFAULT_CHECKPOINT_EVERY,
        help="steps between checkpoints (default %(default)s)",
    )
    fit.add_argument(
        "--validate-every",
        type=positive_int,
        help="steps between validations (default: one epoch)",
    )
    fit.add_argument(
        "--init-from",
        help="start from weights: a pretrained model name (keras-elmo "
        "presets), a run dir, an export dir, or OPTIONS.json,WEIGHTS.hdf5 "
        "(official; paths or URLs)",
    )


def _add_optimizer_arguments(fit):
    """The loss, the optimizer and its learning rate, into the group
    `fit`."""
    from elmo_core.settings.training_config import LEARNING_RATE_SCHEDULES
    from elmo_core.settings.training_config import OPTIMIZERS
    from elmo_core.settings.training_config import TrainingConfig

    defaults = TrainingConfig.__dataclass_fields__
    fit.add_argument(
        "--num-sampled",
        type=positive_int,
        help="sampled-softmax negatives (default: "
        f"{_by_size('num_sampled')}; capped at V)",
    )
    fit.add_argument(
        "--dropout",
        type=non_negative_float,
        help="dropout on the LSTM inputs and the softmax input (default: "
        f"{_by_size('dropout')})",
    )
    fit.add_argument(
        "--weight-average",
        type=non_negative_float,
        default=defaults["weight_average"].default,
        metavar="MOMENTUM",
        help="momentum of an exponential moving average of the weights, "
        "which becomes the run's weights after the last step (0.999: about "
        "the last 1,000 steps; default %(default)s: none)",
    )
    fit.add_argument(
        "--weight-decay",
        type=non_negative_float,
        metavar="DECAY",
        help="decoupled weight decay (AdamW's): before each update every "
        "weight shrinks by the step's learning rate x DECAY of itself "
        f"(default: {_by_size('weight_decay')})",
    )
    fit.add_argument(
        "--optimizer",
        choices=sorted(OPTIMIZERS),
        help="adagrad (the original recipe) or adam (default: "
        f"{_by_size('optimizer')}); both update only the softmax rows a "
        "batch touches",
    )
    fit.add_argument(
        "--learning-rate",
        type=positive_float,
        help=f"default: {_by_size('learning_rate')}, with --optimizer: "
        + ", ".join(
            f"{rate:g} for {name}" for name, rate in OPTIMIZERS.items()
        ),
    )
    fit.add_argument(
        "--lr-schedule",
        dest="learning_rate_schedule",
        choices=LEARNING_RATE_SCHEDULES,
        help="constant (the original recipe) or linear decay to zero at "
        f"the last step (default: {_by_size('learning_rate_schedule')})",
    )
    fit.add_argument(
        "--warmup-steps",
        type=non_negative_int,
        help="steps of linear learning-rate warm-up (default: "
        f"{_by_size('warmup_steps')})",
    )
    fit.add_argument(
        "--initial-accumulator",
        dest="initial_accumulator_value",
        type=non_negative_float,
        help="Adagrad's initial accumulator (default "
        f"{defaults['initial_accumulator_value'].default})",
    )
    fit.add_argument(
        "--clip-norm",
        type=non_negative_float,
        default=defaults["clip_norm"].default,
        help="global gradient norm clip (default %(default)s; 0 for none)",
    )
    fit.add_argument("--seed", type=int, default=defaults["seed"].default)


def _add_device_arguments(parser):
    from elmo_core.settings.precision import AUTO
    from elmo_core.settings.precision import OFF
    from elmo_core.settings.training_config import DEFAULT_CLUSTER_TIMEOUT
    from elmo_core.settings.training_config import JIT_COMPILE
    from elmo_core.settings.training_config import MIXED_PRECISION
    from elmo_core.settings.training_config import STRATEGIES

    devices = parser.add_argument_group("devices")
    devices.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="auto",
        help="auto (default): multi_worker if TF_CONFIG lists several "
        "tasks, mirrored with several GPUs, else one device; one_device; "
        "mirrored: all GPUs of this machine; multi_worker: the machines of "
        "TF_CONFIG; tpu: not supported yet (refused with the reason)",
    )
    devices.add_argument(
        "--mixed-precision",
        choices=[AUTO, OFF, *(name for name in MIXED_PRECISION if name)],
        default=AUTO,
        help="auto (default): bf16 on a CPU that multiplies bfloat16 "
        "natively (avx512_bf16, amx_bf16), else float32, and a resumed run "
        "keeps its own; off: float32; bf16 or fp16 (with loss scaling). "
        "Weights, LSTM cell state, softmax and loss stay float32",
    )
    devices.add_argument(
        "--jit-compile",
        choices=list(JIT_COMPILE),
        default="auto",
        help="compile the training step with XLA: auto (default) with a "
        "GPU and without a strategy, on, or off",
    )
    devices.add_argument(
        "--cluster-timeout",
        type=positive_float,
        help="multi_worker: seconds a worker waits for the others, at "
        "start-up and in each step, before an error (default "
        f"{DEFAULT_CLUSTER_TIMEOUT:g})",
    )
