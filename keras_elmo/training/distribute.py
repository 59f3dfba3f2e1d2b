"""Training on several devices and machines with `tf.distribute`.

`keras-elmo train --strategy NAME` (or `train(..., strategy=NAME)`):

    auto          multi_worker when TF_CONFIG names several tasks, mirrored
                  with several GPUs, otherwise one device without a strategy
                  (`model.fit`, the default)
    one_device    `OneDeviceStrategy`: the distributed loop on one device
    mirrored      `MirroredStrategy`: every GPU of this machine
    multi_worker  `MultiWorkerMirroredStrategy`: the machines of TF_CONFIG
    tpu           not supported yet (see `TPU_UNSUPPORTED`)

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
- Bounded waits. Workers wait at most `cluster_timeout` seconds for each
  other at start-up and in every collective; then they stop with a
  `ClusterError` instead of hanging.

The loss normalisation lives in `ELMoLanguageModel.compute_loss` (each
replica divides by the token counts of the global batch), and the clipping
of the summed gradient in the optimizers.
"""

import contextlib
import json
import math
import os

import keras
import tensorflow as tf

from keras_elmo.data.datasets import lm_dataset
from keras_elmo.errors import ClusterError
from keras_elmo.errors import KerasElmoError
from keras_elmo.training.training_config import DEFAULT_CLUSTER_TIMEOUT
from keras_elmo.training.training_config import STRATEGIES

_TF_CONFIG_EXAMPLE = (
    '{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
    '"task": {"type": "worker", "index": 0}}'
)
_JOBS = ("chief", "worker")
TPU_UNSUPPORTED = (
    "TPU training is not supported yet: a TPU compiles each step with XLA, "
    "and although the training step has an XLA form (used by "
    "`jit_compile`), the distributed loop does not use it, and no TPU was "
    "available to test one (the sparse optimizers' merging of the softmax "
    "rows a batch touches has a data-dependent size). Train on GPUs "
    "(`strategy` 'mirrored' or 'multi_worker') instead."
)


# === Strategies ===


def read_tf_config(text):
    """Parses and checks a `TF_CONFIG` value; None for an empty one.

    Returns:
        The dict: `{"cluster": {job: [address, ...]}, "task": {"type":
        job, "index": int}}`, with jobs `chief` and `worker`.
    """
    if not text or not text.strip():
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise KerasElmoError(
            f"TF_CONFIG is not valid JSON ({e}). Expected, e.g., "
            f"{_TF_CONFIG_EXAMPLE}.",
            received=text,
        ) from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise KerasElmoError(
            "TF_CONFIG needs a 'cluster' (job name -> list of host:port) "
            "and a 'task' (this worker's type and index). Expected, e.g., "
            f"{_TF_CONFIG_EXAMPLE}.",
            received=text,
        )
    for job, addresses in cluster.items():
        if job not in _JOBS:
            raise KerasElmoError(
                f"TF_CONFIG: job {job!r} is not supported; training uses "
                "'worker' tasks, and optionally one 'chief'."
            )
        if not isinstance(addresses, list) or not addresses:
            raise KerasElmoError(
                f"TF_CONFIG: cluster[{job!r}] must be a non-empty list of "
                "'host:port' addresses.",
                received=addresses,
            )
        for address in addresses:
            host, _, port = str(address).rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise KerasElmoError(
                    f"TF_CONFIG: {address!r} in cluster[{job!r}] is not a "
                    "'host:port' address."
                )
    if len(cluster.get("chief", [])) > 1:
        raise KerasElmoError("TF_CONFIG: a cluster has at most one chief.")
    kind, index = task.get("type"), task.get("index", 0)
    if kind not in cluster:
        raise KerasElmoError(
            f"TF_CONFIG: task type {kind!r} is not a job of the cluster "
            f"({', '.join(sorted(cluster))})."
        )
    if not isinstance(index, int) or not 0 <= index < len(cluster[kind]):
        raise KerasElmoError(
            f"TF_CONFIG: task index {index!r} is out of range: the cluster "
            f"has {len(cluster[kind])} {kind!r} task(s), indexed from 0."
        )
    return config


def _num_tasks(tf_config):
    return sum(len(a) for a in tf_config["cluster"].values())


def get_strategy(name="auto", cluster_timeout=DEFAULT_CLUSTER_TIMEOUT):
    """The `tf.distribute.Strategy` for a `strategy` name.

    Must run before any other TensorFlow work in the process (the
    multi-worker strategy sets up the runtime).

    Args:
        name: one of `STRATEGIES`.
        cluster_timeout: float. Seconds a worker waits for the others, at
            start-up and in each collective, before a `ClusterError`.

    Returns:
        A strategy, or None for "auto" on one device (plain `model.fit`).
    """
    if name not in STRATEGIES:
        raise KerasElmoError(
            f"`strategy` must be one of {list(STRATEGIES)}.",
            "strategy",
            received=name,
        )
    tf_config = read_tf_config(os.environ.get("TF_CONFIG"))
    gpus = tf.config.list_physical_devices("GPU")
    if name == "auto":
        if tf_config is not None and _num_tasks(tf_config) > 1:
            name = "multi_worker"
        elif len(gpus) > 1:
            name = "mirrored"
        else:
            return None
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "tpu":
        # The step fails to compile under XLA (checked with jit_compile on
        # CPU); say so before connecting to a TPU.
        raise KerasElmoError(TPU_UNSUPPORTED, "strategy")
    if tf_config is None:
        raise KerasElmoError(
            "`strategy` 'multi_worker' needs the cluster in the TF_CONFIG "
            "environment variable of every worker, e.g. TF_CONFIG='"
            f"{_TF_CONFIG_EXAMPLE}' (same cluster everywhere, each worker "
            "its own index).",
            "strategy",
        )
    return _multi_worker_strategy(tf_config, float(cluster_timeout))


