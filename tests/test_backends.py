"""The layers on the JAX and PyTorch backends of Keras 3.

Keras fixes its backend per process, so each backend runs
`tests/backend_checks/check_backend.py` in a child process with
`KERAS_BACKEND` set (a second child runs the `large` checks); this
(TensorFlow) process gives it TensorFlow's fine-tuning gradients and
loads back the `.keras` file it saved. The fixtures are the ones the
TensorFlow tests check (bilm-tf stateless and stateful, the word-input
biLM, ELMoForManyLangs), to the same 1e-5.
"""

import importlib.util
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import keras_elmo
from tests.backend_checks import distinct_tokens
from tests.backend_checks import empty_batches
from tests.backend_checks import gradients
from tests.backend_checks import recurrence
from tests.helpers import ROOT
from tests.helpers import backend_env

SCRIPT = os.path.join(ROOT, "tests", "backend_checks", "check_backend.py")
ATOL = 1e-5
FIXTURE_CHECKS = (
    "bilm_tf_stateless",
    "words_stateless",
    "words_from_strings",
    "elmo_for_many_langs",
    "elmo_for_many_langs_from_token_lists",
    "characters_from_token_lists",
    "keras_files_saved_on_tensorflow",
)
# The stateful twins run in the child's `large` part (--run_large).
LARGE_FIXTURE_CHECKS = (
    "bilm_tf_stateful",
    "words_stateful",
    "elmo_for_many_langs_stateful",
)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    gradients.save_reference(str(folder / "gradients.npz"))
    distinct_tokens.save_reference(str(folder / "distinct_tokens.npz"))
    recurrence.save_reference(str(folder / "recurrence.npz"))
    empty_batches.save_reference(str(folder / "empty_batches.npz"))
    return str(folder / "gradients.npz")


def _available(module):
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module", params=["jax", "torch"])
def backend_run(request, reference, tmp_path_factory):
    return _run_checks(request.param, reference, tmp_path_factory, "default")


@pytest.fixture(scope="module", params=["jax", "torch"])
def backend_run_large(request, reference, tmp_path_factory):
    """The child's `large` checks (`check_backend.LARGE`)."""
    return _run_checks(request.param, reference, tmp_path_factory, "large")


