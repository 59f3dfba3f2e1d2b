"""What defines a training run: `TrainingConfig`, saved as the run's
`config.json`, with every training default defined here once (the
command line shows these values in its help). The compiled model it
trains is `keras_elmo.training.compiled_model`.
"""

import dataclasses

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_fraction
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.settings.batches import check_batch_budget
from elmo_core.settings.batches import check_window_length
from elmo_core.settings.distillation import check_distillation
from elmo_core.settings.distillation import check_student_size
from elmo_core.settings.sizes import check_bilm_size
from elmo_core.text.lines import ON_BAD_LINE

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
    """Everything that defines a run (see `keras_elmo.runs.train`).

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
    # Why a time-budgeted run trains its size, where the recipe chose it
    # by the machine's speed (`elmo_core.settings.recipe.BUDGET_SIZES`):
    # a resumed run keeps that size.
    size_choice: str = None

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
        check_batch_budget(self.max_length, self.tokens_per_batch)
        _at_least(self, "window_length", 0)
        if self.window_length:
            check_window_length(self.window_length, self.tokens_per_batch)
        if self.distill is not None:
            self.distill = check_distillation(self.distill, self.window_length)
            check_student_size(self.distill["student_kind"], self.bilm)
        if self.size_choice is not None and not isinstance(
            self.size_choice, str
        ):
            raise KerasElmoError(
                "`size_choice` must be a line of text or None.",
                "size_choice",
                received=self.size_choice,
            )

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


def window_rows(config, replicas=1):
    """The rows of a global batch of windows (None: sentences)."""
    if not config.window_length:
        return None
    return replicas * (config.tokens_per_batch // config.window_length)
