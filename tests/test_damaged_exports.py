"""Damaged exports and wrong arguments to the runtimes (issue 18).

A truncated `.onnx` / `.tflite`, metadata whose numbers are not numbers,
`num_threads="two"` and float character ids: each a `KerasElmoError`
naming the file or the argument, never a crash inside the runtime.
"""

import json

import numpy as np
import onnx
import pytest

from elmo_core.errors import KerasElmoError
from elmo_core.runtime import LiteRTBiLM
from elmo_core.runtime import ONNXBiLM

RUNTIMES = {"onnx": ONNXBiLM, "litert": LiteRTBiLM}
SUFFIX = {"onnx": ".onnx", "litert": ".tflite"}


@pytest.fixture(scope="module")
def files(fixture_onnx, fixture_litert):
    """The shared float32 exports of the fixture biLM (read only)."""
    return {"onnx": fixture_onnx, "litert": fixture_litert}


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_truncated_exports_name_the_file(files, runtime, fraction, tmp_path):
    with open(files[runtime], "rb") as f:
        data = f.read()
    path = str(tmp_path / f"cut{SUFFIX[runtime]}")
    with open(path, "wb") as f:
        f.write(data[: int(len(data) * fraction)])
    with pytest.raises(KerasElmoError) as raised:
        RUNTIMES[runtime](path)
    assert path in str(raised.value)
    assert f"export-{runtime}" in str(raised.value)


@pytest.mark.parametrize(
    "key, value",
    [
        ("num_layers", "two"),
        ("num_layers", -1),
        ("projection_dim", 1.5),
        ("projection_dim", None),
        ("export_options", "x"),
        ("input", 3),
    ],
)
def test_metadata_values_that_are_not_numbers(files, tmp_path, key, value):
    model = onnx.load(files["onnx"])
    (prop,) = [p for p in model.metadata_props if p.key == "keras_elmo"]
    metadata = dict(json.loads(prop.value), **{key: value})
    prop.value = json.dumps(metadata)
    path = str(tmp_path / "edited.onnx")
    onnx.save(model, path)
    with pytest.raises(KerasElmoError) as raised:
        ONNXBiLM(path)
    message = str(raised.value)
    assert path in message and "metadata is damaged" in message, message
    assert f"`{key}" in message, message


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("threads", ["two", 0, 1.5, True])
def test_num_threads_is_checked(files, runtime, threads):
    with pytest.raises(KerasElmoError, match="`num_threads` must be "):
        RUNTIMES[runtime](files[runtime], num_threads=threads)


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_float_character_ids_are_refused(files, runtime):
    model = RUNTIMES[runtime](files[runtime], num_threads=1)
    with pytest.raises(
        KerasElmoError, match="integer array .* Received: <float32 tensor"
    ):
        model(np.ones((1, 2, 50), "float32"))