def _run_checks(backend, reference, tmp_path_factory, part):
    if not _available(backend):
        pytest.skip(f"{backend} is not installed (pip install -e '.[test]')")
    out = tmp_path_factory.mktemp(f"{backend}-{part}")
    result = subprocess.run(
        [sys.executable, SCRIPT, reference, str(out), part],
        env=backend_env(backend),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    print(result.stdout)
    with open(out / "results.json") as f:
        results = json.load(f)
    assert results["backend"] == backend and results["part"] == part
    return results, out


def _value(results, name):
    value = results[name]
    assert not (isinstance(value, dict) and "error" in value), value["error"]
    return value


@pytest.mark.parametrize("check", FIXTURE_CHECKS)
def test_fixture_parity(backend_run, check):
    results, _ = backend_run
    assert _value(results, check) <= ATOL


@pytest.mark.large
@pytest.mark.parametrize("check", LARGE_FIXTURE_CHECKS)
def test_stateful_fixture_parity(backend_run_large, check):
    results, _ = backend_run_large
    assert _value(results, check) <= ATOL


def test_gradients_match_tensorflows_hand_written_ones(backend_run):
    results, _ = backend_run
    # PyTorch: with the LSTM weights packed for oneDNN, and without.
    names = ["gradients"]
    if results["backend"] == "torch":
        names.append("gradients_unpacked")
    for name in names:
        value = _value(results, name)
        assert value["all_nonzero"]
        assert value["max_relative"] <= gradients.RELATIVE_TOLERANCE, value


def test_unusual_token_rows_match_tensorflow(backend_run):
    """Every tail start and tail id, repeated rows, many chunks: the same
    embeddings and encoder gradients as TensorFlow's full-width ones."""
    results, _ = backend_run
    value = _value(results, "distinct_tokens")
    assert value["embeddings"] <= ATOL, value
    assert value["gradients_relative"] <= gradients.RELATIVE_TOLERANCE, value
    # The char CNN's table, 5 kernels and 5 biases; 2 highway layers of 4
    # weights; the projection's 2.
    assert value["weights"] == 21, value


@pytest.mark.large
def test_mixed_precision_runs_and_differentiates(backend_run_large):
    results, _ = backend_run_large
    value = _value(results, "mixed_precision")
    # The bounds of tests/test_bilm.py (bfloat16 keeps 8 mantissa bits,
    # float16 11), against this backend's float32 outputs.
    assert value["bfloat16"] < 0.03, value
    assert value["float16"] < 0.005, value
    assert value["bfloat16_zero_gradients"] == 0, value


def test_lstm_loop_with_clipping_matches_tensorflow(backend_run):
    """The time loop alone, its clips binding, rows of every length, a
    carried state: TensorFlow's outputs and the gradients of every
    argument (hand-written on each backend)."""
    results, _ = backend_run
    value = _value(results, "recurrence")
    assert value["outputs"] <= ATOL, value
    assert value["gradients_relative"] <= gradients.RELATIVE_TOLERANCE, value
    # Two LSTMs, seven arguments each.
    assert value["gradients"] == 2 * len(recurrence.ARGUMENTS) == 14, value


@pytest.mark.large
def test_empty_batches_match_tensorflow(backend_run_large):
    """No rows, empty rows only, empty rows among others
    (`empty_batches.COMPARED`): inference, the training call and its
    gradients, a stateful biLM around them, as on TensorFlow
    (`tests/test_empty_batches.py`)."""
    results, _ = backend_run_large
    value = _value(results, "empty_batches")
    assert value["outputs"] <= ATOL, value
    assert value["gradients_relative"] <= gradients.RELATIVE_TOLERANCE, value


@pytest.mark.large
def test_backend_fine_tuning(backend_run_large):
    results, _ = backend_run_large
    if results["backend"] == "jax":
        value = _value(results, "jax_fit_tagger")
        assert value["last_loss"] < value["first_loss"]
    else:
        value = _value(results, "torch_finetune_example")
        assert value["loss_after"] < value["loss_before"]
        # The head and the scalar mix (3 weights and gamma) are trained.
        assert value["trained"] > 4


def test_pytorch_checks_ran_the_packed_products(backend_run):
    results, _ = backend_run
    if results["backend"] == "torch":
        # x86 PyTorch builds carry oneDNN: the checks used the LSTM
        # loop's packed products, not only plain torch.mm.
        assert _value(results, "torch_packed_products")["available"]
    else:
        assert "torch_packed_products" not in results


@pytest.mark.large  # ~45 s of JAX compilation in the child
def test_the_documentation_examples_run(backend_run_large):
    # The Python blocks of README.md and docs/ that pick this backend.
    results, _ = backend_run_large
    assert _value(results, "docs_examples") == 0.0


def test_tensorflow_only_parts_say_so(backend_run):
    results, _ = backend_run
    assert _value(results, "tensorflow_only_error") == 0.0


def test_keras_file_saved_there_loads_here(backend_run):
    results, out = backend_run
    _value(results, "save_keras_file")
    with open(
        os.path.join(ROOT, "tests", "fixtures", "compat", "sentences.json")
    ) as f:
        sentences = json.load(f)
    model = keras.saving.load_model(out / "saved.keras")
    got = np.asarray(model(keras_elmo.batch_to_ids(sentences)))
    expected = np.load(out / "saved_outputs.npy")
    np.testing.assert_allclose(got, expected, atol=ATOL, rtol=0)
    # The mix weights set there came along (not the initial zeros).
    mix = next(
        layer
        for layer in model.layers
        if isinstance(layer, keras_elmo.ELMoEmbedding)
    ).scalar_mixes[0]
    assert np.abs(np.asarray(mix.scalar_weights)).max() > 0.1
