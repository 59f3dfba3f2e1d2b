"""`DistilledLanguageModel`: a student biLM that learns from a teacher's
layers (and, optionally, from the language-model loss)."""

import keras
from keras import ops

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.settings.distillation import DEFAULT_LAYER_LOSS
from elmo_core.settings.distillation import DEFAULT_LAYER_WEIGHT
from elmo_core.settings.distillation import DEFAULT_LM_WEIGHT
from elmo_core.settings.distillation import LAYER_LOSSES
from keras_elmo.models.elmo_language_model import ELMoLanguageModel

# The input key of a teacher that does not read the student's inputs (a
# word-input or ELMoForManyLangs teacher): `keras_elmo.data.lm_dataset`
# adds it (`extra_inputs`).
TEACHER_INPUTS = "teacher_inputs"
# The input key of the teacher's layer outputs where a teacher cache gives
# them (`keras_elmo.training.cached_teacher`): `(batch, time + 2, layers,
# width)`, the layers `matched_teacher_layers`; the step then does not run
# the teacher.
TEACHER_OUTPUTS = "teacher_outputs"


def matched_layers(student_layers, teacher_layers):
    """The teacher layer each student layer learns from: layer `k` of
    `student_layers` (token layer included) is matched to the teacher
    layer at the same relative depth, `round(k * (T - 1) / (S - 1))`, so
    that the token layers match and the top layers match."""
    if student_layers == 1:
        return [0]
    scale = (teacher_layers - 1) / (student_layers - 1)
    return [int(k * scale + 0.5) for k in range(student_layers)]


class _Frozen:
    """Holds the teacher out of Keras's tracking: its weights are neither
    trained nor saved with the student's checkpoints."""

    def __init__(self, bilm, inputs_key, table=None):
        self.bilm = bilm
        self.inputs_key = inputs_key
        self.table = table