def resolve_strategy(strategy, cluster_timeout=DEFAULT_CLUSTER_TIMEOUT):
    """A `strategy` argument (name, strategy or None) as a strategy or
    None; rejects what training does not support."""
    if isinstance(strategy, str):
        strategy = get_strategy(strategy, cluster_timeout)
    if isinstance(strategy, tf.distribute.TPUStrategy):
        raise KerasElmoError(TPU_UNSUPPORTED, "strategy")
    return strategy


def _bound_cluster_start(tf_config, timeout):
    """Makes workers give up after `timeout` seconds when a peer is missing.

    By default the coordination service that `MultiWorkerMirroredStrategy`
    starts waits an hour for every task to register. The strategy keeps a
    service configured before it is created; TensorFlow has no public API
    for these settings (2.21), hence the private `context` module.
    """
    # Private: no public API sets these timeouts (TF 2.21); a
    # tf.distribute option for coordination-service timeouts would replace it.
    from tensorflow.python.eager import context

    leader = "chief" if "chief" in tf_config["cluster"] else "worker"
    runtime = context.context()
    milliseconds = max(1, int(timeout * 1000))
    runtime.configure_coordination_service(
        service_type="standalone",
        service_leader=f"/job:{leader}/replica:0/task:0",
        cluster_register_timeout_in_ms=milliseconds,
        shutdown_barrier_timeout_in_ms=milliseconds,
    )
    # Registration as a barrier: the timeout then covers a missing peer.
    runtime.coordination_service.cluster_register_with_barrier = True


def _multi_worker_strategy(tf_config, timeout):
    task = tf_config["task"]
    where = f"{task['type']} {task.get('index', 0)}"
    peers = ", ".join(
        f"{job} {i} at {address}"
        for job in _JOBS
        for i, address in enumerate(tf_config["cluster"].get(job, []))
    )
    try:
        _bound_cluster_start(tf_config, timeout)
    except (AttributeError, ImportError, TypeError):
        # Another TensorFlow version: keep its own (longer) waits.
        pass
    options = tf.distribute.experimental.CommunicationOptions(
        timeout_seconds=timeout
    )
    try:
        return tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=options
        )
    except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError) as e:
        raise ClusterError(
            f"{where} could not form the cluster of TF_CONFIG ({peers}) "
            f"within {timeout:g} s: {_reason(e)}. Start every worker of "
            "TF_CONFIG (same cluster, each its own task index), check that "
            "the addresses and ports are reachable from every machine, or "
            "raise `cluster_timeout`."
        ) from None


def _reason(error):
    """The line of a TensorFlow error that says what happened (not where)."""
    skip = ("Graph execution error", "Detected at node", "File ", "[[")
    lines = [
        line.strip()
        for line in str(getattr(error, "message", error)).splitlines()
        if line.strip() and not line.strip().startswith(skip)
    ]
    if not lines:
        return type(error).__name__
    if lines[0].endswith(":") and len(lines) > 1:
        return f"{lines[0]} {lines[1]}".rstrip(".")
    return lines[0].rstrip(".")


def describe(strategy):
    """The public class name of a strategy (some print as private ones)."""
    for kind in (
        tf.distribute.MultiWorkerMirroredStrategy,
        tf.distribute.MirroredStrategy,
        tf.distribute.OneDeviceStrategy,
        tf.distribute.TPUStrategy,
    ):
        if isinstance(strategy, kind):
            return kind.__name__
    return type(strategy).__name__


def is_chief(strategy):
    """Whether this process writes the run directory (all but non-chief
    workers of a multi-worker cluster)."""
    return strategy is None or strategy.extended.should_checkpoint


def num_replicas(strategy):
    return 1 if strategy is None else strategy.num_replicas_in_sync


def agree_on_step(strategy, step):
    """Checks that all workers resume at the same step (a barrier too).

    Workers that read different checkpoints would train on different data
    and weights; raises `ClusterError` on every worker then.
    """
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return

    @tf.function
    def gather(step):
        return strategy.run(
            lambda: tf.distribute.get_replica_context().all_gather(
                step[None], axis=0
            )
        )

    steps = gather(tf.constant(float(step), tf.float64))
    steps = strategy.experimental_local_results(steps)[0].numpy()
    if steps.min() != steps.max():
        raise ClusterError(
            "The workers found checkpoints at different steps "
            f"({sorted(set(int(s) for s in steps))}): every worker must "
            "see the same `output_dir` (storage shared by all machines; "
            "only the chief writes to it)."
        )


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


def distribute_lm_dataset(strategy, scan, vocabulary, **kwargs):
    """`lm_dataset` batches, each cut into equal per-replica batches.

    Args:
        strategy: a `tf.distribute.Strategy`.
        scan: a `CorpusScan` with the global token budget (the per-replica
            budget times the replicas).
        vocabulary: a `keras_elmo.data.Vocabulary`.
        **kwargs: `lm_dataset` arguments (`seed`, `shuffle`, `repeat`,
            `start_step` in global steps).

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

        return lm_dataset(scan, vocabulary, **kwargs).flat_map(parts)

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
        reported to a `keras_elmo.progress.Progress` if given."""
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
                f"Lost the other workers during {what}: {_reason(e)}. "
                "Restart every worker with the same command to resume from "
                "the last checkpoint."
            ) from None
