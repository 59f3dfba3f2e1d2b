"""The deploy example (examples/deploy_tagger.py) end to end, quick: the
tagger trained, exported whole to ONNX and LiteRT, and measured by a
process that never imports TensorFlow."""

import pytest

from tests.helpers import run_example_quick


# About 2 minutes on 2 AMD EPYC cores: training, four exports, and the
# files timed at two batch sizes and two thread counts.
@pytest.mark.large
def test_quick_run_measures_every_file_without_tensorflow(tmp_path):
    results, stdout = run_example_quick("deploy_tagger.py", tmp_path, 900)
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
    assert "int8 file:" in stdout
