"""tf.distribute training on CPU: two logical devices (MirroredStrategy) and
two worker processes on 127.0.0.1 (MultiWorkerMirroredStrategy).

The distributed runs happen in subprocesses: logical devices and the
multi-worker runtime must be set up before TensorFlow starts, and a worker
that misbehaves must not take the test process with it. Every subprocess
has a deadline and is killed when the test ends.
"""

import functools
import json
import os
import random
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.optimizers import SparseAdagrad
from keras_elmo.optimizers.loss_scale_optimizer import LossScaleOptimizer
from keras_elmo.training.distribute import split_batch
from keras_elmo.training.strategies import get_strategy
from keras_elmo.training.strategies import read_tf_config
from keras_elmo_cli import main
from tests.helpers import BF16_RUNS
from tests.helpers import FIXTURES
from tests.helpers import TINY_TRAIN_FLAGS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(FIXTURES, "train", "vocab.txt")
# Dropout off and every class in the softmax (V = 32), so that runs on one
# and on several devices can be compared number for number.
TINY = [
    *TINY_TRAIN_FLAGS,
    "--num-sampled", "64",
    "--dropout", "0",
    "--clip-norm", "0.2",
    "--learning-rate", "1.0",
]  # fmt: skip
SUBPROCESS_ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
# The half precisions trained in (bfloat16 where TensorFlow can run it).
HALF_PRECISIONS = ("fp16", "bf16") if BF16_RUNS else ("fp16",)


def _write_corpus(path, num_sentences=60, seed=0):
    """Sentences of 2 to 14 words of the fixture vocabulary: batches of
    several rows with different token counts."""
    with open(VOCAB, encoding="utf-8") as f:
        words = [line.strip() for line in f][3:]
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(num_sentences):
            length = rng.randint(2, 14)
            f.write(" ".join(rng.choice(words) for _ in range(length)) + "\n")
    return str(path)


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _tf_config(ports, index):
    workers = [f"127.0.0.1:{port}" for port in ports]
    return json.dumps(
        {
            "cluster": {"worker": workers},
            "task": {"type": "worker", "index": index},
        }
    )


def _run_workers(
    args, ports, logs_dir, indices=None, timeout=150, kill_at_checkpoint=None
):
    """Runs `keras-elmo ARGS` as the workers `indices` of a cluster on
    `ports`. With `kill_at_checkpoint` (a run directory), kills the last
    worker once a checkpoint is there. Returns the exit codes, the logs and
    the time of the kill; never leaves a worker running."""
    indices = range(len(ports)) if indices is None else indices
    command = [sys.executable, "-m", "keras_elmo_cli", *args]
    processes, logs, killed = [], [], None
    try:
        for index in indices:
            log = os.path.join(logs_dir, f"worker{index}-{time.time()}.log")
            logs.append(log)
            env = dict(SUBPROCESS_ENV, TF_CONFIG=_tf_config(ports, index))
            with open(log, "w") as out:
                processes.append(
                    subprocess.Popen(
                        command, cwd=REPO, env=env, stdout=out, stderr=out
                    )
                )
        deadline = time.time() + timeout
        if kill_at_checkpoint is not None:
            meta = os.path.join(kill_at_checkpoint, "checkpoint", "meta.json")
            while not os.path.exists(meta) and time.time() < deadline:
                if any(p.poll() is not None for p in processes):
                    break
                time.sleep(0.1)
            processes[-1].kill()
            killed = time.time()
        for process in processes:
            process.wait(timeout=max(1.0, deadline - time.time()))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    texts = []
    for log in logs:
        with open(log) as f:
            texts.append(f.read())
    return [p.returncode for p in processes], texts, killed


def _checkpoint(run):
    path = os.path.join(run, "checkpoint")
    with open(os.path.join(path, "meta.json")) as f:
        meta = json.load(f)
    with np.load(os.path.join(path, "state.npz")) as state:
        arrays = [state[f"v{i}"] for i in range(len(state.files))]
    return meta, arrays


def _max_difference(a, b):
    return max(float(np.max(np.abs(x - y), initial=0.0)) for x, y in zip(a, b))


