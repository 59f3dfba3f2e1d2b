"""What defines a training run, and the compiled model it trains.

`TrainingConfig` is saved as the run's `config.json`; `build_model` turns it
into a compiled `ELMoLanguageModel`. Every training default is defined
here once (the command line shows these values in its help), so this
module imports Keras and TensorFlow only inside the functions that build
something: `keras-elmo train --help` reads it without TensorFlow.
"""

import dataclasses

from keras_elmo.data.text import ON_BAD_LINE
from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import check_choice
from keras_elmo.errors import check_fraction
from keras_elmo.errors import check_integer
from keras_elmo.errors import check_number
from keras_elmo.training.sizes import check_bilm_size

# Optimizer name -> its default learning rate.
OPTIMIZERS = {"adagrad": 0.2, "adam": 0.001}
LEARNING_RATE_SCHEDULES = ("constant", "linear")
# `mixed_precision` -> Keras dtype policy. The layers keep the LSTM cell
# state, the softmax and the loss in float32; float16 also needs loss
# scaling.
MIXED_PRECISION = {
    None: None,
    "bf16": "mixed_bfloat16",
    "fp16": "mixed_float16",
}
JIT_COMPILE = {"auto": "auto", "on": True, "off": False}
# Steps between checkpoints of the run directory.
DEFAULT_CHECKPOINT_EVERY = 200
# `strategy` names (keras_elmo.training.distribute), and how long a
# multi-worker run waits for its peers.
STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")
DEFAULT_CLUSTER_TIMEOUT = 600.0

# What a config.json value no run writes means, and what to do.
_DAMAGED = (
    "The file is damaged (keras-elmo train wrote it valid): restore it, or "
    "start the run in a new directory."
)


@dataclasses.dataclass
class TrainingConfig:
    """Everything that defines a run (see `keras_elmo.training.train`).

    Saved as the run's `config.json`; a run resumes only with the same
    config. The defaults are the original bilm-tf recipe (Adagrad 0.2,
    initial accumulator 1.0, global-norm clip 10, dropout 0.1). A run with
    `distill` (`keras_elmo.training.distill_settings`) trains its `bilm`
    as the student of a teacher biLM.
    """

    train_files: list
    bilm: dict
    vocabulary_size: int
    validation_files: list = None
    tokens_per_batch: int = 4096
    max_length: int = 100
    window_length: int = 0
    num_sampled: int = 8192
    dropout: float = 0.1
    weight_average: float = 0.0
    weight_decay: float = 0.0
    optimizer: str = "adagrad"
    learning_rate: float = None
    learning_rate_schedule: str = "constant"
    warmup_steps: int = 0
    initial_accumulator_value: float = 1.0
    clip_norm: float = 10.0
    seed: int = 0
    on_bad_line: str = "error"
    mixed_precision: str = None
    distill: dict = None

    def __post_init__(self):
        self.validate()

    def validate(self):
        """Checks every value under its own name."""
        _at_least(self, "vocabulary_size", 3)
        _at_least(self, "tokens_per_batch", 1)
        _at_least(self, "max_length", 1)
        _at_least(self, "num_sampled", 1)
        _at_least(self, "warmup_steps", 0)
        _choice(self, "optimizer", OPTIMIZERS)
        _choice(self, "learning_rate_schedule", LEARNING_RATE_SCHEDULES)
        _choice(self, "on_bad_line", ON_BAD_LINE)
        _choice(self, "mixed_precision", MIXED_PRECISION)
        self.dropout = check_fraction(self.dropout, "dropout")
        self.weight_average = check_momentum(
            self.weight_average, "weight_average"
        )
        if self.learning_rate is not None:
            self.learning_rate = check_number(
                self.learning_rate,
                "learning_rate",
                minimum=0.0,
                above=True,
            )
        self.weight_decay = check_weight_decay(
            self.weight_decay, peak_learning_rate(self)
        )
        for name in ("initial_accumulator_value", "clip_norm"):
            value = check_number(getattr(self, name), name, minimum=0.0)
            setattr(self, name, value)
        # NumPy's and TensorFlow's seeds are 32-bit and not negative.
        self.seed = check_integer(
            self.seed, "seed", minimum=0, maximum=2**31 - 1
        )
        check_bilm_size(
            self.bilm,
            self.vocabulary_size,
            tokens_per_batch=self.tokens_per_batch,
            num_sampled=min(self.num_sampled, self.vocabulary_size),
        )
        from keras_elmo.data.datasets import check_batch_budget
        from keras_elmo.data.windows import check_window_length

        check_batch_budget(self.max_length, self.tokens_per_batch)
        _at_least(self, "window_length", 0)
        if self.window_length:
            check_window_length(self.window_length, self.tokens_per_batch)
        if self.distill is not None:
            from keras_elmo.training.distill_settings import check_distillation

            self.distill = check_distillation(self.distill, self.window_length)

    def to_json(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, values, source="config.json"):
        """A config from its JSON form; unknown or missing keys and wrong
        values are errors naming `source` and the key."""
        if not isinstance(values, dict):
            raise KerasElmoError(
                f"{source} must hold a JSON object; found "
                f"{type(values).__name__}."
            )
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise KerasElmoError(
                f"{source} has unknown key(s) {unknown}; was it written by "
                "keras-elmo train?"
            )
        try:
            return cls(**values)
        except TypeError as error:
            raise KerasElmoError(f"{source}: {error} {_DAMAGED}") from None
        except KerasElmoError as error:
            # The file's mistake, never the caller's argument of that name.
            raise KerasElmoError(
                f"{source}: {error.message} {_DAMAGED}",
                received=error.received,
                expected=error.expected,
            ) from None