@keras.saving.register_keras_serializable(package="keras_elmo")
class DistilledLanguageModel(ELMoLanguageModel):
    """An `ELMoLanguageModel` (the student) trained to reproduce a
    teacher biLM's layers.

    Each student layer `k` (the token layer, then each LSTM layer) is
    mapped by its own learned dense map to the width of the teacher layer
    `matched_layers` gives, and compared with it at every position of
    `<S> tokens </S>` (padding left out), by `layer_loss`. The loss is
    `lm_weight` x the language-model loss of `ELMoLanguageModel` plus
    `layer_weight` x the mean over layers and positions of the layer loss.
    The teacher (`attach_teacher`) runs in inference mode (no dropout)
    inside the training step, its outputs out of the gradient; it is not
    part of the model's weights or checkpoints, so a trained student loads,
    evaluates and exports without it (`.bilm` is the student).

    The layer loss is computed in training only (`fit`); `evaluate` gives
    the language model's perplexities, as for any `ELMoLanguageModel`.

    Args:
        bilm, vocabulary_size, num_sampled, dropout, seed: as
            `ELMoLanguageModel` (the student and its softmax).
        teacher_layers: int. The teacher's layers, token layer included
            (its `num_layers + 1`).
        teacher_width: int. The width of each teacher layer (its
            `2 * projection_dim`).
        layer_loss: str. One of `LAYER_LOSSES`. Defaults to `"mse"`.
        lm_weight: float. Weight of the language-model loss (0: the layers
            alone; the softmax then stays as initialised). Defaults to
            `1.0`.
        layer_weight: float. Weight of the layer loss. Defaults to `1.0`.

    Example:

    >>> teacher = keras_elmo.load_bilm("tests/fixtures/bilm-tf/model")
    >>> student = keras_elmo.layers.BiLM(
    ...     filters=[[1, 4], [2, 8]], char_embedding_dim=4,
    ...     num_highway_layers=1, units=16, projection_dim=8)
    >>> model = keras_elmo.models.DistilledLanguageModel(
    ...     student, vocabulary_size=5, teacher_layers=3, teacher_width=32)
    >>> model.compile(optimizer=keras_elmo.optimizers.SparseAdagrad())
    >>> model.build()
    >>> model.attach_teacher(teacher)
    >>> x = {"character_ids": keras_elmo.batch_to_ids([["a", "b"]])}
    >>> y = np.array([[[3, 4, 1, 0], [0, 0, 3, 4]]])  # <S> a b </S>
    >>> w = np.array([[[1, 1, 1, 0], [0, 1, 1, 1]]], "float32")
    >>> history = model.fit(x, y, sample_weight=w, verbose=0)
    >>> sorted(history.history)  # doctest: +NORMALIZE_WHITESPACE
    ['backward_perplexity', 'forward_perplexity', 'layer_loss', 'loss',
     'perplexity']
    """

    def __init__(
        self,
        bilm,
        vocabulary_size,
        teacher_layers,
        teacher_width,
        layer_loss=DEFAULT_LAYER_LOSS,
        lm_weight=DEFAULT_LM_WEIGHT,
        layer_weight=DEFAULT_LAYER_WEIGHT,
        **kwargs,
    ):
        if kwargs.get("window_rows") is not None:
            raise KerasElmoError(
                "A distilled student trains on sentences, as its teacher "
                "reads them; windows of continuous text are not offered.",
                "window_rows",
            )
        super().__init__(bilm, vocabulary_size, **kwargs)
        self.teacher_layers = check_integer(
            teacher_layers, "teacher_layers", minimum=1
        )
        self.teacher_width = check_integer(
            teacher_width, "teacher_width", minimum=1
        )
        check_choice(layer_loss, "layer_loss", choices=LAYER_LOSSES)
        self.layer_loss = layer_loss
        self.lm_weight = check_number(lm_weight, "lm_weight", minimum=0.0)
        self.layer_weight = check_number(
            layer_weight, "layer_weight", minimum=0.0
        )
        self.matched = matched_layers(
            self.bilm.num_layers + 1, self.teacher_layers
        )
        # float32 whatever the policy: the loss is float32.
        self.layer_maps = [
            keras.layers.Dense(
                self.teacher_width, dtype="float32", name=f"layer_map_{k}"
            )
            for k in range(len(self.matched))
        ]
        self.distill_loss = keras.metrics.Mean(name="layer_loss")
        self._teacher = None

    def build(self, input_shape=None):
        super().build(input_shape)
        width = 2 * self.bilm.projection_dim
        for layer_map in self.layer_maps:
            layer_map.build((None, None, width))

    # === The teacher ===

    def attach_teacher(self, teacher, vocabulary=None):
        """Sets the teacher: a built `BiLM` whose layers are
        `teacher_layers` x `teacher_width` wide (checked), kept frozen;
        `vocabulary`: a word-input teacher's (`elmo_core.ids.Vocabulary`,
        its table's rows)."""
        check_teacher_fits(teacher, self.teacher_layers, self.teacher_width)
        if teacher.encoder.needs_vocabulary and vocabulary is None:
            raise KerasElmoError(
                "The teacher reads word ids: its vocabulary must come with "
                "it (a vocab.txt beside its weights, or in its run).",
                "teacher",
            )
        teacher.trainable = False
        # A word-input teacher reads the ids of its own vocabulary, which
        # need not be the student's.
        words = teacher.encoder.needs_vocabulary
        reads_own = words or teacher.token_encoder != self.bilm.token_encoder
        table = None
        if words:
            from keras_elmo.data.word_ids import lookup_table

            table = lookup_table(vocabulary)
        key = TEACHER_INPUTS if reads_own else None
        self._teacher = _Frozen(teacher, key, table)

    @property
    def teacher(self):
        """The attached teacher `BiLM`, or None."""
        return None if self._teacher is None else self._teacher.bilm

    @property
    def teacher_token_inputs(self):
        """None, or for a teacher that reads tokens another way than the
        student, the function that gives its inputs (`TEACHER_INPUTS`) of
        a batch's `(batch, time)` `tf.string` tokens (`lm_dataset`'s
        `extra_inputs`)."""
        frozen = self._teacher
        if frozen is None or frozen.inputs_key is None:
            return None

        def inputs(tokens):
            encoder = frozen.bilm.encoder
            ids = encoder.tokens_to_inputs(tokens, frozen.table)
            return {frozen.inputs_key: ids}

        return inputs

    @property
    def matched_teacher_layers(self):
        """The teacher layers the student learns from, sorted, each once."""
        return sorted(set(self.matched))

    def teacher_outputs(self, x):
        """The teacher's layer outputs of the batch `x`, float32, at the
        positions of `<S> tokens </S>`, out of the gradient: the teacher's
        forward pass, or where `x` carries them (`TEACHER_OUTPUTS`) those,
        None for a layer the student does not learn from."""
        if TEACHER_OUTPUTS in x:
            given = ops.cast(x[TEACHER_OUTPUTS], "float32")
            outputs = [None] * self.teacher_layers
            for k, layer in enumerate(self.matched_teacher_layers):
                outputs[layer] = given[:, :, k]
            return outputs
        key = self._teacher.inputs_key
        inputs = x[key] if key else x
        outputs = self._teacher.bilm(
            inputs, training=False, keep_boundaries=True
        )["layer_outputs"]
        return [ops.stop_gradient(ops.cast(y, "float32")) for y in outputs]

    # === Calls and losses ===

    def call(self, inputs, training=None):
        outputs = self.bilm(inputs, training=training, keep_boundaries=True)
        layers = outputs["layer_outputs"]
        dim = self.bilm.projection_dim
        return {
            "forward": layers[-1][..., :dim],
            "backward": layers[-1][..., dim:],
            "mask": outputs["mask"],
            "layers": layers,
        }

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        """`lm_weight` x the language-model loss + `layer_weight` x the
        layer loss (in training, with a teacher)."""
        import tensorflow as tf

        loss = super().compute_loss(x, y, y_pred, sample_weight, training)
        if not training:
            return loss
        if self._teacher is None:
            raise KerasElmoError(
                "This DistilledLanguageModel has no teacher: call "
                "attach_teacher(bilm) before training it."
            )
        total, count = self._layer_loss_sums(x, y_pred, sample_weight)
        self.distill_loss.update_state(total / ops.maximum(count, 1.0))
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            # As the language-model loss: the replicas' shares of the
            # global batch's mean (see ELMoLanguageModel.compute_loss).
            count = ops.stop_gradient(context.all_reduce("sum", count))
        layer_loss = total / ops.maximum(count, 1.0)
        return self.lm_weight * loss + self.layer_weight * layer_loss

    def _layer_loss_sums(self, x, y_pred, sample_weight):
        """The layer loss summed over the batch's positions (averaged over
        layers), and the number of positions."""
        teacher = self.teacher_outputs(x)
        # The positions of <S> tokens </S>: those with a target in either
        # direction (none in the empty rows that pad a replica's share).
        mask = ops.cast(ops.any(sample_weight > 0, axis=1), "float32")
        total = 0.0
        for k, student in enumerate(y_pred["layers"]):
            mapped = self.layer_maps[k](ops.cast(student, "float32"))
            distance = layer_distance(
                mapped, teacher[self.matched[k]], self.layer_loss
            )
            total += ops.sum(distance * mask)
        return total / len(self.layer_maps), ops.sum(mask)

    def get_config(self):
        config = super().get_config()
        del config["window_rows"]
        config.update(
            {
                "teacher_layers": self.teacher_layers,
                "teacher_width": self.teacher_width,
                "layer_loss": self.layer_loss,
                "lm_weight": self.lm_weight,
                "layer_weight": self.layer_weight,
            }
        )
        return config


def layer_distance(mapped, target, layer_loss):
    """Per-position distance `(batch, time)` of two `(batch, time, width)`
    tensors by `layer_loss` (see `LAYER_LOSSES`)."""
    distance = 0.0
    if layer_loss in ("mse", "both"):
        distance += ops.mean(ops.square(mapped - target), axis=-1)
    if layer_loss in ("cosine", "both"):
        dot = ops.sum(mapped * target, axis=-1)
        norms = ops.sqrt(
            ops.sum(ops.square(mapped), axis=-1)
            * ops.sum(ops.square(target), axis=-1)
        )
        distance += 1.0 - dot / ops.maximum(norms, 1e-6)
    return distance


def check_teacher_fits(teacher, layers, width):
    """Refuses a teacher whose layers are not `layers` x `width` wide."""
    found = (teacher.num_layers + 1, 2 * teacher.projection_dim)
    if found != (layers, width):
        raise KerasElmoError(
            f"The teacher has {found[0]} layers of width {found[1]} (token "
            f"layer included), and this student was built to learn from "
            f"{layers} of width {width}: is it the same teacher? Give the "
            "teacher the run was started with, or start a new run.",
            "teacher",
        )