# === Bad input, in process ===


@pytest.mark.parametrize(
    "value, message",
    [
        ("{not json", "not valid JSON"),
        ('{"cluster": {"worker": ["a:1"]}}', "needs a 'cluster'"),
        (
            '{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps"}}',
            "job 'ps' is not supported",
        ),
        (
            '{"cluster": {"worker": ["a"]}, "task": {"type": "worker"}}',
            "is not a 'host:port' address",
        ),
        (
            '{"cluster": {"worker": ["a:1", "b:2"]}, '
            '"task": {"type": "worker", "index": 2}}',
            "index 2 is out of range",
        ),
        (
            '{"cluster": {"worker": ["a:1"]}, "task": {"type": "chief"}}',
            "task type 'chief' is not a job",
        ),
    ],
)
def test_malformed_tf_config(value, message):
    with pytest.raises(ValueError, match=message):
        read_tf_config(value)


def test_strategy_errors_from_the_command_line(tmp_path, monkeypatch, capsys):
    corpus = _write_corpus(tmp_path / "corpus.txt")
    args = [
        "train", "--train", corpus, "--vocab", VOCAB,
        "--output", str(tmp_path / "run"), "--steps", "1", "--quiet",
        *TINY, "--strategy", "multi_worker",
    ]  # fmt: skip
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--strategy 'multi_worker' needs the cluster in the TF_CONFIG" in err
    monkeypatch.setenv("TF_CONFIG", '{"cluster": ')
    assert main(args) == 2
    assert "TF_CONFIG is not valid JSON" in capsys.readouterr().err
    with pytest.raises(ValueError, match="Received: strategy='gpus'"):
        get_strategy("gpus")
    monkeypatch.delenv("TF_CONFIG")
    args[-1] = "tpu"
    assert main(args) == 2
    assert "TPU training is not supported yet" in capsys.readouterr().err


def test_split_batch_needs_equal_parts():
    batch = (
        {"character_ids": tf.zeros((6, 3, 50), "int32")},
        tf.zeros((6, 2, 5), "int32"),
        tf.ones((6, 2, 5)),
    )
    x, y, w = split_batch(batch, 3)
    assert x["character_ids"].shape == (3, 2, 3, 50)
    assert w.shape == (3, 2, 2, 5)
    with pytest.raises(ValueError, match="6 rows cannot be split evenly"):
        split_batch(batch, 4)


def test_loss_scaling_keeps_sparse_updates_sparse():
    optimizer = LossScaleOptimizer(SparseAdagrad(), initial_scale=4.0)
    var = tf.Variable(np.zeros((5, 2), "float32"))
    optimizer.build([var])

    def apply(values):
        grad = tf.IndexedSlices(
            tf.constant(values, "float32"), tf.constant([1]), (5, 2)
        )
        optimizer.apply([grad], [var])

    apply([[4.0, 4.0]])  # the scaled gradient: 1 once unscaled
    moved = np.abs(var.numpy()).sum(axis=1) > 0
    np.testing.assert_array_equal(moved, [False, True, False, False, False])
    accumulator = optimizer.inner_optimizer.variables[-1].numpy()
    np.testing.assert_allclose(accumulator[:, 0], [1, 2, 1, 1, 1])
    before = var.numpy()
    apply([[np.inf, 1.0]])  # overflow: skipped, scale halved
    np.testing.assert_array_equal(var.numpy(), before)
    assert float(optimizer.dynamic_scale.numpy()) == 2.0


