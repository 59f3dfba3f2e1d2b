"""Pretrained models by name or URL: the whole download path, against a
local HTTP server on 127.0.0.1 that serves the fixture model (and can serve
damaged bytes, drop the connection midway or ignore `Range`). Nothing here
reaches outside the machine: connections to any other host fail the test."""

import os

import numpy as np
import pytest

import keras_elmo
import keras_elmo.progress
from keras_elmo import pretrained
from keras_elmo.errors import DownloadError
from keras_elmo.errors import KerasElmoError
from keras_elmo.pretrained import download
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.model_server import FILES
from tests.model_server import ModelServer
from tests.model_server import fixture_preset
from tests.model_server import read_bytes
from tests.model_server import refuse_other_hosts
from tests.model_server import serve_fixture_as


@pytest.fixture(autouse=True)
def _local_only(monkeypatch):
    refuse_other_hosts(monkeypatch)


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(download, "RETRY_PAUSE_SECONDS", 0.0)
    served = ModelServer()
    for name, hashed in (("tiny", True), ("tiny-unhashed", False)):
        preset = fixture_preset(name, served.url, hashed)
        monkeypatch.setitem(pretrained.PRESETS, name, preset)
    yield served
    served.stop()


def _cached(server, path):
    return os.path.join(
        os.environ["KERAS_ELMO_HOME"],
        server.url.split("//")[1].replace(":", "_"),
        *path.strip("/").split("/"),
    )


def _same_weights(a, b):
    for x, y in zip(a.weights, b.weights):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_first_download_then_cache_hit_without_server(server, capsys):
    reference = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    bilm = keras_elmo.load_bilm("tiny")
    _same_weights(bilm, reference)
    for path, data in FILES.items():
        assert read_bytes(_cached(server, path)) == data
    assert server.count("/m/weights.hdf5") == 1
    assert "Downloading: " + server.url in capsys.readouterr().out
    assert not any(
        name.endswith(download.DOWNLOAD_SUFFIX)
        for _, _, names in os.walk(os.environ["KERAS_ELMO_HOME"])
        for name in names
    )

    server.stop()
    requests = len(server.requests)
    _same_weights(keras_elmo.load_bilm("tiny"), reference)
    # The same URLs given directly share the preset's cache.
    _same_weights(
        keras_elmo.load_bilm(
            server.url + "/m/options.json", server.url + "/m/weights.hdf5"
        ),
        reference,
    )
    embedding = keras_elmo.ELMoEmbedding("tiny", dropout=0.0)
    assert embedding.bilm.count_params() == reference.count_params()
    assert len(server.requests) == requests
    assert pretrained.cached_files("tiny") == {
        "options": _cached(server, "/m/options.json"),
        "weights": _cached(server, "/m/weights.hdf5"),
    }
    assert "Downloading" not in capsys.readouterr().out


def test_damaged_download_detected_by_hash_and_retried(server, capsys):
    server.damage["/m/weights.hdf5"] = 1
    paths = pretrained.fetch("tiny")
    assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]
    assert server.count("/m/weights.hdf5") == 2
    out = capsys.readouterr().out
    assert "SHA-256" in out and "downloading it again" in out


def test_damaged_download_without_hash_detected_by_loading(server):
    server.damage["/m/weights.hdf5"] = 1
    paths = pretrained.fetch("tiny-unhashed", progress=False)
    assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]
    assert server.count("/m/weights.hdf5") == 2


def test_damaged_every_time_gives_up_and_caches_nothing(server):
    server.damage["/m/weights.hdf5"] = download.DOWNLOAD_ATTEMPTS
    with pytest.raises(DownloadError, match="does not load") as e:
        pretrained.fetch("tiny-unhashed", progress=False)
    assert server.url + "/m/weights.hdf5" in str(e.value)
    weights = _cached(server, "/m/weights.hdf5")
    assert not os.path.exists(weights)
    assert not os.path.exists(weights + download.DOWNLOAD_SUFFIX)
    assert pretrained.cached_files("tiny-unhashed")["weights"] is None


def test_interrupted_download_resumed(server, capsys):
    server.drop["/m/weights.hdf5"] = 1
    paths = pretrained.fetch("tiny")
    assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]
    ranges = [r for p, r in server.requests if p == "/m/weights.hdf5"]
    assert ranges == [None, f"bytes={server.drop_bytes}-"]
    assert "Resuming at byte 100,000: " in capsys.readouterr().out


def test_interrupted_download_resumes_in_the_next_call(server):
    server.drop["/m/weights.hdf5"] = download.DOWNLOAD_ATTEMPTS
    with pytest.raises(DownloadError, match="closed after"):
        keras_elmo.load_bilm("tiny", progress=False)
    weights = _cached(server, "/m/weights.hdf5")
    partial = weights + download.DOWNLOAD_SUFFIX
    kept = download.DOWNLOAD_ATTEMPTS * server.drop_bytes
    assert os.path.getsize(partial) == kept
    assert not os.path.exists(weights)

    keras_elmo.load_bilm("tiny", progress=False)
    assert read_bytes(weights) == FILES["/m/weights.hdf5"]
    assert server.requests[-1] == ("/m/weights.hdf5", f"bytes={kept}-")


def test_server_that_ignores_range_restarts_from_zero(server):
    server.drop["/m/weights.hdf5"] = 1
    server.ignore_range = True
    paths = pretrained.fetch("tiny", progress=False)
    assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]


