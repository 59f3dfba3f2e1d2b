"""Shared checks for the layer tests, after KerasHub's and Keras's test
cases: config and serialization round trips, symbolic and eager calls,
weight counts, one `fit` step, precision policies, masks and `.keras`
save/load."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl.testing import parameterized

from elmo_core.settings.precision import bf16_held_back

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "bilm-tf")
MODEL_DIR = os.path.join(FIXTURES, "model")
OPTIONS = os.path.join(MODEL_DIR, "options.json")
WEIGHTS = os.path.join(MODEL_DIR, "lm_weights.hdf5")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# TensorFlow computes in bfloat16 here unless oneDNN is held below its
# bfloat16 products (ONEDNN_MAX_CPU_ISA=AVX2, the stand-in for an older
# CPU), where TensorFlow still calls them and the process aborts (see
# elmo_core.settings.precision); the half-precision policies tests run.
BF16_RUNS = bf16_held_back() is None
HALF_POLICIES = ("mixed_float16",) + (("mixed_bfloat16",) if BF16_RUNS else ())
# `keras-elmo train` flags of a tiny biLM, for runs of a few seconds.
TINY_TRAIN_FLAGS = [
    "--units", "16",
    "--projection-dim", "8",
    "--filters", "[[1, 4], [2, 4]]",
    "--char-embedding-dim", "4",
    "--num-highway-layers", "1",
    "--max-length", "30",
]  # fmt: skip
# Settings that make a run repeatable step by step: a constant rate, no
# warm-up, float32 (the first steps of a longer run are those of a shorter
# one, on any CPU), and no progress output.
STEPWISE_TRAIN_FLAGS = [
    "--lr-schedule", "constant",
    "--warmup-steps", "0",
    "--mixed-precision", "off",
    "--quiet",
]  # fmt: skip
# The bilm-tf fixture's training text and vocabulary, and a training run
# of a tiny biLM (tests/fixtures/compat/make_compat_fixture.py).
TRAIN_TEXT = os.path.join(FIXTURES, "train", "data.txt")
TRAIN_VOCAB = os.path.join(FIXTURES, "train", "vocab.txt")
COMPAT_RUN = os.path.join(os.path.dirname(FIXTURES), "compat", "run")


def subprocess_env(**extra):
    """The environment for a child Python: quiet TensorFlow, and this
    checkout importable even where the package is not installed."""
    path = os.environ.get("PYTHONPATH")
    path = ROOT if not path else os.pathsep.join([ROOT, path])
    return dict(os.environ, PYTHONPATH=path, TF_CPP_MIN_LOG_LEVEL="3", **extra)


def run_python(code, **kwargs):
    """Runs `code` in a child Python (`subprocess_env`), its output
    captured as text; `kwargs` go to `subprocess.run`."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        **kwargs,
    )