def test_one_device_loop_and_fit_resume_each_other(tmp_path, capsys):
    corpus = _write_corpus(tmp_path / "corpus.txt")
    run = tmp_path / "run"
    args = [
        "train", "--train", corpus, "--vocab", VOCAB, "--output", str(run),
        "--quiet", *TINY, "--checkpoint-every", "2",
        "--mixed-precision", "fp16",
    ]  # fmt: skip
    # The strategy loop on one device, then `fit` (the default) resumes it.
    assert main([*args, "--steps", "2", "--strategy", "one_device"]) == 0
    meta, _ = _checkpoint(run)
    assert (meta["step"], meta["num_replicas"]) == (2, 1)
    names = [name for name, _ in meta["variables"]]
    assert any("dynamic_scale" in name for name in names)  # loss scaling
    assert main([*args, "--steps", "4"]) == 0
    assert _checkpoint(run)[0]["step"] == 4
    assert main(["evaluate", "--model", str(run), "--data", corpus]) == 0
    assert "held-out perplexity" in capsys.readouterr().out
    # A run resumes only on as many replicas as it was trained on.
    with open(run / "checkpoint" / "meta.json") as f:
        meta = json.load(f)
    meta["num_replicas"] = 2
    with open(run / "checkpoint" / "meta.json", "w") as f:
        json.dump(meta, f)
    assert main([*args, "--steps", "6"]) == 2
    assert "trained on 2 replica(s) and this run has 1" in (
        capsys.readouterr().err
    )


# === Two logical CPU devices ===