def test_offline_with_nothing_cached(server, monkeypatch):
    server.stop()
    with pytest.raises(DownloadError) as e:
        keras_elmo.load_bilm("tiny")
    message = str(e.value)
    assert f"Cannot download {server.url}/m/options.json" in message
    assert _cached(server, "/m/options.json") in message
    assert "keras-elmo download tiny" in message
    assert "KERAS_ELMO_HOME" in message


def test_missing_file_and_bad_names(server):
    with pytest.raises(DownloadError, match="HTTP 404"):
        keras_elmo.load_bilm(
            server.url + "/m/nothing.json", server.url + "/m/weights.hdf5"
        )
    with pytest.raises(KerasElmoError, match="Did you mean 'tiny'"):
        keras_elmo.load_bilm("tinyy")
    with pytest.raises(KerasElmoError, match="expected an http"):
        pretrained.cache_path("http://127.0.0.1/a/../b.json")


def test_progress_lines_when_not_a_terminal(server, capsys, monkeypatch):
    monkeypatch.setattr(keras_elmo.progress, "LOG_INTERVAL", 0.0)
    monkeypatch.setattr(download, "_CHUNK_BYTES", 100_000)
    pretrained.fetch("tiny")
    lines = capsys.readouterr().out.splitlines()
    size = len(FILES["/m/weights.hdf5"])
    progress = [line for line in lines if f"/{size:,} bytes" in line]
    assert len(progress) >= 5
    assert progress[-1].startswith(f"download: {size:,}/{size:,} bytes (100%)")
    assert not any("\r" in line for line in lines)


def test_cache_directory_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_HOME", str(tmp_path / "mine"))
    assert pretrained.cache_dir() == str(tmp_path / "mine")
    monkeypatch.delenv("KERAS_ELMO_HOME")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    assert pretrained.cache_dir() == str(tmp_path / "keras" / "keras_elmo")
    monkeypatch.delenv("KERAS_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    os.makedirs(tmp_path / "home")
    assert pretrained.cache_dir() == str(
        tmp_path / "home" / ".keras" / "keras_elmo"
    )
    assert pretrained.cache_path("https://example.org:8080/a/b.hdf5") == str(
        tmp_path / "home" / ".keras" / "keras_elmo" / "example.org_8080"
        / "a" / "b.hdf5"
    )  # fmt: skip


def test_allennlp_presets_follow_the_published_names():
    names = {
        "small": "2x1024_128_2048cnn_1xhighway",
        "medium": "2x2048_256_2048cnn_1xhighway",
        "original": "2x4096_512_2048cnn_2xhighway",
        "original_5.5b": "2x4096_512_2048cnn_2xhighway_5.5B",
    }
    base = "https://allennlp.s3.amazonaws.com/models/elmo"
    for name, long_name in names.items():
        preset = pretrained.PRESETS[name]
        assert preset.kind == "bilm-tf" and preset.language == "en"
        prefix = f"{base}/{long_name}/elmo_{long_name}"
        assert preset.files["options"].url == prefix + "_options.json"
        assert preset.files["weights"].url == prefix + "_weights.hdf5"


def _row(listing, name):
    """The words of the `keras-elmo presets` line of preset `name`."""
    return next(
        line.split()
        for line in listing.splitlines()
        if line.split()[:1] == [name]
    )


def test_cli_download_presets_and_embed_offline(server, tmp_path, capsys):
    from keras_elmo.cli import main

    assert main(["presets"]) == 0
    listing = capsys.readouterr().out
    assert _row(listing, "tiny")[5] == "no"
    assert os.environ["KERAS_ELMO_HOME"] in listing

    assert main(["download", "tiny", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"tiny weights: {_cached(server, '/m/weights.hdf5')}" in out
    server.stop()

    assert main(["presets"]) == 0
    row = _row(capsys.readouterr().out, "tiny")
    assert row[:6] == ["tiny", "bilm-tf", "en", "0.5", "MB", "yes"]

    sentences = tmp_path / "sentences.txt"
    sentences.write_text("Hello world !\nELMo\n", encoding="utf-8")
    for name, model in (("preset", ["--model", "tiny"]), ("local", None)):
        model = model or ["--options", OPTIONS, "--weights", WEIGHTS]
        output = str(tmp_path / f"{name}.hdf5")
        argv = ["embed", *model, "--input", str(sentences), "--output", output]
        assert main([*argv, "--quiet"]) == 0
    import h5py

    with h5py.File(tmp_path / "preset.hdf5") as a:
        with h5py.File(tmp_path / "local.hdf5") as b:
            for key in ("0", "1"):
                np.testing.assert_array_equal(a[key][...], b[key][...])


def test_cli_errors(server, tmp_path, capsys):
    from keras_elmo.cli import main

    assert main(["download", "nonsense"]) == 2
    assert "is not a pretrained model name" in capsys.readouterr().err
    server.stop()
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("Hello\n", encoding="utf-8")
    argv = ["embed", "--model", "tiny", "--input", str(sentences)]
    assert main([*argv, "--output", str(tmp_path / "out.hdf5")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-elmo embed: error: Cannot download")
    assert not os.path.exists(tmp_path / "out.hdf5")


def test_serve_fixture_as_original(tmp_path, monkeypatch):
    """The helper for examples written with the real preset names."""
    with serve_fixture_as(monkeypatch, tmp_path, "original") as server:
        bilm = keras_elmo.load_bilm("original", progress=False)
        server.stop()
        embedding = keras_elmo.ELMoEmbedding("original")
    reference = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    _same_weights(bilm, reference)
    _same_weights(embedding.bilm, reference)
    assert "small" in pretrained.PRESETS
