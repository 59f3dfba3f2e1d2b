"""`.keras` biLM sources (`keras_elmo.sources.keras_file`): the same audit
as the other weight formats (issue 24): what a file is that is not a
.keras file, every zip member checked, config.json bounded, each BiLM's
sizes checked before anything is built, and no network or other file
reached while loading."""

import os
import shutil
import time
import zipfile

import numpy as np
import pytest

import keras_elmo
from elmo_core.errors import KerasElmoError
from elmo_core.errors import WeightFileError
from keras_elmo.sources import keras_file
from tests import hostile_files
from tests.helpers import WEIGHTS
from tests.model_server import read_bytes
from tests.model_server import refuse_other_hosts


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """`{"bilm": a .keras of a model around a BiLM, "embedding": one of an
    ELMoEmbedding}`, and the BiLM."""
    import keras

    folder = tmp_path_factory.mktemp("keras_files")
    bilm = keras_elmo.layers.BiLM(
        filters=[[1, 4]],
        char_embedding_dim=4,
        num_highway_layers=0,
        units=8,
        projection_dim=4,
    )
    bilm.build()
    inputs = keras.Input((None, 50), dtype="int32")
    model = keras.Model(inputs, bilm(inputs)["token_embeddings"])
    paths = {"bilm": str(folder / "bilm.keras")}
    model.save(paths["bilm"])
    embedding = keras.Sequential([keras_elmo.ELMoEmbedding(bilm, dropout=0.0)])
    embedding.build((None, None, 50))
    paths["embedding"] = str(folder / "embedding.keras")
    embedding.save(paths["embedding"])
    return paths, bilm


def _refused(path, *words, error=WeightFileError):
    started = time.perf_counter()
    with pytest.raises(error) as raised:
        keras_elmo.load_bilm(path)
    assert time.perf_counter() - started < 20
    message = str(raised.value)
    for word in words:
        assert word in message, message
    return message


def test_good_files_load(saved):
    paths, bilm = saved
    ids = np.ones((1, 2, 50), "int32")
    expected = bilm(ids)["token_embeddings"]
    for path in paths.values():
        loaded = keras_elmo.load_bilm(path)
        np.testing.assert_array_equal(loaded(ids)["token_embeddings"], expected)


# === Wrong blame: what the file is (class 6) ===


