"""examples/serve_savedmodel.py runs end to end (with the test biLM when the
main job's run is absent)."""

import os
import subprocess
import sys

import pytest

from tests.helpers import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "bilm-tf", "model")


@pytest.mark.large
def test_serve_example(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "examples", "serve_savedmodel.py"),
            "--options",
            os.path.join(FIXTURE, "options.json"),
            "--weights",
            os.path.join(FIXTURE, "lm_weights.hdf5"),
            "--output",
            str(tmp_path / "elmo"),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(),
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "serving from a fresh process without keras_elmo" in out
    assert "default/elmo           (2, 7, 32)" in out
    assert "latency, batch of 64 x 20 tokens" in out
