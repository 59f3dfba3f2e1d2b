"""A `.keras` file holding keras_elmo's classes loads in a new process
that imports keras and keras_elmo, in either order, and does nothing
else, on every backend.

One file of every public layer (on TensorFlow also the language model
compiled with the package's optimizers and learning-rate schedule, and a
model around `SavedModelLayer`) is saved with its inputs and outputs, by
this process on TensorFlow and by a child on the other backends; fresh
children load each file and give the same outputs.
"""

import importlib.util
import json
import os
import subprocess
import sys

import keras
import pytest

import keras_elmo
from tests.backend_checks import fresh_process_save
from tests.helpers import MODEL_DIR
from tests.helpers import ROOT
from tests.helpers import backend_env
from tests.helpers import subprocess_env

SAVE = os.path.join(ROOT, "tests", "backend_checks", "fresh_process_save.py")

# The fresh process: the two imports, the load, the call (in one of the
# two orders: the load alone shows the classes were there); nothing else.
LOAD = r"""
import json, os, sys
folder, first, call = sys.argv[1], sys.argv[2], sys.argv[3] == "call"
if first == "keras":
    import keras
    import keras_elmo
else:
    import keras_elmo
    import keras
import numpy as np
from tests.backend_checks.held_classes import held_classes

report = {"classes": [], "worst": {}}
for name in ("layers", "hub", "language_model", "distilled_model"):
    path = os.path.join(folder, name + ".keras")
    if not os.path.exists(path):
        continue
    model = keras.saving.load_model(path)
    saved = np.load(os.path.join(folder, name + ".npz"))
    inputs = saved["inputs"]
    if inputs.dtype.kind == "S":
        import tensorflow as tf
        inputs = tf.constant(inputs)
    if name in ("language_model", "distilled_model"):
        inputs = {"character_ids": inputs}
    report["classes"] += held_classes(model)
    if not call:
        continue
    outputs = keras.tree.flatten(model(inputs))
    report["worst"][name] = max(
        float(np.max(np.abs(
            keras.ops.convert_to_numpy(x).astype("float64")
            - saved[f"out{i}"].astype("float64")
        )))
        for i, x in enumerate(outputs)
    )
print(json.dumps(report))
"""


def _run(args, backend):
    return subprocess.Popen(
        [sys.executable, *args],
        env=backend_env(backend),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process):
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    return out


def _finish_all(processes):
    """`{key: stdout}`, every process waited for before any is judged."""
    ran = {
        key: process.communicate(timeout=600)
        for key, process in processes.items()
    }
    for key, process in processes.items():
        assert process.returncode == 0, (key, ran[key][1][-3000:])
    return {key: out for key, (out, _) in ran.items()}


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_saved_files_load_in_a_fresh_process(
    backend, fixture_savedmodel, tmp_path
):
    if backend != "tensorflow" and importlib.util.find_spec(backend) is None:
        pytest.fail(f"{backend} is not installed (pip install -e '.[test]')")
    if backend == "tensorflow":  # saved here: this process runs on it
        fresh_process_save.main(MODEL_DIR, fixture_savedmodel, str(tmp_path))
    else:
        _finish(_run([SAVE, MODEL_DIR, "", str(tmp_path)], backend))
    with open(tmp_path / "classes.json") as f:
        saved_classes = set(json.load(f))
    saved_outputs = list(tmp_path.glob("*.npz"))
    loads = {
        first: _run(["-c", LOAD, str(tmp_path), first, call], backend)
        for first, call in (("keras", "call"), ("keras_elmo", "load"))
    }
    for first, out in _finish_all(loads).items():
        report = json.loads(out.strip().splitlines()[-1])
        assert set(report["classes"]) == saved_classes, first
        for name, worst in report["worst"].items():
            assert worst <= 1e-6, (first, name, worst)
        if first == "keras":
            assert len(report["worst"]) == len(saved_outputs), report
    if backend == "tensorflow":
        assert _public_classes() <= saved_classes


def _public_classes():
    """The names of keras_elmo's public layers, models and optimizers."""
    found = set()
    for package in (
        keras_elmo,
        keras_elmo.layers,
        keras_elmo.models,
        keras_elmo.optimizers,
        keras_elmo.export,
    ):
        for name in package.__all__:
            value = getattr(package, name)
            if isinstance(value, type) and issubclass(
                value, (keras.layers.Layer, keras.optimizers.Optimizer)
            ):
                found.add(name)
    return found


# Imports every module of the package (the Beam adapters need the `beam`
# extra, which the test extra installs) and lists what registered itself.
REGISTRY = r"""
import importlib, json, pkgutil, sys
import keras_elmo, keras
def registered():
    names = keras.saving.get_custom_objects()
    return sorted(k for k in names if k.startswith("keras_elmo>"))
at_import = registered()
for module in pkgutil.walk_packages(keras_elmo.__path__, "keras_elmo."):
    if not module.name.endswith("__main__"):
        importlib.import_module(module.name)
print(json.dumps({"at_import": at_import, "all": registered()}))
"""


def _child(code):
    """The standard output of `code` run in a new Python process."""
    ran = subprocess.run(
        [sys.executable, "-c", code],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran.stdout


def test_every_registered_class_is_registered_at_import():
    registry = json.loads(_child(REGISTRY).strip().splitlines()[-1])
    assert len(registry["all"]) >= 12, registry
    assert registry["at_import"] == registry["all"]
