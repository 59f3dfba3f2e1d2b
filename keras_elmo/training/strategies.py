"""Which `tf.distribute` strategy a training run uses, and what its
workers agree on.

`keras-elmo train --strategy NAME` (or `FitOptions(strategy=NAME)` in
Python):

    auto          multi_worker when TF_CONFIG names several tasks, mirrored
                  with several GPUs, otherwise one device without a strategy
                  (`model.fit`, the default)
    one_device    `OneDeviceStrategy`: the distributed loop on one device
    mirrored      `MirroredStrategy`: every GPU of this machine
    multi_worker  `MultiWorkerMirroredStrategy`: the machines of TF_CONFIG
    tpu           not supported yet (see `TPU_UNSUPPORTED`)

Workers wait at most `cluster_timeout` seconds for each other at start-up
and in every collective; then they stop with a `ClusterError` instead of
hanging. The loop they run is `keras_elmo.training.distribute`.
"""

import json
import os

import tensorflow as tf

from elmo_core.errors import ClusterError
from elmo_core.errors import KerasElmoError
from elmo_core.settings.training_config import DEFAULT_CLUSTER_TIMEOUT
from elmo_core.settings.training_config import STRATEGIES

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


def has_gpu():
    """Whether TensorFlow sees a GPU on this machine."""
    return bool(tf.config.list_physical_devices("GPU"))


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
            f"within {timeout:g} s: {tensorflow_reason(e)}. Start every "
            "worker of TF_CONFIG (same cluster, each its own task index), "
            "check that the addresses and ports are reachable from every "
            "machine, or raise `cluster_timeout`."
        ) from None


def tensorflow_reason(error):
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
