"""A CPU training run gives each TensorFlow op half the CPUs on machines
of few cores (`keras_elmo/training/threads.py`); each case starts its own
Python, since the setting can only be made before TensorFlow's runtime
starts."""

import os
import subprocess
import sys

import pytest

from tests.helpers import FIXTURES
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import subprocess_env

CASES = """
import os
import tensorflow as tf
from keras_elmo.training.threads import use_training_threads

def threads():
    return tf.config.threading.get_intra_op_parallelism_threads()

# Many CPUs: TensorFlow's default is kept.
assert use_training_threads(cpus=16) is None and threads() == 0
# TensorFlow's own variable wins.
os.environ["TF_NUM_INTRAOP_THREADS"] = "2"
assert use_training_threads(cpus=2) is None and threads() == 0
del os.environ["TF_NUM_INTRAOP_THREADS"]
line = use_training_threads(cpus=4)
assert line.startswith("threads: 2 per TensorFlow op on 4 CPU(s)"), line
assert threads() == 2
assert use_training_threads(cpus=2).startswith("threads: 1 per") and (
    threads() == 1
)
tf.constant(1.0) + 1.0  # the runtime starts
# Too late to change: nothing is set, nothing is claimed, no error.
assert use_training_threads(cpus=4) is None and threads() == 1
print("cases ran")
"""


def test_the_rule_and_its_exceptions():
    ran = subprocess.run(
        [sys.executable, "-c", CASES],
        capture_output=True,
        text=True,
        env=subprocess_env(TF_NUM_INTRAOP_THREADS=""),
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "cases ran" in ran.stdout


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity"
)
# Large: ~14 s (a child process); the rule runs by default
# (test_the_rule_and_its_exceptions)
@pytest.mark.large
def test_keras_elmo_train_on_one_cpu_says_one_thread_an_op(tmp_path):
    cpu = min(os.sched_getaffinity(0))
    args = [
        sys.executable, "-m", "keras_elmo_cli", "train",
        "--train", os.path.join(FIXTURES, "train", "data.txt"),
        "--vocab", os.path.join(FIXTURES, "train", "vocab.txt"),
        "--output", str(tmp_path / "run"), *TINY_TRAIN_FLAGS,
        "--steps", "2", "--num-sampled", "8",
    ]  # fmt: skip
    ran = subprocess.run(
        args,
        capture_output=True,
        text=True,
        env=subprocess_env(TF_NUM_INTRAOP_THREADS="", CUDA_VISIBLE_DEVICES=""),
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "threads: 1 per TensorFlow op on 1 CPU(s)" in ran.stdout
