import keras
import numpy as np
from keras import ops

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_fraction
from elmo_core.errors import check_integer
from elmo_core.errors.backends import require_tensorflow
from keras_elmo.layers.bilm import BiLM
from keras_elmo.layers.bilm_windows import is_window_batch
from keras_elmo.layers.validation import keras_layer_config
from keras_elmo.models.softmax_losses import full_softmax_loss
from keras_elmo.models.softmax_losses import inclusion_log_probabilities
from keras_elmo.models.softmax_losses import log_uniform_bias
from keras_elmo.models.softmax_losses import log_uniform_probabilities
from keras_elmo.models.softmax_losses import sample_without_replacement
from keras_elmo.models.softmax_losses import sampled_softmax_loss
from keras_elmo.models.window_states import build_window_states
from keras_elmo.models.window_states import read_window_states
from keras_elmo.models.window_states import write_window_states


@keras.saving.register_keras_serializable(package="keras_elmo")
class Perplexity(keras.metrics.Metric):
    """`exp` of the mean per-token loss over everything seen (token-weighted
    over batches, unlike a mean of per-batch values)."""

    def __init__(self, name="perplexity", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable((), "zeros", name="total")
        self.count = self.add_variable((), "zeros", name="count")

    def update_state(self, losses):
        """Adds per-token `losses`."""
        self.add_totals(ops.sum(losses), ops.cast(ops.size(losses), "float32"))

    def add_totals(self, total, count):
        """Adds `count` tokens whose losses sum to `total`."""
        self.total.assign_add(total)
        self.count.assign_add(count)

    def result(self):
        return ops.exp(self.total / ops.maximum(self.count, 1.0))


@keras.saving.register_keras_serializable(package="keras_elmo")
class ELMoLanguageModel(keras.Model):
    """The trainable ELMo biLM: `BiLM` plus one softmax for both directions.

    The forward LSTM stack predicts the next token and the backward stack the
    previous one, `<S>` and `</S>` included as targets (so a sentence of `n`
    tokens gives `n + 1` predictions a direction); both share one softmax
    (`softmax_kernel (V, P)`, `softmax_bias (V,)`). The loss is the mean of
    the two directions' mean cross-entropies. A fresh model's softmax bias
    starts at the log of the sampler's distribution (`log_uniform_bias`):
    it predicts a Zipf-like unigram distribution before it has learned
    anything. Training uses a sampled
    softmax: `num_sampled` distinct negatives shared by the batch, drawn
    without replacement from bilm-tf's log-uniform distribution, each logit
    corrected by its log inclusion probability; evaluation uses the full
    softmax. Padding contributes nothing.

    Metrics: `forward_perplexity`, `backward_perplexity` and `perplexity`
    (exp of the mean loss of both directions), token-weighted. In training
    they come from the sampled loss, an estimate; `evaluate` gives the true
    held-out perplexity.

    Masking: targets with `sample_weight` 0 are left out of the loss: the
    loss gathers the real targets out of the padding, or, when the model is
    compiled with `jit_compile=True` (XLA, which needs shapes that do not
    depend on the data; Keras's default on a GPU), computes every position
    and weights it. The two give the same loss and gradients.

    Under a `tf.distribute` strategy each replica divides its summed token
    losses by the token counts of the global batch, so the replicas'
    losses, and their gradients summed by the optimizer, equal those of the
    global batch on one device.

    Args:
        bilm: a `keras_elmo.layers.BiLM` (or its config).
        vocabulary_size: int. Number of output classes `V`.
        num_sampled: int. Negatives per batch in training, capped at `V`
            (then the full softmax is used). Defaults to `8192`.
        dropout: float. Dropout on the top LSTM outputs before the softmax
            in training (0.1 in the original recipe). Defaults to `0.1`.
        seed: int or None. Seed of the negative sampler. Defaults to `None`.
        window_rows: int or None. Rows of a global batch of windows of
            continuous text (`keras_elmo.data.windows`): the model then
            keeps each row's LSTM state from one window batch to the next
            (`keras_elmo.models.window_states`); sentence batches still
            start from zeros. Defaults to `None` (sentences only).

    Call arguments:
        inputs: dict with `"character_ids"`, int `(batch, time, 50)`; for a
            word-input biLM, with `"token_ids"`, int `(batch, time)`
            (vocabulary line + 1; the same vocabulary as the softmax).

    Returns:
        A dict: `"forward"` and `"backward"` top LSTM outputs
        `(batch, time + 2, P)` at the positions of `<S> tokens </S>`, and
        `"mask"` `(batch, time + 2)`.

    Example:

    >>> bilm = keras_elmo.layers.BiLM(
    ...     filters=[[1, 4], [2, 8]], char_embedding_dim=4,
    ...     num_highway_layers=1, units=16, projection_dim=8)
    >>> model = keras_elmo.models.ELMoLanguageModel(bilm, vocabulary_size=5)
    >>> model.compile(optimizer=keras_elmo.optimizers.SparseAdagrad())
    >>> x = {"character_ids": keras_elmo.batch_to_ids([["a", "b"]])}
    >>> y = np.array([[[3, 4, 1, 0], [0, 0, 3, 4]]])  # <S> a b </S>
    >>> w = np.array([[[1, 1, 1, 0], [0, 1, 1, 1]]], "float32")
    >>> history = model.fit(x, y, sample_weight=w, verbose=0)
    >>> sorted(history.history)
    ['backward_perplexity', 'forward_perplexity', 'loss', 'perplexity']

    Reference:
        Peters et al. 2018; Jean et al. 2015, "On Using Very Large Target
        Vocabulary for Neural Machine Translation" (sampled softmax).
    """

    def __init__(
        self,
        bilm,
        vocabulary_size,
        num_sampled=8192,
        dropout=0.1,
        seed=None,
        window_rows=None,
        **kwargs,
    ):
        require_tensorflow(
            "ELMoLanguageModel (sampled-softmax training)",
            keras.backend.backend(),
        )
        super().__init__(**kwargs)
        if isinstance(bilm, dict):
            bilm = keras_layer_config(bilm, "bilm")
        if not isinstance(bilm, BiLM):
            raise KerasElmoError(
                "`bilm` must be a keras_elmo.layers.BiLM.",
                "bilm",
                received=bilm,
            )
        if bilm.stateful:
            raise KerasElmoError(
                "Train a stateless BiLM (stateful=False): training reads "
                "shuffled sentences, each from a zero state."
            )
        # <S>, </S>, <UNK> and a word.
        vocabulary_size = check_integer(
            vocabulary_size, "vocabulary_size", minimum=4
        )
        num_sampled = check_integer(num_sampled, "num_sampled", minimum=1)
        dropout = check_fraction(dropout, "dropout")
        if seed is not None:
            seed = check_integer(seed, "seed", minimum=0)
        if window_rows is not None:
            window_rows = check_integer(window_rows, "window_rows", minimum=1)
        table = getattr(bilm, "vocabulary_size", None)
        if table is not None and int(table) != int(vocabulary_size):
            raise KerasElmoError(
                f"`vocabulary_size` must be {table}, the size of the "
                "word-input BiLM's table: a word language model reads and "
                "predicts the same vocabulary.",
                "vocabulary_size",
                received=vocabulary_size,
            )
        self.bilm = bilm
        self.vocabulary_size = int(vocabulary_size)
        self.num_sampled = int(num_sampled)
        self.dropout = float(dropout)
        self.seed = seed
        self.window_rows = window_rows
        # float32 whatever the policy: the softmax and the loss are float32.
        self.output_dropout = keras.layers.Dropout(
            self.dropout, seed=seed, dtype="float32", name="output_dropout"
        )
        self.sampler_seed = keras.random.SeedGenerator(seed)
        self._sampling = None
        self.forward_perplexity = Perplexity(name="forward_perplexity")
        self.backward_perplexity = Perplexity(name="backward_perplexity")
        self.perplexity = Perplexity(name="perplexity")

    def build(self, input_shape=None):
        if not self.bilm.built:
            self.bilm.build()
        dim = self.bilm.projection_dim
        # bilm-tf initialises the softmax with stddev 1 / sqrt(P).
        self.softmax_kernel = self.add_weight(
            name="softmax_kernel",
            shape=(self.vocabulary_size, dim),
            initializer=keras.initializers.RandomNormal(stddev=dim**-0.5),
        )
        self.softmax_bias = self.add_weight(
            name="softmax_bias",
            shape=(self.vocabulary_size,),
            initializer=log_uniform_bias,
        )
        self.window_states = None
        if self.window_rows is not None:
            self.window_states = build_window_states(self, self.window_rows)
        self.built = True

    def call(self, inputs, training=None):
        if is_window_batch(self.bilm, inputs):
            return self._call_windows(inputs, training)
        # A dict goes to the BiLM as is: it reads its own input key.
        outputs = self.bilm(inputs, training=training, keep_boundaries=True)
        top = outputs["layer_outputs"][-1]
        dim = self.bilm.projection_dim
        return {
            "forward": top[..., :dim],
            "backward": top[..., dim:],
            "mask": outputs["mask"],
        }

    def _call_windows(self, inputs, training):
        """A window batch: each row goes on from the state its previous
        window left (`window_rows` rows), and leaves its own."""
        if self.window_states is None:
            raise KerasElmoError(
                "This ELMoLanguageModel trains on sentences: give it "
                "`window_rows` (the rows of a global batch) to train on "
                "windows of continuous text."
            )
        rows = ops.shape(next(iter(inputs.values())))[0]
        states = read_window_states(self.window_states, rows)
        outputs = self.bilm(inputs, training=training, initial_states=states)
        write_window_states(self.window_states, outputs["states"], rows)
        top = outputs["forward"]
        return {
            "forward": top,
            "backward": outputs["backward"],
            "mask": ops.ones(ops.shape(top)[:2], dtype="bool"),
        }

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        """Mean of the forward and backward cross-entropies (see class doc).

        `y` is int `(batch, 2, time + 2)` (forward then backward targets)
        and `sample_weight` float `(batch, 2, time + 2)`, 1 for a target.
        """
        import tensorflow as tf

        if y is None or sample_weight is None:
            raise KerasElmoError(
                "ELMoLanguageModel needs targets y (batch, 2, time + 2) and "
                "sample_weight of the same shape, e.g. from "
                "keras_elmo.data.lm_dataset."
            )
        if self.jit_compile:
            sums, counts = self._static_shape_losses(
                y, y_pred, sample_weight, training
            )
        else:
            sums, counts = self._real_token_losses(
                y, y_pred, sample_weight, training
            )
        self.forward_perplexity.add_totals(sums[0], counts[0])
        self.backward_perplexity.add_totals(sums[1], counts[1])
        self.perplexity.add_totals(ops.sum(sums), ops.sum(counts))
        context = tf.distribute.get_replica_context()
        replicas = 1 if context is None else context.num_replicas_in_sync
        if replicas > 1:
            # A replica holds part of the global batch: dividing its sums
            # by the token counts of the whole batch makes the replicas'
            # losses, and the gradients the optimizer sums, add up to
            # those of the global batch on one device.
            counts = ops.stop_gradient(context.all_reduce("sum", counts))
        counts = ops.maximum(counts, 1.0)
        loss = 0.5 * (sums[0] / counts[0] + sums[1] / counts[1])
        regularization = self.losses
        if regularization:
            loss += ops.sum(regularization) / replicas
        return loss

    def _real_token_losses(self, y, y_pred, sample_weight, training):
        """Sums of the forward and backward losses `(2,)` and their token
        counts `(2,)`, computed for the real targets only (gathered out of
        the padding)."""
        import tensorflow as tf

        losses = []
        for direction, name in enumerate(("forward", "backward")):
            hidden = ops.cast(y_pred[name], "float32")
            if training:
                hidden = self.output_dropout(hidden, training=True)
            valid = tf.where(sample_weight[:, direction] > 0)
            losses.append(
                (
                    tf.gather_nd(hidden, valid),
                    tf.gather_nd(ops.cast(y[:, direction], "int32"), valid),
                )
            )
        hidden = ops.concatenate([losses[0][0], losses[1][0]], axis=0)
        labels = ops.concatenate([losses[0][1], losses[1][1]], axis=0)
        per_token = self._token_losses(hidden, labels, training)
        num_forward = ops.shape(losses[0][1])[0]
        forward, backward = per_token[:num_forward], per_token[num_forward:]
        sums = ops.stack([ops.sum(forward), ops.sum(backward)])
        counts = ops.stack([ops.size(forward), ops.size(backward)])
        return sums, ops.cast(counts, "float32")

    def _static_shape_losses(self, y, y_pred, sample_weight, training):
        """The same as `_real_token_losses`, with shapes that do not depend
        on the data (for XLA): the loss of every position, weighted. The
        padding costs softmax work here, which length bucketing keeps
        small."""
        hidden = ops.stack([y_pred["forward"], y_pred["backward"]], axis=1)
        hidden = ops.cast(hidden, "float32")  # (batch, 2, time + 2, P)
        if training:
            hidden = self.output_dropout(hidden, training=True)
        shape = ops.shape(sample_weight)
        weights = ops.cast(sample_weight > 0, "float32")
        per_token = self._token_losses(
            ops.reshape(hidden, (-1, ops.shape(hidden)[-1])),
            ops.reshape(ops.cast(y, "int32"), (-1,)),
            training,
        )
        per_token = ops.reshape(per_token, shape) * weights
        return ops.sum(per_token, axis=(0, 2)), ops.sum(weights, axis=(0, 2))

    def _token_losses(self, hidden, labels, training):
        kernel = ops.cast(self.softmax_kernel, "float32")
        bias = ops.cast(self.softmax_bias, "float32")
        if not training or self.num_sampled >= self.vocabulary_size:
            return full_softmax_loss(hidden, labels, kernel, bias)
        if self._sampling is None:
            # NumPy constants, computed once (each trace embeds them).
            probabilities = log_uniform_probabilities(self.vocabulary_size)
            self._sampling = (
                np.log(probabilities).astype("float32"),
                inclusion_log_probabilities(probabilities, self.num_sampled),
            )
        log_probabilities, log_inclusion = (
            ops.convert_to_tensor(x) for x in self._sampling
        )
        sampled = sample_without_replacement(
            log_probabilities, self.num_sampled, self.sampler_seed
        )
        return sampled_softmax_loss(
            hidden,
            labels,
            kernel,
            bias,
            sampled,
            ops.take(log_inclusion, sampled, axis=0),
            ops.take(log_inclusion, labels, axis=0),
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "bilm": keras.saving.serialize_keras_object(self.bilm),
                "vocabulary_size": self.vocabulary_size,
                "num_sampled": self.num_sampled,
                "dropout": self.dropout,
                "seed": self.seed,
                "window_rows": self.window_rows,
            }
        )
        return config