def run_example_quick(name, output, timeout):
    """Runs `examples/<name> --quick --output <output>` in a child Python
    and fails the test with its output unless it succeeds; returns the
    `results.json` it wrote there and its standard output."""
    example = os.path.join(ROOT, "examples", name)
    result = subprocess.run(
        [sys.executable, example, "--quick", "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=subprocess_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    with open(os.path.join(output, "results.json"), encoding="utf-8") as f:
        return json.load(f), result.stdout


# XLA's quickest compilation, for the JAX children: their models are tiny
# and each shape compiles once, so compiling dominates a check (the JAX
# checks of tests/test_backends.py took 2.4 minutes instead of 3.9 on a
# busy AMD EPYC). The optimisation level changes how XLA fuses and
# schedules the same operations, not what they compute; the checks keep
# their tolerances.
QUICK_XLA_FLAGS = (
    "--xla_backend_optimization_level=0 "
    "--xla_llvm_disable_expensive_passes=true"
)


def backend_env(backend, **extra):
    """`subprocess_env` for a child on Keras backend `backend` (JAX
    compiling quickly, unless the caller's `XLA_FLAGS` says otherwise)."""
    if backend == "jax" and "XLA_FLAGS" not in os.environ:
        extra.setdefault("XLA_FLAGS", QUICK_XLA_FLAGS)
    return subprocess_env(KERAS_BACKEND=backend, **extra)


def tiny_bilm_kwargs(**overrides):
    kwargs = dict(
        filters=[[1, 4], [2, 4]],
        char_embedding_dim=4,
        num_highway_layers=1,
        units=8,
        projection_dim=4,
        num_layers=2,
        cell_clip=3.0,
        proj_clip=3.0,
        use_skip_connections=True,
    )
    kwargs.update(overrides)
    return kwargs


def named_cases(table):
    """pytest parameters of a table whose rows begin with their test id:
    each `(id, *values)` as `pytest.param(*values, id=id)`."""
    return [pytest.param(*case[1:], id=case[0]) for case in table]


def assert_words_in(text, words):
    """Each of `words` is in `text` (an error message, an output), which
    a failure shows."""
    for word in words:
        assert word in text, text


def assert_gradients_close(got, want, name="", relative=1e-5):
    """Two float32 gradients of one loss, summed in different orders:
    every element within `relative` times the gradient's largest
    magnitude (at least 1). An absolute bound fails by chance where
    random weights make a gradient large (a character embedding's is a
    sum over every position); a wrong gradient is off by far more."""
    got, want = np.asarray(got), np.asarray(want)
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(
        got, want, rtol=0, atol=relative * scale, err_msg=name
    )


def _to_numpy(x):
    return keras.tree.map_structure(
        lambda t: np.asarray(t) if t is not None else None, x
    )


class TestCase(tf.test.TestCase, parameterized.TestCase):
    # tf.test.TestCase's deprecated `test_session` is not a test.
    test_session = None

    def assertAllCloseTree(self, a, b, atol=1e-6):
        a = keras.tree.flatten(_to_numpy(a))
        b = keras.tree.flatten(_to_numpy(b))
        self.assertEqual(len(a), len(b))
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, atol=atol, rtol=0)

    def run_serialization_test(self, layer):
        config = layer.get_config()
        revived = layer.__class__.from_config(config)
        self.assertEqual(revived.get_config(), config)
        serialized = keras.saving.serialize_keras_object(layer)
        revived = keras.saving.deserialize_keras_object(serialized)
        self.assertIsInstance(revived, layer.__class__)
        self.assertEqual(revived.get_config(), config)
        # Same public attributes once revived ("same attributes" check).
        for name, value in vars(layer).items():
            if name.startswith("_") or isinstance(
                value, (keras.layers.Layer, keras.Variable, list, dict)
            ):
                continue
            if isinstance(value, (int, float, str, bool, tuple, type(None))):
                self.assertEqual(getattr(revived, name), value, name)

    def run_layer_test(
        self,
        layer_cls,
        init_kwargs,
        input_data,
        expected_output_shape,
        expected_num_trainable_weights=None,
        expected_num_non_trainable_weights=0,
        expected_mask_shape=None,
        supports_masking=None,
        run_training=True,
        run_precision=True,
    ):
        # Config and serialization round trips.
        layer = layer_cls(**init_kwargs)
        self.run_serialization_test(layer)
        if supports_masking is not None:
            self.assertEqual(layer.supports_masking, supports_masking)

        # Eager call: shapes, dtypes and weight counts.
        output = layer(input_data)
        output_shapes = keras.tree.map_structure(
            lambda t: tuple(t.shape), output
        )
        self.assertEqual(output_shapes, expected_output_shape)
        if expected_num_trainable_weights is not None:
            self.assertLen(
                layer.trainable_weights, expected_num_trainable_weights
            )
        self.assertLen(
            layer.non_trainable_weights, expected_num_non_trainable_weights
        )
        if expected_mask_shape is not None:
            mask = layer.compute_mask(input_data)
            self.assertEqual(tuple(mask.shape), expected_mask_shape)
            self.assertEqual(
                tuple(output._keras_mask.shape), expected_mask_shape
            )

        # Symbolic call: same output shape with a free batch dimension.
        symbolic_input = keras.Input(
            shape=input_data.shape[1:], dtype=str(input_data.dtype)
        )
        symbolic_output = layer_cls(**init_kwargs)(symbolic_input)
        symbolic_shapes = keras.tree.map_structure(
            lambda t: tuple(t.shape)[1:], symbolic_output
        )
        self.assertEqual(
            symbolic_shapes,
            keras.tree.map_shape_structure(
                lambda s: s[1:], expected_output_shape
            ),
        )

        # One fit step changes the trainable weights.
        if run_training:
            inputs = keras.Input(
                shape=input_data.shape[1:], dtype=str(input_data.dtype)
            )
            outputs = layer_cls(**init_kwargs)(inputs)
            model = keras.Model(inputs, outputs)
            model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
            before = [w.numpy().copy() for w in model.trainable_weights]
            targets = keras.tree.map_structure(
                lambda t: np.ones(t.shape, "float32"), output
            )
            model.fit(input_data, targets, epochs=1, verbose=0)
            after = [w.numpy() for w in model.trainable_weights]
            self.assertTrue(
                any(not np.allclose(b, a) for b, a in zip(before, after))
            )

        # Mixed precision: float32 weights, outputs in the compute dtype.
        if run_precision:
            for policy in HALF_POLICIES:
                layer = layer_cls(**init_kwargs, dtype=policy)
                output = layer(input_data)
                for weight in layer.weights:
                    self.assertEqual(weight.dtype, "float32")
                for tensor in keras.tree.flatten(output):
                    if tensor.dtype.is_floating:
                        self.assertEqual(
                            tensor.dtype.name, policy.split("_")[1]
                        )

    def run_model_saving_test(self, model, input_data, atol=0.0):
        expected = model(input_data)
        path = os.path.join(tempfile.mkdtemp(), "model.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
        self.assertAllCloseTree(restored(input_data), expected, atol=atol)
        return restored


def train_fixture_steps(output, steps, *flags, code=0):
    """`keras-elmo train` of `steps` steps on the bilm-tf fixture's text
    and vocabulary into `output`, with `flags`; asserts its exit code."""
    from keras_elmo_cli import main

    args = [
        "train", "--train", TRAIN_TEXT, "--vocab", TRAIN_VOCAB,
        "--output", str(output), "--steps", str(steps), *flags,
    ]  # fmt: skip
    assert main(args) == code


def embed_args(input_file, output_file, *extra):
    """The arguments of a quiet `keras-elmo embed` of the text
    `input_file` into `output_file` with the bilm-tf fixture model, and
    `extra` flags."""
    return [
        "embed", "--options", OPTIONS, "--weights", WEIGHTS,
        "--input", input_file, "--output", output_file, "--quiet", *extra,
    ]  # fmt: skip


def run_weights(run):
    """The weights of the model in the run directory `run`."""
    from keras_elmo.training.run_directory import load_run

    model, _, _ = load_run(str(run))
    return model.get_weights()


def train_interrupted_then_resumed(monkeypatch, train):
    """Runs `train(code=...)` (a `keras-elmo train` of a run folder) so that
    it stops right after its first checkpoint, as an interruption would
    (exit 130), then again to the end, resuming from that checkpoint."""
    from keras_elmo.training.training_callback import TrainingCallback

    saved = TrainingCallback.on_epoch_end

    def interrupted(self, epoch, logs=None):
        saved(self, epoch, logs)
        raise KeyboardInterrupt

    monkeypatch.setattr(TrainingCallback, "on_epoch_end", interrupted)
    train(code=130)
    monkeypatch.setattr(TrainingCallback, "on_epoch_end", saved)
    train(code=0)


def two_cpu_strategy():
    """A MirroredStrategy over two logical CPU devices (call before
    TensorFlow's runtime starts: in a subprocess of its own)."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def subprocess_report(function, *args, timeout=240):
    """Runs `function(*args)` (a "module:name" of tests/, args str) in a
    child Python and returns the JSON it printed on its last `REPORT `
    line; fails the test with the child's output if it fails."""
    import json
    import subprocess
    import sys

    module, name = function.split(":")
    code = f"import sys; from {module} import {name} as f; f(*sys.argv[1:])"
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    line = [x for x in result.stdout.splitlines() if x.startswith("REPORT ")]
    return json.loads(line[-1][len("REPORT ") :])


def change_lstm_weights(folder):
    """Adds 0.5 to the first LSTM weight of the bilm-tf model in `folder`
    (its `lm_weights.hdf5`): the same biLM source, other weights."""
    import h5py

    with h5py.File(os.path.join(folder, "lm_weights.hdf5"), "r+") as f:
        datasets = []
        f.visititems(
            lambda key, item: (
                datasets.append(key)
                if isinstance(item, h5py.Dataset) and "RNN" in key
                else None
            )
        )
        data = f[datasets[0]]
        data[...] = data[...] + 0.5


def folder_digest(folder):
    """The SHA-256 of the files in `folder` (not below it), names and
    bytes: equal only while none changed."""
    import hashlib

    digest = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            digest.update(name.encode() + f.read())
    return digest.hexdigest()


def checkpoint_step(run):
    """The step of the run folder `run`'s checkpoint (None: none yet)."""
    path = os.path.join(run, "checkpoint", "meta.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["step"]


def kill_and_resume(arguments, run, tmp_path, steps):
    """Runs `keras-elmo` with the `train` `arguments` (a child process, not
    quiet) into the run folder `run`, kills it (SIGKILL) once it has
    checkpointed step 10, runs it again, and checks that it resumed from
    the checkpoint and went on to `steps`."""
    command = [sys.executable, "-m", "keras_elmo_cli"]
    command += [a for a in arguments if a != "--quiet"]
    log = tmp_path / "first.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=out, env=subprocess_env()
        )
        try:
            deadline = time.time() + 120
            while (checkpoint_step(run) or 0) < 10:
                assert process.poll() is None, log.read_text()
                assert time.time() < deadline, "no checkpoint in time"
                time.sleep(0.2)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    killed_at = checkpoint_step(run)
    assert 10 <= killed_at < steps
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"from step {killed_at:,}" in result.stdout
    assert f"training steps {killed_at + 1:,}..{steps}" in result.stdout
    assert checkpoint_step(run) == steps


def with_changes(values, changes):
    """The JSON `values` with `changes` applied in place: {"a.b": value}
    sets values["a"]["b"]; a value of None deletes the key."""
    for path, value in changes.items():
        *parents, key = path.split(".")
        section = values
        for parent in parents:
            section = section[parent]
        if value is None:
            del section[key]
        else:
            section[key] = value
    return values


def fixture_options(**changes):
    """The bilm-tf fixture's options with `changes` ("lstm.dim": -5)
    applied (`with_changes`)."""
    with open(OPTIONS) as f:
        return with_changes(json.load(f), changes)
