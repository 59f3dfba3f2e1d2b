"""Long single-sequence inputs (protein ELMo, SeqVec style) on every backend.

An original-size biLM (4096 cells, 357 MB of weights; random values)
written in the AllenNLP format by `save_bilm`, loaded back by
`load_bilm(options, weights)` in one child process per backend, embeds
a 1,000- and a 5,000-residue sequence, one residue a token, batch of one
(`tests/backend_checks/long_sequence.py`). Checked: the peak resident
memory of each process stays bounded, every backend gives TensorFlow's
numbers, and a sequence embedded first gives what it gives after the
others (stateless: no warm-up sequence is needed).

Slow (minutes a backend on 2 cores): marked large.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import keras_elmo
from tests.helpers import ROOT
from tests.helpers import subprocess_env

SCRIPT = os.path.join(ROOT, "tests", "backend_checks", "long_sequence.py")
# Weights 357 MB; the input products of 5,000 steps 2 x 328 MB; measured
# peaks 2.9 GB (TensorFlow, eager), see docs/proteins.md.
PEAK_LIMIT_MB = 4000
ATOL = 1e-4


@pytest.fixture(scope="module")
def original_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("original")
    keras.utils.set_random_seed(26)
    bilm = keras_elmo.BiLM(units=4096, projection_dim=512, num_highway_layers=2)
    bilm.build()
    files = (str(folder / "options.json"), str(folder / "weights.hdf5"))
    keras_elmo.save_bilm(bilm, *files)
    return files


@pytest.fixture(scope="module")
def runs(original_files, tmp_path_factory):
    results = {}
    for backend in ("tensorflow", "jax", "torch"):
        out = tmp_path_factory.mktemp(backend)
        done = subprocess.run(
            [sys.executable, SCRIPT, *original_files, str(out)],
            env=subprocess_env(KERAS_BACKEND=backend),
            capture_output=True,
            text=True,
            timeout=3000,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        with open(out / "results.json") as f:
            report = json.load(f)
        assert report["backend"] == backend
        print(backend, report)
        results[backend] = (report, dict(np.load(out / "results.npz")))
    return results


@pytest.mark.large
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_long_sequences_in_bounded_memory(runs, backend):
    report, arrays = runs[backend]
    assert report["peak_mb"] < PEAK_LIMIT_MB, report
    assert arrays["long"].shape == (3, 1000, 1024)
    assert tuple(arrays["longest_shape"]) == (3, 5000, 1024)
    assert np.isfinite(arrays["long"]).all()
    assert np.isfinite(arrays["longest_mean"]).all()


@pytest.mark.large
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_long_sequences_match_tensorflow(runs, backend):
    _, expected = runs["tensorflow"]
    _, found = runs[backend]
    for name in ("first", "long", "longest_mean"):
        np.testing.assert_allclose(found[name], expected[name], atol=ATOL)


@pytest.mark.large
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_first_sequence_needs_no_warm_up(runs, backend):
    # Stateless: the sequence embedded first in a fresh process gives
    # exactly what it gives after 6,000 other residues.
    _, arrays = runs[backend]
    np.testing.assert_array_equal(arrays["first"], arrays["again"])
