import importlib.util
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# One thread an op in every test process and child: two workers (and
# their children) share the machine's cores, and ops split across every
# core each fight the other worker for them (7-10 % less CPU time for the
# same tests on a 2-core AMD EPYC). tests/test_training_threads.py clears
# the variable where it checks the rule that sets it.
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

import elmo_core  # noqa: E402
import keras_elmo  # noqa: E402

# keras_elmo/beam imports Apache Beam (the `beam` extra); where it is not
# installed, pytest does not import its modules for their doctests (and
# tests/test_embed_corpus_beam.py skips).
if importlib.util.find_spec("apache_beam") is None:
    collect_ignore_glob = ["keras_elmo/beam/*.py"]
# The deprecated names warn when imported (tests/test_doors.py checks it).
collect_ignore = ["keras_elmo/characters.py", "keras_elmo/runtime.py"]


def pytest_addoption(parser):
    parser.addoption(
        "--run_large",
        action="store_true",
        default=False,
        help="also run the tests marked large (slow)",
    )


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run_large"):
        return
    skip = pytest.mark.skip(reason="large test; pass --run_large to run it")
    for item in items:
        if "large" in item.keywords:
            item.add_marker(skip)


# The things tests share, built once per test run (tests/shared.py): the
# bilm-tf fixture biLM (tests/fixtures/bilm-tf/model) exported by the
# command line, float32, and one small run of `train` and of `distill`.
# A test that changes one works on a copy (tests.shared.copied).


@pytest.fixture(scope="session")
def fixture_onnx(tmp_path_factory):
    """The fixture biLM as ONNX (`keras-elmo export-onnx`)."""
    from tests.shared import export_fixture
    from tests.shared import shared_path

    build = export_fixture("export-onnx")
    return shared_path(tmp_path_factory, "fixture.onnx", build)


@pytest.fixture(scope="session")
def fixture_litert(tmp_path_factory):
    """The fixture biLM as LiteRT (`keras-elmo export-litert`)."""
    from tests.shared import export_fixture
    from tests.shared import shared_path

    build = export_fixture("export-litert")
    return shared_path(tmp_path_factory, "fixture.tflite", build)


@pytest.fixture(scope="session")
def fixture_savedmodel(tmp_path_factory):
    """The fixture biLM as a SavedModel (`keras-elmo export-savedmodel`)."""
    from tests.shared import export_fixture
    from tests.shared import shared_path

    build = export_fixture("export-savedmodel")
    return shared_path(tmp_path_factory, "fixture_savedmodel", build)


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """A run folder of `keras-elmo train` (tests.shared.train_run)."""
    from tests.shared import shared_path
    from tests.shared import train_run

    return shared_path(tmp_path_factory, "trained_run", train_run)


@pytest.fixture(scope="session")
def distilled_run(tmp_path_factory):
    """A run folder of `keras-elmo distill` (tests.shared.distill_run)."""
    from tests.shared import distill_run
    from tests.shared import shared_path

    return shared_path(tmp_path_factory, "distilled_run", distill_run)


@pytest.fixture(scope="session", autouse=True)
def _temporary_files_in_the_test_run(tmp_path_factory):
    """`tempfile`'s folder (the doctests' `mkdtemp()`, TensorFlow's
    autograph files) inside the test run's own temporary folder, which
    pytest removes after a few runs, instead of the system's `/tmp`."""
    import tempfile

    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("tempfile"))
    yield
    tempfile.tempdir = saved


# The exported files a doctest may name, and the shared fixture of each:
# the runtime's examples open a file rather than export one each.
DOCTEST_FILES = {
    "onnx_file": "fixture_onnx",
    "litert_file": "fixture_litert",
    "savedmodel_folder": "fixture_savedmodel",
}


@pytest.fixture(autouse=True)
def doctest_namespace_names(doctest_namespace, request):
    doctest_namespace.update(
        elmo_core=elmo_core, keras=keras, keras_elmo=keras_elmo, np=np, tf=tf
    )
    if isinstance(request.node, pytest.DoctestItem):
        source = "".join(e.source for e in request.node.dtest.examples)
        for name, fixture in DOCTEST_FILES.items():
            if name in source:
                doctest_namespace[name] = request.getfixturevalue(fixture)


@pytest.fixture(autouse=True)
def _reset_policy():
    yield
    keras.config.set_dtype_policy("float32")
