"""Training on several devices and machines with `tf.distribute`: the
batches and the loop (the strategy itself: `keras_elmo.training.strategies`).

TensorFlow does the distributing: variables are mirrored, each replica runs
the step on its part of the global batch (`strategy.run`) and the optimizer
sums the gradients with the strategy's all-reduce. What this module adds:

- Batches. `tokens_per_batch` is the budget of one replica: the data are
  bucketed into global batches of `replicas x tokens_per_batch` tokens,
  and each global batch is cut into equal per-replica batches (all with the
  same padded length, so no replica waits for a longer one). A batch whose
  rows do not divide evenly gets empty rows of weight 0. Every worker reads
  the same global stream and keeps the rows of its own replicas, so the
  data of a step do not depend on how the replicas are spread over
  machines.
- The loop. Keras 3 `fit` under a strategy builds the model from the first
  distributed batch by reducing the replicas' batches to one, which fails
  when they differ in shape, and it is reported to fail under
  `MultiWorkerMirroredStrategy` (keras-team/keras#20585). A strategy run
  therefore uses the small loop below: `strategy.run` of the same
  `compute_loss` and `optimizer.apply` that `fit` calls. One device with
  no strategy keeps `model.fit`.
- Lost workers. A collective whose peer is gone stops the loop with a
  `ClusterError` that says how to resume.

The loss normalisation lives in `ELMoLanguageModel.compute_loss` (each
replica divides by the token counts of the global batch), and the clipping
of the summed gradient in the optimizers.
"""

import contextlib
import math

import keras
import tensorflow as tf

from elmo_core.errors import ClusterError
from elmo_core.errors import KerasElmoError
from keras_elmo.training.strategies import tensorflow_reason

# === Data ===


