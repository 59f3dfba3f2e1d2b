"""LiteRT export: builtin ops only, float32 parity with the Keras biLM (and
bilm-tf), float16 and int8 within stated bounds and smaller, dynamic
shapes, metadata, and clear errors."""

import json
import os
import sys

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert")

from ai_edge_litert import schema_py_generated as schema  # noqa: E402
from ai_edge_litert.interpreter import Interpreter  # noqa: E402

import keras_elmo  # noqa: E402
from elmo_core.errors import KerasElmoError  # noqa: E402
from elmo_core.runtime.litert import read_metadata  # noqa: E402
from keras_elmo.export import to_litert  # noqa: E402
from tests.deploy_helpers import assert_bilm_outputs_close  # noqa: E402
from tests.deploy_helpers import batches  # noqa: E402
from tests.deploy_helpers import fixture_bilm  # noqa: E402
from tests.deploy_helpers import fixture_sentences  # noqa: E402
from tests.deploy_helpers import fixture_top_layer  # noqa: E402
from tests.deploy_helpers import litert_operator_codes  # noqa: E402
from tests.deploy_helpers import relative_errors  # noqa: E402

MIX = [0.5, -0.25, 1.0]


@pytest.fixture(scope="module")
def bilm():
    return fixture_bilm()


@pytest.fixture(scope="module")
def exported(bilm, tmp_path_factory):
    root = tmp_path_factory.mktemp("litert")
    return {
        precision: to_litert(
            bilm,
            str(root / f"{precision}.tflite"),
            precision=precision,
            scalar_mix=MIX,
        )
        for precision in ("float32", "float16", "int8")
    }


def _run(path, ids):
    runner = Interpreter(model_path=path).get_signature_runner()
    values = runner(character_ids=ids)
    return {
        "layer_outputs": [values[f"layer_{k}"] for k in range(3)],
        "token_embeddings": values["layer_0"][..., :16],
        "mask": values["mask"],
        "elmo": values["elmo"],
    }


def test_float32_matches_keras_on_padded_batches_of_any_shape(bilm, exported):
    for sentences in batches():
        ids = keras_elmo.batch_to_ids(sentences)
        got = _run(exported["float32"], ids)
        want = bilm(ids)
        assert_bilm_outputs_close(got, want, atol=1e-5)
        mix = keras_elmo.layers.ScalarMix(initial_scalar_weights=MIX)
        np.testing.assert_allclose(
            got["elmo"],
            np.asarray(mix(want["layer_outputs"], mask=want["mask"])),
            atol=1e-5,
            rtol=0,
        )


def test_float32_matches_bilm_tf(exported):
    ids = keras_elmo.batch_to_ids(fixture_sentences())
    got = _run(exported["float32"], ids)
    for k in range(3):
        target = fixture_top_layer(k)
        top = got["layer_outputs"][-1][k, : target.shape[1]]
        np.testing.assert_allclose(
            np.stack([top[:, :16], top[:, 16:]]), target, atol=1e-5, rtol=0
        )


@pytest.mark.parametrize(
    "precision, bound", [("float16", 0.002), ("int8", 0.02)]
)
def test_reduced_precision_stays_within_its_bound(
    bilm, exported, precision, bound
):
    # Measured on this fixture, Intel Xeon (AVX-512 + VNNI + AMX): float16
    # max abs <= 2e-4, int8 <= 0.006. Both hold on AVX2 without VNNI:
    # float16 weights are dequantized at load and run in float32; int8
    # (XNNPACK's dynamically quantized kernels) multiplies int8 x int8
    # sign-extended to int16 pairs that add into int32 (no int16
    # saturation), and the issue-21 run on an AMD AVX2-only CPU measured
    # LiteRT int8 as accurate as here (1.1-1.4 % mean relative error at
    # the original size).
    ids = keras_elmo.batch_to_ids(batches()[0])
    errors = relative_errors(_run(exported[precision], ids), bilm(ids))
    for max_abs, mean_relative, cosine in errors:
        assert max_abs < bound and mean_relative < bound, errors
        assert cosine > 0.999
    assert max(e[0] for e in errors) > 1e-6


def _model(path):
    with open(path, "rb") as f:
        return schema.ModelT.InitFromPackedBuf(f.read(), 0)


def test_builtin_ops_only(exported):
    for path in exported.values():
        codes = litert_operator_codes(path)
        # The LSTM loops are WHILE ops (dynamic time).
        assert schema.BuiltinOperator.WHILE in codes


def test_int8_weights_are_int8_and_the_file_smaller(exported):
    sizes = {p: os.path.getsize(path) for p, path in exported.items()}
    assert sizes["float16"] < 0.65 * sizes["float32"]
    assert sizes["int8"] < 0.5 * sizes["float32"]
    model = _model(exported["int8"])

    def int8_weights(subgraph):
        return [
            t
            for t in subgraph.tensors
            if t.type == schema.TensorType.INT8
            and model.buffers[t.buffer].data is not None
        ]

    bodies = [g for g in model.subgraphs if g.name.endswith(b"_body")]
    # Each LSTM loop body reads its recurrent and projection kernels int8.
    assert len(bodies) == 4
    assert all(len(int8_weights(body)) == 2 for body in bodies)
    # Outside: the input kernels and the highway and projection kernels.
    assert len(int8_weights(model.subgraphs[0])) >= 4 + 2 * 2


def test_metadata_carries_options_and_version(exported):
    for precision, path in exported.items():
        info = json.loads(read_metadata(path, schema))
        assert info["format"] == "litert"
        assert info["keras_elmo_version"] == keras_elmo.__version__
        assert info["precision"] == precision
        assert info["num_layers"] == 2 and info["projection_dim"] == 16
        assert info["export_options"]["deduplicate_tokens"] is False


def test_bad_arguments_raise_clear_errors(bilm, tmp_path):
    with pytest.raises(KerasElmoError, match="Received: precision='int4'"):
        to_litert(bilm, str(tmp_path / "m.tflite"), precision="int4")
    with pytest.raises(KerasElmoError, match="must be a list of numbers"):
        to_litert(bilm, str(tmp_path / "m.tflite"), scalar_mix="equal")
    assert not list(tmp_path.iterdir())


def test_missing_extra_names_it(bilm, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)
    with pytest.raises(KerasElmoError, match=r"keras-elmo\[litert\]"):
        to_litert(bilm, str(tmp_path / "m.tflite"))
    assert not list(tmp_path.iterdir())


@pytest.mark.large
def test_float32_matches_keras_at_original_size(tmp_path):
    bilm = keras_elmo.BiLM()
    bilm.build()
    path = to_litert(bilm, str(tmp_path / "original.tflite"))
    runner = Interpreter(model_path=path).get_signature_runner()
    for sentences in batches()[:2]:
        ids = keras_elmo.batch_to_ids(sentences)
        values = runner(character_ids=ids)
        got = {
            "layer_outputs": [values[f"layer_{k}"] for k in range(3)],
            "token_embeddings": values["layer_0"][..., :512],
            "mask": values["mask"],
        }
        assert_bilm_outputs_close(got, bilm(ids), atol=1e-5)