def _two_replicas_versus_one_device(
    corpus, optimizer, token_encoder="characters"
):
    """Runs in a subprocess; prints a JSON report (see the tests below)."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    from elmo_core.ids.vocabulary import Vocabulary
    from elmo_core.settings.training_config import TrainingConfig
    from keras_elmo.data import lm_dataset
    from keras_elmo.data import scan_corpus
    from keras_elmo.training.compiled_model import build_model
    from keras_elmo.training.distribute import DistributedLoop
    from keras_elmo.training.distribute import distribute_lm_dataset
    from tests.helpers import tiny_bilm_kwargs

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    vocab = Vocabulary.from_file(VOCAB)
    # The global batch: 2 replicas x 64 tokens.
    scan = scan_corpus([corpus], max_length=30, tokens_per_batch=128)

    if token_encoder == "characters":
        bilm = tiny_bilm_kwargs(units=16, projection_dim=8)
    else:
        bilm = dict(units=16, projection_dim=8, token_encoder=token_encoder)
        bilm["vocabulary_size"] = len(vocab)
    data = functools.partial(lm_dataset, token_encoder=token_encoder)

    def config(**overrides):
        kwargs = dict(
            train_files=[corpus],
            bilm=bilm,
            vocabulary_size=len(vocab),
            tokens_per_batch=64,
            max_length=30,
            num_sampled=len(vocab),  # the full softmax
            seed=1,
        )
        kwargs.update(overrides)
        return TrainingConfig(**kwargs)

    def state(model):
        variables = list(model.variables) + list(model.optimizer.variables)
        return [v.numpy() for v in variables]

    # Dropout off, and a clip that acts: the clip must see the sum of the
    # replicas' gradients.
    rate = {"adagrad": 1.0, "adam": 0.01}[optimizer]
    settings = config(
        optimizer=optimizer, learning_rate=rate, dropout=0.0, clip_norm=0.2
    )
    one = build_model(settings)
    with strategy.scope():
        two = build_model(settings)
    for mine, theirs in zip(two.variables, one.variables):
        mine.assign(theirs.numpy())
    initial = [v.numpy() for v in one.trainable_variables]
    steps = 3
    losses_one = [
        one.train_on_batch(x, y, sample_weight=w, return_dict=True)["loss"]
        for x, y, w in data(scan, vocab, seed=5).take(steps)
    ]
    loop = DistributedLoop(two, strategy)
    batches = iter(
        distribute_lm_dataset(
            strategy, functools.partial(data, scan, vocab, seed=5)
        )
    )
    losses_two = [loop.train_step(batches)["loss"] for _ in range(steps)]
    report = {
        "losses": losses_one,
        "loss_difference": _max_difference(losses_one, losses_two),
        "weight_difference": _max_difference(state(one), state(two)),
        "weight_change": _max_difference(
            [v.numpy() for v in one.trainable_variables], initial
        ),
    }
    if optimizer != "adagrad" or token_encoder != "characters":
        print("REPORT " + json.dumps(report))
        return
    held_out = dict(shuffle=False, repeat=False)
    report["perplexity_one"] = one.evaluate(
        data(scan, vocab, **held_out), verbose=0, return_dict=True
    )["perplexity"]
    report["perplexity_two"] = loop.evaluate(
        distribute_lm_dataset(
            strategy, functools.partial(data, scan, vocab, **held_out)
        ),
        scan.steps_per_epoch,
    )["perplexity"]

    models = {}
    for precision in HALF_PRECISIONS:
        with strategy.scope():
            model = models[precision] = build_model(
                config(mixed_precision=precision, num_sampled=8)
            )
        loop = DistributedLoop(model, strategy)
        batches = iter(
            distribute_lm_dataset(
                strategy, functools.partial(data, scan, vocab, seed=5)
            )
        )
        report[precision] = {
            "losses": [loop.train_step(batches)["loss"] for _ in range(3)],
            "compute_dtype": model.bilm.compute_dtype,
            "variable_dtypes": sorted({v.dtype for v in model.weights}),
            "steps": int(model.optimizer.iterations.numpy()),
        }

    # Loss scaling (float16's; bfloat16 has none): one replica overflows,
    # both skip the step.
    def finite():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        value = tf.where(replica == 1, np.inf, 1.0)
        grad = tf.IndexedSlices(
            tf.fill([1, 2], value), tf.constant([0]), tf.constant([3, 2])
        )
        return models["fp16"].optimizer.check_finite([grad])

    results = strategy.run(tf.function(finite))
    report["finite_per_replica"] = [
        bool(r) for r in strategy.experimental_local_results(results)
    ]
    print("REPORT " + json.dumps(report))


def _replica_report(tmp_path, optimizer, token_encoder="characters"):
    corpus = _write_corpus(tmp_path / "corpus.txt")
    code = (
        "import sys; from tests.test_distribute import "
        "_two_replicas_versus_one_device as f; f(*sys.argv[1:])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, corpus, optimizer, token_encoder],
        cwd=REPO,
        env=SUBPROCESS_ENV,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    line = [x for x in result.stdout.splitlines() if x.startswith("REPORT ")]
    report = json.loads(line[-1][len("REPORT ") :])
    print(json.dumps(report, indent=1))
    assert report["weight_change"] > 1e-3  # the steps did something
    assert report["loss_difference"] < 1e-5, report
    assert report["weight_difference"] < 1e-5, report
    return report


@pytest.mark.large
def test_two_replicas_equal_one_device(tmp_path):
    report = _replica_report(tmp_path, "adagrad")
    assert report["perplexity_two"] == pytest.approx(
        report["perplexity_one"], rel=1e-5
    )
    for precision in HALF_PRECISIONS:
        dtype = {"bf16": "bfloat16", "fp16": "float16"}[precision]
        numbers = report[precision]
        assert np.all(np.isfinite(numbers["losses"])), numbers
        assert numbers["compute_dtype"] == dtype
        assert numbers["variable_dtypes"] == ["float32"]
        assert numbers["steps"] == 3
    assert report["finite_per_replica"] == [False, False]


@pytest.mark.large  # ~20 s
def test_two_replicas_equal_one_device_adam(tmp_path):
    _replica_report(tmp_path, "adam")


@pytest.mark.large  # ~20 s
def test_two_replicas_equal_one_device_with_a_word_table(tmp_path):
    # The word table's sparse Adagrad updates, summed over the replicas.
    _replica_report(tmp_path, "adagrad", token_encoder="words")


# === Two worker processes ===


# ~70 s; multi-worker start-up runs by default (the missing-peer test).
@pytest.mark.large
def test_multi_worker_lost_worker_resume_equals_one_device(tmp_path, capsys):
    corpus = _write_corpus(tmp_path / "corpus.txt")
    common = ["--train", corpus, "--vocab", VOCAB, "--quiet", *TINY]
    # The workers and the single device start from the same weights.
    start = tmp_path / "start"
    assert main(["train", *common, "--output", str(start), "--steps", "1"]) == 0
    init = tmp_path / "init"
    assert (
        main(["export-weights", "--model", str(start), "--output", str(init)])
        == 0
    )

    run = tmp_path / "workers"
    args = [
        "train", *common, "--output", str(run), "--init-from", str(init),
        "--tokens-per-batch", "64", "--validation", corpus,
        "--checkpoint-every", "2", "--validate-every", "2",
        "--strategy", "multi_worker", "--cluster-timeout", "60",
    ]  # fmt: skip
    args.remove("--quiet")
    # Worker 1 dies after the first checkpoint: worker 0 stops with an
    # error instead of waiting for it.
    started = time.time()
    codes, logs, killed = _run_workers(
        [*args, "--steps", "1000"],
        _free_ports(2),
        tmp_path,
        kill_at_checkpoint=run,
    )
    first_run = time.time() - started
    assert codes[0] == 2, "\n".join(logs)
    assert "Lost the other workers during" in logs[0]
    lost_after = time.time() - killed
    assert lost_after < 60
    meta, _ = _checkpoint(run)
    resumed_at = meta["step"]
    assert meta["num_replicas"] == 2 and resumed_at >= 2

    # All workers again: training resumes from the chief's checkpoint.
    steps = resumed_at + 4
    started = time.time()
    codes, logs, _ = _run_workers(
        [*args, "--steps", str(steps)], _free_ports(2), tmp_path
    )
    second_run = time.time() - started
    assert codes == [0, 0], "\n".join(logs)
    assert "2 replica(s), global batches of 2 x 64 tokens" in logs[0]
    assert f"from step {resumed_at}" in logs[0]
    assert f"training steps {resumed_at + 1}..{steps}" in logs[0]
    assert "training steps" not in logs[1]  # only the chief reports
    meta, workers = _checkpoint(run)
    assert meta["step"] == steps
    assert sorted(os.listdir(run)) == [
        "checkpoint", "config.json", "history.json", "logs", "vocab.txt",
    ]  # fmt: skip

    # One device, the same global batches (2 x 64 tokens), no interruption.
    single = tmp_path / "single"
    args = [
        "train", *common, "--output", str(single), "--init-from", str(init),
        "--tokens-per-batch", "128", "--validation", corpus,
        "--checkpoint-every", "2", "--validate-every", "2",
        "--steps", str(steps),
    ]  # fmt: skip
    assert main(args) == 0
    _, one_device = _checkpoint(single)
    difference = _max_difference(workers, one_device)

    def perplexities(directory):
        with open(directory / "history.json") as f:
            return {h["step"]: h["valid_perplexity"] for h in json.load(f)}

    by_workers, by_one = perplexities(run), perplexities(single)
    assert set(by_workers) <= set(by_one) and steps in by_workers
    with capsys.disabled():
        print(
            f"\n2 workers (worker 1 killed after step {resumed_at}, then "
            f"resumed) vs 1 device after {steps} steps: max |difference| "
            f"of the {len(workers)} checkpoint arrays {difference:.2e}; "
            f"validation perplexity {by_workers} vs {by_one}; wall time "
            f"{first_run:.1f} s (first run, the loss noticed "
            f"{lost_after:.1f} s after the kill) + {second_run:.1f} s "
            f"(resumed run, {steps - resumed_at} steps)"
        )
    assert difference < 1e-5
    for step, perplexity in by_workers.items():
        assert perplexity == pytest.approx(by_one[step], rel=1e-5)


@pytest.mark.large
def test_multi_worker_missing_peer_fails_in_bounded_time(tmp_path):
    corpus = _write_corpus(tmp_path / "corpus.txt")
    args = [
        "train", "--train", corpus, "--vocab", VOCAB,
        "--output", str(tmp_path / "run"), "--steps", "2", *TINY,
        "--strategy", "multi_worker", "--cluster-timeout", "5",
    ]  # fmt: skip
    started = time.time()
    # Worker 1 of the cluster is never started.
    codes, logs, _ = _run_workers(args, _free_ports(2), tmp_path, indices=[0])
    elapsed = time.time() - started
    assert codes == [2], logs[0]
    assert "could not form the cluster of TF_CONFIG" in logs[0]
    assert "worker 1 at 127.0.0.1" in logs[0]
    assert elapsed < 60
