"""The compiled model a `TrainingConfig` trains: its learning rate, its
sparse optimizer and the `ELMoLanguageModel` (or, for a distillation,
the `DistilledLanguageModel`)."""

from elmo_core.errors import KerasElmoError
from elmo_core.settings.training_config import MIXED_PRECISION
from elmo_core.settings.training_config import peak_learning_rate
from elmo_core.settings.training_config import window_rows


def learning_rate_schedule(config, total_steps=None):
    """The learning rate of a config: a float, or a `WarmupDecay` (with a
    warm-up or the "linear" schedule, decayed to zero at `total_steps`)."""
    learning_rate = peak_learning_rate(config)
    decay = config.learning_rate_schedule == "linear"
    if not decay and not config.warmup_steps:
        return learning_rate
    from keras_elmo.optimizers.warmup_decay import WarmupDecay

    return WarmupDecay(
        learning_rate,
        warmup_steps=config.warmup_steps,
        total_steps=max(1, total_steps or 1),
        decay=decay,
    )


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
