"""How many threads each TensorFlow op of a training run uses on a CPU.

A biLM's forward and backward language models run side by side, as two
LSTM loops on TensorFlow's inter-op threads, and the ops of a loop step
are small (a few rows times the cell). On a machine of few cores,
splitting each of those ops across every core costs more in hand-offs
than it gains: on 2 cores, one thread an op trains the `cpu` size 10-23 %
faster in float32 and 5 % in bfloat16 (200-step A/B runs,
docs/benchmarks.md), while the held-out evaluation's full softmax, a
few large products, takes about a third longer.

So a run on at most `MAX_CPUS` CPUs and no GPU gives each op half of
them; above that TensorFlow's default (every core an op) is kept, as it
was not measured. `TF_NUM_INTRAOP_THREADS`, TensorFlow's own variable,
wins where set.
"""

import os

# The most CPUs for which an op gets half of them (measured on 2).
MAX_CPUS = 4
THREADS_VARIABLE = "TF_NUM_INTRAOP_THREADS"


def usable_cpus():
    """The CPUs this process may run on (its affinity, where known)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def use_training_threads(cpus=None):
    """Sets TensorFlow's threads per op for training, where the rule above
    applies and TensorFlow's runtime has not started yet (the setting can
    only be made before the first op).

    Args:
        cpus: int or None. The usable CPUs (`usable_cpus()` if None).

    Returns:
        A line saying what was set, or None where nothing was.
    """
    import tensorflow as tf

    from keras_elmo.training.strategies import has_gpu

    cpus = usable_cpus() if cpus is None else cpus
    if cpus > MAX_CPUS or os.environ.get(THREADS_VARIABLE) or has_gpu():
        return None
    threads = max(1, cpus // 2)
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    except RuntimeError:  # TensorFlow's runtime runs already.
        return None
    return (
        f"threads: {threads} per TensorFlow op on {cpus} CPU(s), the "
        f"biLM's two directions side by side ({THREADS_VARIABLE} "
        "chooses another number)"
    )