def test_truncated_file_is_named_truncated(saved, tmp_path):
    data = read_bytes(saved[0]["bilm"])
    path = tmp_path / "cut.keras"
    path.write_bytes(data[: len(data) // 2])
    _refused(str(path), "is not a whole .keras file", "(truncated?)")


@pytest.mark.parametrize(
    "kind, words",
    [
        ("hdf5", "it is an HDF5 file (a Keras 2 .h5 model, or hdf5 weights)"),
        ("legacy-pickle", "it is a Python pickle (a PyTorch .pkl or .pt"),
        ("torch-zip", "is a PyTorch file (torch.save) without config.json"),
        ("empty", "it is empty"),
        ("text", "it is not a zip archive"),
    ],
)
def test_other_files_renamed_keras_are_named(tmp_path, kind, words):
    path = str(tmp_path / "model.keras")
    tensors = {"w": {"values": np.zeros(3, "float32")}}
    if kind == "hdf5":
        shutil.copy(WEIGHTS, path)
    elif kind in ("legacy-pickle", "torch-zip"):
        layout = "legacy" if kind == "legacy-pickle" else "zip"
        hostile_files.torch_file(path, tensors, layout=layout)
    else:
        with open(path, "w") as f:
            f.write("" if kind == "empty" else "hello\n")
    message = _refused(path, path, words)
    assert "not found" not in message.lower()


def test_corrupted_member_is_named(saved, tmp_path):
    data = bytearray(read_bytes(saved[0]["bilm"]))
    data[data.find(b"HDF") + 300] ^= 0xFF  # inside model.weights.h5
    path = tmp_path / "damaged.keras"
    path.write_bytes(bytes(data))
    message = _refused(str(path), "member 'model.weights.h5' is damaged (CRC")
    assert "BadZipFile" not in message


# === Bounds (class 3) ===


@pytest.mark.parametrize("declared", [None, 1000], ids=["declared", "lying"])
def test_config_json_deflate_bomb_is_refused(saved, tmp_path, declared):
    path = hostile_files.keras_bomb(
        saved[0]["bilm"], str(tmp_path / "bomb.keras"), declared=declared
    )
    assert os.path.getsize(path) < 1 << 20  # 64 MiB inside
    if declared:
        words = "member 'config.json' inflates to more than the 1,000 bytes"
    else:  # more than 100x the file's size
        words = "its members declare 67,148,984 bytes unpacked, more than"
    _refused(path, words)


def test_config_json_larger_than_the_bound(saved, tmp_path, monkeypatch):
    monkeypatch.setattr(keras_file, "MAX_CONFIG_BYTES", 1000)
    _refused(saved[0]["bilm"], "config.json is larger than 1,000 bytes")


@pytest.mark.parametrize(
    "config, words",
    [
        (b'{"a": ' + b"9" * 6000 + b"}", "holds an integer of 6,000 digits"),
        (b"[" * 100_000 + b"]" * 100_000, "more than 100 levels deep"),
        (b"[" * 150 + b"]" * 150, "more than 100 levels deep"),
        (b"{not json", "config.json is not valid JSON"),
    ],
    ids=["digits", "deep", "deeper-than-bound", "not-json"],
)
def test_config_json_values_are_bounded(saved, tmp_path, config, words):
    path = hostile_files.keras_file_with(
        saved[0]["bilm"], str(tmp_path / "x.keras"), config=config
    )
    _refused(path, f"{path}: config.json", words)


@pytest.mark.parametrize(
    "key, value, words, error",
    [
        ("units", 10**9, "units=1,000,000,000", KerasElmoError),
        ("units", "512", "`units` must be an integer", KerasElmoError),
        ("num_layers", 10**6, "`num_layers` gives 1,000,000 layers", None),
        ("filters", [[1, 4]] * 10**5, "`filters` gives 100,000 layers", None),
        ("dropout", float("nan"), "`dropout`", WeightFileError),
    ],
)
def test_bilm_sizes_are_checked_before_building(
    saved, tmp_path, key, value, words, error
):
    def change(config):
        for bilm in hostile_files.layer_configs(config, "BiLM"):
            bilm[key] = value

    for kind in ("bilm", "embedding"):
        path = hostile_files.keras_file_with(
            saved[0][kind], str(tmp_path / f"{kind}.keras"), change
        )
        _refused(path, path, words, error=error or KerasElmoError)


# === A file load is local only (class 5) ===


@pytest.mark.parametrize(
    "key, value",
    [
        ("bilm", "http://elmo.example.org/options.json"),
        ("bilm", "original"),
        ("vocabulary", "/etc/passwd"),
    ],
)
def test_a_config_that_names_a_source_is_refused(
    saved, tmp_path, monkeypatch, key, value
):
    refuse_other_hosts(monkeypatch)
    from elmo_core.pretrained import local_files

    def no_download(*args, **kwargs):
        raise AssertionError("a .keras load tried to download")

    # Where the cache looks the downloader up.
    monkeypatch.setattr(local_files, "download_file", no_download)

    def change(config):
        for embedding in hostile_files.layer_configs(config, "ELMoEmbedding"):
            embedding[key] = value

    path = hostile_files.keras_file_with(
        saved[0]["embedding"], str(tmp_path / "named.keras"), change
    )
    _refused(path, path, "ELMoEmbedding names", repr(value))
    # Keras' own loader, given the same file, refuses it too.
    import keras

    with pytest.raises(Exception, match="loading a saved model reads only"):
        keras.saving.load_model(path)
    assert zipfile.is_zipfile(path)


def test_a_class_this_process_lacks_is_named(tmp_path):
    import keras

    @keras.saving.register_keras_serializable(package="someone_else")
    class Doubled(keras.layers.Layer):
        def call(self, x):
            return 2.0 * x

    bilm = keras_elmo.load_bilm(os.path.dirname(WEIGHTS))
    ids = keras.Input(shape=(None, 50), dtype="int32")
    top = Doubled()(bilm(ids)["layer_outputs"][-1])
    path = str(tmp_path / "custom.keras")
    keras.Model(ids, top).save(path)
    # As in a new process that never defined it.
    keras.saving.get_custom_objects().pop("someone_else>Doubled")
    with pytest.raises(KerasElmoError) as raised:
        keras_elmo.load_bilm(path)
    message = str(raised.value)
    assert "'Doubled'" in message and "custom_objects" in message, message
    assert "Functional" not in message
