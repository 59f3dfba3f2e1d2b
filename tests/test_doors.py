"""The package doors (issue 62): plain imports, Keras's own backend choice,
TensorFlow only where a TensorFlow-only feature is used, the command line
and the runtime without Keras.

Each condition is checked where it holds: in a fresh process (what is
imported is a property of a process), by reading the sources (what a
module may import), or both.
"""

import ast
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import MODEL_DIR
from tests.helpers import ROOT
from tests.helpers import TRAIN_TEXT
from tests.helpers import TRAIN_VOCAB
from tests.helpers import backend_env
from tests.helpers import subprocess_env

# The Keras-free package, and the modules that would make it not so.
FRAMEWORKS = ("keras", "tensorflow", "tf_keras", "jax", "torch")


def _child(code, env=None, timeout=600):
    """`(stdout, stderr)` of `code` run in a new Python process."""
    ran = subprocess.run(
        [sys.executable, "-c", code],
        env=env or subprocess_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran.stdout, ran.stderr


def _last_json(out):
    return json.loads(out.strip().splitlines()[-1])


def _sources(package):
    root = os.path.join(ROOT, package)
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(directory, name)


def _imported_names(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


# === 1. Keras's own backend choice is never overridden ===


def test_the_backend_of_keras_json_is_kept(tmp_path):
    # A user whose keras.json says jax, and who imports keras_elmo first.
    home = tmp_path / "keras_home"
    home.mkdir()
    (home / "keras.json").write_text('{"backend": "jax"}')
    env = subprocess_env(KERAS_HOME=str(home))
    env.pop("KERAS_BACKEND", None)
    code = (
        "import os, sys, json\n"
        "import keras_elmo, keras\n"
        "import keras_elmo_cli\n"
        "print(json.dumps([keras.backend.backend(),\n"
        "    os.environ.get('KERAS_BACKEND'),\n"
        "    keras_elmo_cli.keras_backend(),\n"
        "    'tensorflow' in sys.modules]))\n"
    )
    backend, variable, cli, tensorflow = _last_json(_child(code, env)[0])
    assert (backend, variable, cli, tensorflow) == ("jax", None, "jax", False)


def test_no_module_of_the_packages_sets_the_backend():
    for package in ("elmo_core", "keras_elmo", "keras_elmo_cli"):
        for path in _sources(package):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            assert 'environ.setdefault("KERAS_BACKEND"' not in text, path
            assert 'environ["KERAS_BACKEND"] =' not in text, path


# === 2. On JAX and PyTorch, no TensorFlow until a TensorFlow-only feature ===

WITHOUT_TENSORFLOW = r"""
import json, os, sys, tempfile
import keras_elmo, keras
seen = {"import": "tensorflow" in sys.modules}
bilm = keras_elmo.load_bilm(sys.argv[1])
bilm(keras_elmo.batch_to_ids([["Hello", "world"], ["Hi"]]))
elmo = keras_elmo.ELMoEmbedding(bilm, dropout=0.0)
vectors = elmo([["Hello", "world"], ["Hi"]])
tokens = keras.Input((None, 50), dtype="int32")
model = keras.Model(tokens, keras_elmo.ELMoEmbedding(bilm)(tokens))
model(keras_elmo.batch_to_ids([["Hi"]]))
seen["layers"] = "tensorflow" in sys.modules
try:
    keras_elmo.train(sys.argv[2], tempfile.mkdtemp(), vocab=sys.argv[3],
                     steps=1, verbose=0)
except keras_elmo.KerasElmoError as error:
    seen["train says"] = "TensorFlow backend only" in str(error)
print(json.dumps(seen))
"""


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_no_tensorflow_on_another_backend(backend):
    # (Keras's own `model.save` imports TensorFlow where it is installed,
    # for a plain keras.layers.LSTM model too: its serialization checks
    # for a tf.TensorShape. Loading after either import order is
    # tests/test_fresh_process_load.py.)
    code = WITHOUT_TENSORFLOW
    env = backend_env(backend)
    argv = f"import sys; sys.argv[1:] = {[MODEL_DIR, TRAIN_TEXT, TRAIN_VOCAB]}"
    seen = _last_json(_child(argv + "\n" + code, env)[0])
    assert seen == {"import": False, "layers": False, "train says": True}


def test_the_door_imports_no_tensorflow_module_at_top():
    # Every module `import keras_elmo` imports imports TensorFlow inside
    # the functions that need it, never at its top.
    code = (
        "import sys, json\n"
        "sys.modules['tensorflow'] = None\n"  # fails any import of it
        "import keras_elmo\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m.startswith('keras_elmo'))))\n"
    )
    imported = _last_json(_child(code, backend_env("jax"))[0])
    assert "keras_elmo.layers.bilm" in imported
    assert "keras_elmo.data" not in imported


# === 3. load_model after either import order: tests/test_fresh_process_load.py


def test_every_registering_module_is_imported_by_the_door():
    # No list kept by hand: the decorator found in the sources, the
    # module imported by a plain `import keras_elmo`.
    registering = set()
    for path in _sources("keras_elmo"):
        with open(path, encoding="utf-8") as f:
            if "register_keras_serializable" in f.read():
                relative = os.path.relpath(path, ROOT)[: -len(".py")]
                registering.add(relative.replace(os.sep, "."))
    code = (
        "import sys, json\nimport keras_elmo\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    imported = set(_last_json(_child(code, backend_env("jax"))[0]))
    assert len(registering) >= 10, registering
    assert registering <= imported, registering - imported


# === 4. keras-elmo --help imports neither Keras nor TensorFlow ===


@pytest.mark.parametrize(
    "argv", [["--help"], ["train", "--help"], ["--version"]]
)
def test_help_imports_no_framework(argv):
    code = (
        "import sys, json\n"
        f"sys.argv = ['keras-elmo', *{argv!r}]\n"
        "from keras_elmo_cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    status = main(sys.argv[1:])\n"
        "print(json.dumps([status, sorted(m for m in sys.modules\n"
        "    if m.split('.')[0] in %r)]))\n" % (FRAMEWORKS + ("h5py",),)
    )
    status, frameworks = _last_json(_child(code)[0])
    assert status == 0 and frameworks == []


# === 5. The runtime without TensorFlow or Keras installed ===

# Python raises ImportError for a module whose sys.modules entry is None:
# as if they were not installed.
NOT_INSTALLED = "import sys\nsys.modules.update(dict.fromkeys(%r))\n" % (
    FRAMEWORKS,
)


def test_the_runtime_runs_without_keras_or_tensorflow(fixture_onnx, tmp_path):
    code = NOT_INSTALLED + (
        "import json\n"
        "from elmo_core.runtime import ONNXBiLM\n"
        f"out = ONNXBiLM({fixture_onnx!r})([['Hello', 'world'], ['Hi']])\n"
        "from keras_elmo_cli import main\n"
        f"status = main(['embed', '--model', {fixture_onnx!r}, '--input',\n"
        f"    {TRAIN_TEXT!r}, '--output', {str(tmp_path / 'e.hdf5')!r},\n"
        "    '--quiet'])\n"
        "print(json.dumps([out['layer_outputs'][2].shape, status]))\n"
    )
    shape, status = _last_json(_child(code)[0])
    assert shape == [2, 2, 32] and status == 0
    import h5py

    with h5py.File(tmp_path / "e.hdf5") as f:
        assert np.isfinite(f["0"][...]).all()


def test_elmo_core_never_imports_a_framework():
    # Not even inside a function: the whole package runs without them.
    for path in _sources("elmo_core"):
        imported = {name.split(".")[0] for name in _imported_names(path)}
        assert not imported & set(FRAMEWORKS), (path, imported)
        assert not {"keras_elmo", "keras_elmo_cli"} & imported, path


# === 6. Every public name of a package is in its __init__ ===

PUBLIC = (
    "elmo_core",
    "elmo_core.errors",
    "elmo_core.ids",
    "elmo_core.preparation",
    "elmo_core.pretrained",
    "elmo_core.proteins",
    "elmo_core.runtime",
    "elmo_core.text",
    "elmo_core.embedding_files",
    "keras_elmo",
    "keras_elmo.corpus",
    "keras_elmo.data",
    "keras_elmo.export",
    "keras_elmo.layers",
    "keras_elmo.models",
    "keras_elmo.optimizers",
    "keras_elmo.beam",
)


def _door(package):
    return os.path.join(ROOT, *package.split("."), "__init__.py")


@pytest.mark.parametrize("package", PUBLIC)
def test_a_door_binds_each_public_name_by_a_plain_import(package):
    with open(_door(package), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    bound, listed = set(), None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            bound |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
            assert node.name != "__getattr__", package  # no lazy door
        elif isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "__all__" for t in node.targets
        ):
            listed = {element.value for element in node.value.elts}
    if package == "elmo_core.errors":  # its family, no __all__ needed
        listed = listed or bound
    assert listed, f"{package} names no __all__"
    assert listed <= bound, listed - bound


def test_no_import_hook_is_left():
    for package in ("elmo_core", "keras_elmo", "keras_elmo_cli"):
        for path in _sources(package):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for hook in ("sys.meta_path", "MetaPathFinder", "importlib.abc"):
                assert hook not in text, (path, hook)


@pytest.mark.parametrize("name", ["characters", "runtime"])
def test_the_old_names_warn_and_still_work(name):
    code = (
        "import warnings, json\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    from keras_elmo.{name} import batch_to_ids\n"
        "print(json.dumps([str(w.message) for w in caught\n"
        "    if issubclass(w.category, DeprecationWarning)]))\n"
    )
    messages = _last_json(_child(code, backend_env("jax"))[0])
    assert any(f"elmo_core.{name}" in message for message in messages)