def split_batch(batch, num_replicas):
    """Cuts a global `(x, y, sample_weight)` batch into equal parts.

    Returns:
        `(x, y, sample_weight)` whose tensors have a leading replica axis:
        `(num_replicas, rows / num_replicas, ...)`.
    """
    x, y, sample_weight = batch
    rows = sample_weight.shape[0]
    if rows is not None and rows % num_replicas:
        raise KerasElmoError(
            f"A global batch of {rows} rows cannot be split evenly over "
            f"{num_replicas} replicas; give a multiple of {num_replicas} "
            "rows (the training data pipeline pads its batches so)."
        )

    def split(tensor):
        shape = tf.shape(tensor)
        return tf.reshape(
            tensor,
            tf.concat([[num_replicas, shape[0] // num_replicas], shape[1:]], 0),
        )

    return tf.nest.map_structure(split, (x, y, sample_weight))


def _pad_rows(x, y, sample_weight, multiple):
    """Adds empty rows of weight 0 up to a multiple of `multiple` rows."""
    extra = -tf.shape(sample_weight)[0] % multiple

    def pad(tensor):
        padding = [[0, extra]] + [[0, 0]] * (len(tensor.shape) - 1)
        return tf.pad(tensor, padding)

    return tf.nest.map_structure(pad, (x, y, sample_weight))


def distribute_lm_dataset(strategy, make_dataset):
    """Global batches, each cut into equal per-replica batches.

    Args:
        strategy: a `tf.distribute.Strategy`.
        make_dataset: a function of no argument that returns the dataset
            of global batches (`lm_dataset` of a scan with the global
            token budget, the per-replica budget times the replicas, or
            `windows_dataset` of the global rows), from the global step
            training starts at.

    Returns:
        A `tf.distribute.DistributedDataset`: element `i` holds, for each
        replica, its part of global batch `i`.
    """
    replicas = strategy.num_replicas_in_sync

    def dataset_fn(input_context):
        # The replicas of a worker are consecutive; its pipeline yields
        # their parts in turn, and the strategy hands them out in order.
        local = replicas // input_context.num_input_pipelines
        first = input_context.input_pipeline_id * local

        def parts(x, y, sample_weight):
            batch = _pad_rows(x, y, sample_weight, replicas)
            batch = split_batch(batch, replicas)
            batch = tf.nest.map_structure(
                lambda t: t[first : first + local], batch
            )
            return tf.data.Dataset.from_tensor_slices(batch)

        return make_dataset().flat_map(parts)

    return strategy.distribute_datasets_from_function(dataset_fn)


# === The loop ===


class DistributedLoop:
    """Training and evaluation steps of an `ELMoLanguageModel` under a
    strategy: what `fit` and `evaluate` do, with `strategy.run`.

    Build the model (and its optimizer) under `strategy.scope()` first, as
    `keras_elmo.training.build_model` does.
    """

    def __init__(self, model, strategy):
        self.model = model
        self.strategy = strategy
        self._metrics = [
            model.forward_perplexity,
            model.backward_perplexity,
            model.perplexity,
        ]
        self._train_function = tf.function(self._train_step)
        self._test_function = tf.function(self._test_step)
        self._totals_function = tf.function(self._totals)

    def _replica_train_step(self, x, y, sample_weight):
        model = self.model
        with tf.GradientTape() as tape:
            y_pred = model(x, training=True)
            loss = model.compute_loss(x, y, y_pred, sample_weight)
            scaled = model.optimizer.scale_loss(loss)
        variables = model.trainable_variables
        model.optimizer.apply(tape.gradient(scaled, variables), variables)
        # The metric totals travel in the loss's reduction, so that every
        # worker has the logs of every step at no extra round trip.
        return tf.concat([[loss], self._local_totals()], axis=0)

    def _train_step(self, iterator):
        values = self.strategy.run(
            self._replica_train_step, args=next(iterator)
        )
        # Each replica's loss is its share of the global batch's loss.
        return self.strategy.reduce("sum", values, axis=None)

    def _replica_test_step(self, x, y, sample_weight):
        y_pred = self.model(x, training=False)
        self.model.compute_loss(x, y, y_pred, sample_weight, training=False)

    def _test_step(self, iterator):
        self.strategy.run(self._replica_test_step, args=next(iterator))

    def _local_totals(self):
        return tf.stack(
            [v.value for m in self._metrics for v in (m.total, m.count)]
        )

    def _totals(self):
        totals = self.strategy.run(self._local_totals)
        return self.strategy.reduce("sum", totals, axis=None)

    def _perplexities(self, totals):
        return {
            m.name: math.exp(totals[2 * i] / max(totals[2 * i + 1], 1.0))
            for i, m in enumerate(self._metrics)
        }

    def train_step(self, iterator):
        """One step on the next global batch.

        Returns:
            A dict: `loss`, the loss of the global batch, and the
            perplexity metrics since they were last reset.
        """
        values = self._train_function(iterator).numpy()
        logs = self._perplexities(values[1:])
        logs["loss"] = float(values[0])
        return logs

    def evaluate(self, dataset, steps, progress=None):
        """Held-out perplexities of `steps` global batches (full softmax),
        reported to a `elmo_core.progress.Progress` if given."""
        with self._lost_workers("an evaluation"):
            self.model.reset_metrics()
            iterator = iter(dataset)
            for step in range(steps):
                self._test_function(iterator)
                if progress is not None:
                    progress.update(step + 1)
            totals = self._totals_function().numpy()
        return self._perplexities(totals)

    def fit(self, dataset, callbacks, initial_epoch, epochs, steps_per_epoch):
        """`model.fit` for this loop: same callbacks, epochs of
        `steps_per_epoch` steps, stopping on `model.stop_training`."""
        callbacks = keras.callbacks.CallbackList(
            callbacks, add_history=False, add_progbar=False, model=self.model
        )
        self.model.stop_training = False
        with self._lost_workers("training"):
            iterator = iter(dataset)
            callbacks.on_train_begin()
            for epoch in range(initial_epoch, epochs):
                self._epoch(iterator, epoch, steps_per_epoch, callbacks)
                if self.model.stop_training:
                    break
            callbacks.on_train_end()

    def _epoch(self, iterator, epoch, steps, callbacks):
        self.model.reset_metrics()
        callbacks.on_epoch_begin(epoch)
        total = 0.0
        for step in range(steps):
            callbacks.on_train_batch_begin(step)
            logs = self.train_step(iterator)
            # Like `fit`, the mean loss of the epoch so far.
            total += logs["loss"]
            logs["loss"] = total / (step + 1)
            callbacks.on_train_batch_end(step, logs)
            if self.model.stop_training:
                break
        callbacks.on_epoch_end(epoch, logs)

    @contextlib.contextmanager
    def _lost_workers(self, what):
        """Turns the errors of a collective whose peer is gone into a
        `ClusterError` that says what to do."""
        try:
            yield
        except (
            tf.errors.UnavailableError,
            tf.errors.DeadlineExceededError,
            tf.errors.CancelledError,
            tf.errors.AbortedError,
        ) as e:
            if not isinstance(
                self.strategy, tf.distribute.MultiWorkerMirroredStrategy
            ):
                raise
            raise ClusterError(
                f"Lost the other workers during {what}: "
                f"{tensorflow_reason(e)}. Restart every worker with the same "
                "command to resume from the last checkpoint."
            ) from None
