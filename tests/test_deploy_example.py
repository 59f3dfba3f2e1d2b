"""The deploy example (examples/deploy_tagger.py) end to end, quick: the
tagger trained, exported whole to ONNX and LiteRT, and measured by a
process that never imports TensorFlow."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "deploy_tagger.py")


# About 2 minutes on 2 AMD EPYC cores: training, four exports, and the
# files timed at two batch sizes and two thread counts.
@pytest.mark.large
def test_quick_run_measures_every_file_without_tensorflow(tmp_path):
    result = subprocess.run(
        [sys.executable, EXAMPLE, "--quick", "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        env=subprocess_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    with open(tmp_path / "results.json", encoding="utf-8") as f:
        results = json.load(f)
    files = results["files"]
    assert sorted(files) == [
        "litert-float32",
        "litert-int8",
        "onnx-float32",
        "onnx-int8",
    ]
    keras_accuracy = results["keras"]["dev_accuracy"]
    for name, entry in files.items():
        # The float32 files tag as the Keras tagger does.
        if name.endswith("float32"):
            assert entry["agreement"] == 1.0, name
            assert entry["dev_accuracy"] == keras_accuracy, name
        assert len(entry["latency_ms"]) == 4
        assert all(ms > 0 for ms in entry["latency_ms"].values())
    for runtime in ("onnx", "litert"):
        int8, float32 = files[f"{runtime}-int8"], files[f"{runtime}-float32"]
        assert int8["size_mib"] < float32["size_mib"]
    assert "int8 file:" in result.stdout