def check_momentum(value, name):
    """A moving average's momentum: a number in [0, 1) (0: no average)."""
    value = check_number(value, name, minimum=0.0, maximum=1.0)
    if value == 1.0:
        raise KerasElmoError(
            f"`{name}` must be below 1 (an average that never moves from "
            "the initial weights); 0.999 averages about the last 1,000 "
            "steps, 0 keeps no average.",
            name,
            received=value,
        )
    return value


def check_weight_decay(value, learning_rate):
    """A decoupled weight decay: a number >= 0 (0: none) whose product with
    the peak `learning_rate` (each step's shrink) is below 1."""
    value = check_number(value, "weight_decay", minimum=0.0)
    if learning_rate and value * learning_rate >= 1.0:
        raise KerasElmoError(
            f"`weight_decay` {value:g} times the learning rate "
            f"{learning_rate:g} is {value * learning_rate:g}: each step "
            "would take that share of every weight off it (1 or more zeroes "
            "or flips it). Give a decay below "
            f"{1 / learning_rate:g} (1 / the learning rate).",
            "weight_decay",
            received=value,
        )
    return value


def _at_least(config, name, smallest):
    value = check_integer(getattr(config, name), name, minimum=smallest)
    setattr(config, name, value)


def _choice(config, name, choices):
    check_choice(getattr(config, name), name, choices=choices)


def peak_learning_rate(config):
    """The config's learning rate, or its optimizer's default."""
    return config.learning_rate or OPTIMIZERS[config.optimizer]


def learning_rate_schedule(config, total_steps=None):
    """The learning rate of a config: a float, or a `WarmupDecay` (with a
    warm-up or the "linear" schedule, decayed to zero at `total_steps`)."""
    learning_rate = peak_learning_rate(config)
    decay = config.learning_rate_schedule == "linear"
    if not decay and not config.warmup_steps:
        return learning_rate
    from keras_elmo.training.learning_rate import WarmupDecay

    return WarmupDecay(
        learning_rate,
        warmup_steps=config.warmup_steps,
        total_steps=max(1, total_steps or 1),
        decay=decay,
    )


def window_rows(config, replicas=1):
    """The rows of a global batch of windows (None: sentences)."""
    if not config.window_length:
        return None
    return replicas * (config.tokens_per_batch // config.window_length)


def build_optimizer(config, total_steps=None, learning_rate=None):
    """The sparse optimizer of a config, with `learning_rate` (a rate or a
    schedule) or the config's (`learning_rate_schedule`)."""
    from keras_elmo.optimizers.loss_scale_optimizer import LossScaleOptimizer
    from keras_elmo.optimizers.sparse_adagrad import SparseAdagrad
    from keras_elmo.optimizers.sparse_adam import SparseAdam

    if learning_rate is None:
        learning_rate = learning_rate_schedule(config, total_steps)
    keras_options = dict(
        # The average of the weights, kept by the optimizer after each
        # update (Keras's EMA); the training callback moves it into the
        # model after the last step.
        use_ema=config.weight_average > 0,
        ema_momentum=config.weight_average or 0.99,
        # Decoupled weight decay (Keras's, as in AdamW): before each
        # update every trainable weight, softmax rows a batch does not
        # touch included, shrinks by the step's rate x decay of itself.
        weight_decay=config.weight_decay or None,
    )
    if config.optimizer == "adam":
        optimizer = SparseAdam(
            learning_rate=learning_rate,
            global_clipnorm=config.clip_norm or None,
            **keras_options,
        )
    else:
        optimizer = SparseAdagrad(
            learning_rate=learning_rate,
            initial_accumulator_value=config.initial_accumulator_value,
            global_clipnorm=config.clip_norm or None,
            **keras_options,
        )
    if config.mixed_precision == "fp16":
        optimizer = LossScaleOptimizer(optimizer)
    return optimizer


def build_model(
    config,
    total_steps=None,
    jit_compile="auto",
    learning_rate=None,
    replicas=1,
):
    """A compiled and built `ELMoLanguageModel` for a `TrainingConfig`.

    `total_steps` sets the length of a decaying learning-rate schedule
    (or `learning_rate` gives the rate or schedule itself); `jit_compile`
    is `compile`'s ("auto": XLA with a GPU, not on a CPU). A config of
    windows keeps the state of `replicas` x its rows.
    """
    from keras_elmo.layers.bilm import BiLM
    from keras_elmo.models.elmo_language_model import ELMoLanguageModel

    dtype = MIXED_PRECISION[config.mixed_precision]
    try:
        bilm = BiLM(**config.bilm, dropout=config.dropout, dtype=dtype)
    except TypeError as error:
        raise KerasElmoError(f"The biLM size is not valid: {error}") from None
    arguments = dict(
        vocabulary_size=config.vocabulary_size,
        num_sampled=config.num_sampled,
        dropout=config.dropout,
        seed=config.seed,
        dtype=dtype,
    )
    if config.distill is not None:
        from keras_elmo.training.distill_settings import student_model

        model = student_model(bilm, config.distill, arguments)
    else:
        model = ELMoLanguageModel(
            bilm, window_rows=window_rows(config, replicas), **arguments
        )
    model.compile(
        optimizer=build_optimizer(config, total_steps, learning_rate),
        jit_compile=jit_compile,
    )
    model.build()
    model.optimizer.build(model.trainable_variables)
    return model
