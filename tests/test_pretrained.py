"""Pretrained models by name or URL: the whole download path, against a
local HTTP server on 127.0.0.1 that serves the fixture model (and can serve
damaged bytes, drop the connection midway or ignore `Range`). Nothing here
reaches outside the machine: connections to any other host fail the test."""

import io
import json
import os
import re

import numpy as np
import pytest

import elmo_core.progress
import keras_elmo
from elmo_core import pretrained
from elmo_core.errors import DownloadError
from elmo_core.errors import KerasElmoError
from elmo_core.pretrained import PresetFile
from elmo_core.pretrained import downloader
from elmo_core.pretrained.cache import index as keras_index
from elmo_core.pretrained.units import human_size
from tests import hostile_files
from tests.helpers import FIXTURES
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.model_server import FILES
from tests.model_server import HTML_PAGE
from tests.model_server import ModelServer
from tests.model_server import fixture_preset
from tests.model_server import read_bytes
from tests.model_server import refuse_other_hosts
from tests.model_server import serve_fixture_as
from tests.model_server import sha256


@pytest.fixture(autouse=True)
def _local_only(monkeypatch):
    refuse_other_hosts(monkeypatch)
    monkeypatch.delenv("KERAS_ELMO_MIRROR", raising=False)


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(downloader, "RETRY_PAUSE_SECONDS", 0.0)
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
    out = capsys.readouterr().out
    assert f"Downloading 440.3 KiB: {server.url}/m/weights.hdf5" in out
    assert not any(
        name.endswith(downloader.DOWNLOAD_SUFFIX)
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
    server.damage["/m/weights.hdf5"] = downloader.DOWNLOAD_ATTEMPTS
    with pytest.raises(DownloadError, match="does not load") as e:
        pretrained.fetch("tiny-unhashed", progress=False)
    assert server.url + "/m/weights.hdf5" in str(e.value)
    weights = _cached(server, "/m/weights.hdf5")
    assert not os.path.exists(weights)
    assert not os.path.exists(weights + downloader.DOWNLOAD_SUFFIX)
    assert pretrained.cached_files("tiny-unhashed")["weights"] is None


def test_interrupted_download_resumed(server, capsys):
    server.drop["/m/weights.hdf5"] = 1
    paths = pretrained.fetch("tiny")
    assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]
    ranges = [r for p, r in server.requests if p == "/m/weights.hdf5"]
    assert ranges == [None, f"bytes={server.drop_bytes}-"]
    assert "Resuming at 97.7 KiB of 440.3 KiB: " in capsys.readouterr().out


def test_interrupted_download_resumes_in_the_next_call(server):
    server.drop["/m/weights.hdf5"] = downloader.DOWNLOAD_ATTEMPTS
    with pytest.raises(DownloadError, match="closed after"):
        keras_elmo.load_bilm("tiny", progress=False)
    weights = _cached(server, "/m/weights.hdf5")
    partial = weights + downloader.DOWNLOAD_SUFFIX
    kept = downloader.DOWNLOAD_ATTEMPTS * server.drop_bytes
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
    assert message.startswith("Cannot download the pretrained model 'tiny'")
    # Every missing file at once, each URL with its cached path.
    assert "2 of its 2 files have no usable copy in the cache:" in message
    for path in ("/m/options.json", "/m/weights.hdf5"):
        assert f"{server.url}{path}\n    -> {_cached(server, path)}" in message
    assert "(not in the cache)" in message
    assert "keras-elmo download tiny" in message
    assert "KERAS_ELMO_HOME" in message and "KERAS_ELMO_MIRROR" in message


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
    monkeypatch.setattr(elmo_core.progress, "LOG_INTERVAL", 0.0)
    monkeypatch.setattr(downloader, "_CHUNK_BYTES", 100_000)
    pretrained.fetch("tiny")
    lines = capsys.readouterr().out.splitlines()
    progress = [line for line in lines if " of 440.3 KiB (" in line]
    assert len(progress) >= 5
    assert progress[-1].startswith("download: 440.3 KiB of 440.3 KiB (100%)")
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
    from keras_elmo_cli import main

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
    size = human_size(sum(len(data) for data in FILES.values()))
    assert row[:6] == ["tiny", "bilm-tf", "en", *size.split(), "yes"]

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
    from keras_elmo_cli import main

    assert main(["download", "nonsense"]) == 2
    assert "'nonsense' is not a pretrained model name" in (
        capsys.readouterr().err
    )
    server.stop()
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("Hello\n", encoding="utf-8")
    argv = ["embed", "--model", "tiny", "--input", str(sentences)]
    assert main([*argv, "--output", str(tmp_path / "out.hdf5")]) == 2
    err = capsys.readouterr().err
    # About --model, which named the model.
    assert err.startswith("keras-elmo embed: error: --model: Cannot download")
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


# === The cache index, and a cache that heals ===


def _index():
    path = os.path.join(os.environ["KERAS_ELMO_HOME"], "index.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)["files"]


def test_index_records_size_and_hash_of_each_download(server):
    pretrained.fetch("tiny-unhashed", progress=False)
    files = _index()
    for path, data in FILES.items():
        entry = files[server.url + path]
        assert entry["size"] == len(data)
        assert entry["sha256"] == sha256(data)
        assert entry["origin"] == "downloaded"


def test_truncated_cached_file_is_fetched_again(server, capsys):
    paths = pretrained.fetch("tiny-unhashed", progress=False)
    with open(paths["weights"], "r+b") as f:
        f.truncate(1000)  # e.g. a full disk during a copy by hand
    paths = pretrained.fetch("tiny-unhashed")
    assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]
    assert server.count("/m/weights.hdf5") == 2
    out = capsys.readouterr().out
    assert "in the cache but damaged: 1000 bytes, but 440.3 KiB was " in out
    assert "downloading it again" in out


def test_damaged_cached_file_offline_says_what_to_do(server):
    paths = pretrained.fetch("tiny", progress=False)
    with open(paths["weights"], "ab") as f:
        f.write(b"junk")
    server.stop()
    with pytest.raises(DownloadError) as e:
        keras_elmo.load_bilm("tiny", progress=False)
    message = str(e.value)
    assert "1 of its 2 files has no usable copy in the cache:" in message
    assert f"{server.url}/m/weights.hdf5\n    -> {paths['weights']}" in message
    assert (
        "(in the cache but damaged: 450,900 bytes, but 450,896 bytes was "
        "recorded)"
    ) in message
    assert "keras-elmo download tiny" in message
    # The same advice for a URL given directly.
    with pytest.raises(DownloadError) as e:
        pretrained.cached_file(server.url + "/m/weights.hdf5", progress=False)
    message = str(e.value)
    assert f"Cannot download {server.url}/m/weights.hdf5" in message
    assert paths["weights"] in message and "damaged" in message
    assert f"keras-elmo download {server.url}/m/weights.hdf5" in message


def test_verify_finds_same_size_damage_and_fetches_again(server, capsys):
    from keras_elmo_cli import main

    assert main(["download", "tiny-unhashed", "--quiet"]) == 0
    weights = _cached(server, "/m/weights.hdf5")
    with open(weights, "r+b") as f:
        f.seek(1000)
        f.write(b"\xff" * 16)
    # The size is checked on every use; same-size damage needs --verify.
    pretrained.fetch("tiny-unhashed", progress=False)
    assert server.count("/m/weights.hdf5") == 1
    capsys.readouterr()
    assert main(["download", "tiny-unhashed", "--verify"]) == 0
    out = capsys.readouterr().out
    assert "its SHA-256 differs from the one recorded at download" in out
    assert "tiny-unhashed: ok, 440.6 KiB in the cache" in out
    assert read_bytes(weights) == FILES["/m/weights.hdf5"]
    assert server.count("/m/weights.hdf5") == 2


def test_html_page_for_a_url_without_extension(server, capsys):
    server.files = dict(FILES, **{"/m/vocab": b"the\nof\nand\n" * 100})
    url = server.url + "/m/vocab"
    # A portal's page answered first: detected and downloaded again.
    server.html["/m/vocab"] = 1
    path = pretrained.cached_file(url)
    assert read_bytes(path) == server.files["/m/vocab"]
    assert "it is an HTML or XML page" in capsys.readouterr().out
    # A page put in the cache by hand (no record): detected when used.
    os.remove(os.path.join(os.environ["KERAS_ELMO_HOME"], "index.json"))
    with open(path, "wb") as f:
        f.write(HTML_PAGE)
    assert read_bytes(pretrained.cached_file(url)) == server.files["/m/vocab"]
    assert server.count("/m/vocab") == 3


def test_damaged_index_is_treated_as_missing(server, capsys):
    pretrained.fetch("tiny", progress=False)
    index = os.path.join(os.environ["KERAS_ELMO_HOME"], "index.json")
    for damage in (b'{"format": "keras', b"\xff\x00", b"[1]", b"[" * 10**5):
        with open(index, "wb") as f:
            f.write(damage)
        keras_index._warned.clear()
        paths = pretrained.fetch("tiny", progress=False)
        err = capsys.readouterr().err
        assert f"the cache index {index} is damaged" in err
        assert "treating it as missing" in err
        # The files were checked in full and recorded anew.
        assert _index()[server.url + "/m/weights.hdf5"]["origin"] == (
            "found in the cache"
        )
        assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]
    document = read_bytes(index).replace(b'"size": 450896', b'"size": "x"')
    with open(index, "wb") as f:
        f.write(document)
    keras_index._warned.clear()
    pretrained.fetch("tiny", progress=False)
    assert "size 'x' is not a byte count" in capsys.readouterr().err
    document = {"format": "keras_elmo cache index", "version": 1}
    member = {"size": 1, "sha256": "0" * 64}
    document["files"] = {"http://h/a.zip": {"members": {"../x": member}}}
    with open(index, "w", encoding="utf-8") as f:
        json.dump(document, f)
    keras_index._warned.clear()
    assert keras_index.read_index() == {}
    assert "member '../x' reaches outside" in capsys.readouterr().err
    assert server.count("/m/weights.hdf5") == 1


# === Transient answers: retried with back-off ===


@pytest.fixture
def pauses(monkeypatch):
    recorded = []
    monkeypatch.setattr(downloader, "_sleep", recorded.append)
    return recorded


def test_transient_answers_are_retried_honouring_retry_after(server, pauses):
    server.transient["/m/weights.hdf5"] = [
        (503, {"Retry-After": "7"}),
        (429, {}),
    ]
    server.reset["/m/options.json"] = 1
    paths = pretrained.fetch("tiny", progress=False)
    assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]
    assert server.count("/m/weights.hdf5") == 3
    assert server.count("/m/options.json") == 2
    # The options' reset: back-off 0 (tests); the 503: its Retry-After;
    # the 429 without one: the back-off again.
    assert pauses == [0.0, 7.0, 0.0]


def test_retry_after_beyond_the_bound_and_lasting_failure(
    server, pauses, monkeypatch
):
    server.transient["/m/options.json"] = [(429, {"Retry-After": "3600"})]
    with pytest.raises(DownloadError) as e:
        pretrained.cached_file(server.url + "/m/options.json", progress=False)
    assert "asks to wait 3,600 s" in str(e.value)
    assert "longer than keras_elmo waits (120 s)" in str(e.value)
    assert pauses == []

    attempts = downloader.DOWNLOAD_ATTEMPTS
    server.transient["/m/options.json"] = [(503, {})] * attempts
    with pytest.raises(DownloadError, match="HTTP 503") as e:
        pretrained.cached_file(server.url + "/m/options.json", progress=False)
    assert f"in {attempts} attempts" in str(e.value)
    assert server.count("/m/options.json") == 1 + attempts
    # The pause rule itself (not its waiting).
    monkeypatch.setattr(downloader, "RETRY_PAUSE_SECONDS", 2.0)
    assert [downloader._pause(k, None) for k in (1, 2, 3)] == [2.0, 4.0, 8.0]
    assert downloader._pause(1, 30.0) == 30.0


# === Names: one suggestion for typos, every name tried ===


def test_get_preset_suggests_close_names():
    for typo, close in (
        ("orignal", "Did you mean 'original' or 'original_5.5b'?"),
        ("Original", "Did you mean 'original'?"),
        ("ZH", "Did you mean 'zh'?"),
    ):
        with pytest.raises(KerasElmoError) as e:
            pretrained.get_preset(typo)
        assert f"{typo!r} is not a pretrained model name. {close}" in str(
            e.value
        )


def test_cli_download_tries_every_name(server, capsys):
    from keras_elmo_cli import main

    assert main(["download", "orignal", "tiny", "--quiet"]) == 2
    captured = capsys.readouterr()
    assert (
        "orignal: failed: 'orignal' is not a pretrained model name. "
        + ("Did you mean 'original' or 'original_5.5b'?")
        in captured.err
    )
    assert "1 of 2 failed (orignal)" in captured.err
    assert "tiny: ok, 440.6 KiB in the cache" in captured.out
    assert pretrained.cached_files("tiny")["weights"] is not None


# === Mirrors ===


def _publisher_files(prefix, preset):
    """`{server path: fixture bytes}` laid out as `preset`'s files are
    under its publisher's base URL, below `prefix`."""
    base = pretrained.preset_table.PUBLISHERS["allennlp"]
    data = {"options": FILES["/m/options.json"]}
    data["weights"] = FILES["/m/weights.hdf5"]
    return {
        prefix + record.url[len(base) :]: data[role]
        for role, record in pretrained.PRESETS[preset].files.items()
    }


def test_mirror_of_a_publisher_on_a_local_server(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_HOME", str(tmp_path / "cache"))
    served = ModelServer(_publisher_files("/elmo", "small"))
    try:
        monkeypatch.setenv("KERAS_ELMO_MIRROR", f"allennlp={served.url}/elmo")
        bilm = keras_elmo.load_bilm("small", progress=False)
        assert len(served.requests) == 2
    finally:
        served.stop()
    _same_weights(bilm, keras_elmo.load_bilm(OPTIONS, WEIGHTS))
    # Cached under the publisher's URL: the same copy with the mirror off.
    record = pretrained.PRESETS["small"].files["weights"]
    weights = pretrained.cache_path(record.url)
    assert weights.startswith(
        str(tmp_path / "cache" / "allennlp.s3.amazonaws.com" / "models")
    )
    assert _index()[record.url]["sha256"] == sha256(FILES["/m/weights.hdf5"])
    monkeypatch.delenv("KERAS_ELMO_MIRROR")
    assert pretrained.fetch("small")["weights"] == weights


def test_mirror_folder_laid_out_by_host(tmp_path, monkeypatch, capsys):
    """One base for every host, a local folder (as `wget -x` writes)."""
    monkeypatch.setenv("KERAS_ELMO_HOME", str(tmp_path / "cache"))
    mirror = tmp_path / "mirror"
    for role, record in pretrained.PRESETS["original"].files.items():
        path = mirror / record.url.split("://")[1]
        path.parent.mkdir(parents=True, exist_ok=True)
        source = {"options": OPTIONS, "weights": WEIGHTS}[role]
        path.write_bytes(read_bytes(source))
    pretrained.set_mirror(f"file://{mirror}")
    try:
        paths = pretrained.fetch("original")
        out = capsys.readouterr().out
        assert f"(from the mirror: file://{mirror}/allennlp.s3" in out
        assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]
        os.remove(mirror / record.url.split("://")[1])
        os.remove(paths["weights"])
        with pytest.raises(DownloadError) as e:
            pretrained.fetch("original", progress=False)
        assert f"The mirror has no file {mirror}/allennlp." in str(e.value)
    finally:
        pretrained.set_mirror(None)


def test_mirror_of_elmo_for_many_langs_zip(tmp_path, monkeypatch, capsys):
    import zipfile

    monkeypatch.setenv("KERAS_ELMO_HOME", str(tmp_path / "cache"))
    fixtures = os.path.dirname(FIXTURES)
    folder = os.path.join(fixtures, "elmo_for_many_langs", "char_model")
    mirror = tmp_path / "nlpl"
    mirror.mkdir()
    with zipfile.ZipFile(mirror / "144.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for name in sorted(os.listdir(folder)):
            z.write(os.path.join(folder, name), name)
    monkeypatch.setenv("KERAS_ELMO_MIRROR", f"nlpl={mirror}")
    model = pretrained.fetch("en", progress=False)["model"]
    assert sorted(os.listdir(model)) == sorted(os.listdir(folder))
    assert not os.path.exists(model + ".zip")  # unpacked, then deleted
    members = _index()[pretrained.PRESETS["en"].files["model"].url]["members"]
    assert members["config.json"]["size"] == os.path.getsize(
        os.path.join(folder, "config.json")
    )
    from keras_elmo_cli import main

    capsys.readouterr()
    assert main(["presets"]) == 0
    size = human_size(os.path.getsize(mirror / "144.zip"))
    assert _row(capsys.readouterr().out, "en")[3:6] == [*size.split(), "yes"]
    # A member lost from the unpacked folder: fetched again.
    os.remove(os.path.join(model, "char.dic"))
    pretrained.fetch("en", progress=False)
    assert os.path.isfile(os.path.join(model, "char.dic"))


def test_bad_mirror_settings(monkeypatch):
    for value, message in (
        ("alennlp=https://m.example.org", "unknown publisher 'alennlp'"),
        ("mirror/relative", "cannot use 'mirror/relative' as a mirror"),
        ("ftp://m.example.org", "expected an http(s):// URL or a local"),
        ("https://m.example.org nlpl=/srv/x", "mixes one base for every"),
    ):
        monkeypatch.setenv("KERAS_ELMO_MIRROR", value)
        with pytest.raises(KerasElmoError, match=re.escape(message)) as e:
            pretrained.mirror_url("http://vectors.nlpl.eu/repository/11/1.zip")
        assert "$KERAS_ELMO_MIRROR" in str(e.value)
    with pytest.raises(KerasElmoError, match="set_mirror"):
        pretrained.set_mirror(5)


# === Zip archives: bounded and safe ===


def _zip(path, members, compression=None):
    import zipfile

    compression = compression or zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return str(path)


def test_archive_bounds_and_names(tmp_path, monkeypatch):
    from elmo_core.pretrained import archive

    def problem(members):
        return archive.archive_problem(
            _zip(tmp_path / "a.zip", members), tmp_path
        )

    assert problem({"model/config.json": b"{}"}) is None
    assert "a zip bomb?" in problem({"zeros": bytes(20 << 20)})
    assert "'../evil' reaches outside" in problem({"../evil": b"x"})
    assert "'/etc/evil' is an absolute path" in problem({"/etc/evil": b"x"})
    monkeypatch.setattr(archive, "MAX_MEMBERS", 2)
    assert "3 members, more than 2" in problem(dict.fromkeys("abc", b"x"))
    monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 1000)
    assert "more than the bound of 1000 bytes" in problem({"a": bytes(2000)})


def _lying_zip(path, declared):
    """A zip whose one member holds 1 MiB but declares `declared` bytes."""
    import struct

    data = bytearray(read_bytes(_zip(path, {"zeros": bytes(1 << 20)})))
    data[22:26] = struct.pack("<I", declared)  # the local header
    central = data.find(b"PK\x01\x02")
    data[central + 24 : central + 28] = struct.pack("<I", declared)
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def test_zip_that_lies_about_its_size_is_refused(tmp_path):
    from elmo_core.pretrained.verify import file_problem

    path = _lying_zip(tmp_path / "lies.zip", 100)
    record = PresetFile("http://127.0.0.1/lies.zip", extract="zip")
    # Inflating stops past the declared 100 bytes.
    assert file_problem(path, record) == (
        "member 'zeros' inflates to more than the 100 bytes it declares"
    )


def test_zip_bomb_is_not_unpacked(server, monkeypatch, tmp_path):
    bomb = read_bytes(_zip(tmp_path / "bomb.zip", {"zeros": bytes(20 << 20)}))
    server.files = dict(FILES, **{"/m/bomb.zip": bomb})
    record = PresetFile(server.url + "/m/bomb.zip", extract="zip")
    with pytest.raises(DownloadError, match="a zip bomb") as e:
        pretrained.cached_file(record.url, record, progress=False)
    assert "intact in" in str(e.value)
    folder = _cached(server, "/m/bomb")
    assert not os.path.exists(folder) and not os.path.exists(folder + ".zip")


def test_human_sizes():
    assert [human_size(n) for n in (0, 1, 1023, 1024, 1536)] == [
        "0 bytes",
        "1 byte",
        "1023 bytes",
        "1.0 KiB",
        "1.5 KiB",
    ]
    assert human_size(374_434_792) == "357.1 MiB"
    assert human_size(3 << 30) == "3.0 GiB"


# === Resume only from the same source and object (issue 24, class 2) ===


def _other_weights(tmp_path):
    """The fixture weights with other values, the same size and layout:
    a partial download of one joined with the rest of the other still
    loads, so only the resume rule can tell them apart."""
    import shutil

    import h5py

    path = str(tmp_path / "other.hdf5")
    shutil.copy(WEIGHTS, path)
    with h5py.File(path, "a") as f:
        f["char_embed"][...] = f["char_embed"][...] + 1.0
    data = read_bytes(path)
    assert len(data) == len(FILES["/m/weights.hdf5"])
    assert data != FILES["/m/weights.hdf5"]
    return data


def _interrupted(server):
    """A call that leaves a partial download of /m/weights.hdf5; returns
    its path."""
    server.drop["/m/weights.hdf5"] = downloader.DOWNLOAD_ATTEMPTS
    with pytest.raises(DownloadError, match="closed after"):
        pretrained.fetch("tiny-unhashed", progress=False)
    partial = _cached(server, "/m/weights.hdf5") + downloader.DOWNLOAD_SUFFIX
    assert os.path.getsize(partial) > 0
    return partial


def _weights_requests(server, path="/m/weights.hdf5"):
    return [r for p, r in server.requests if p.endswith(path)]


@pytest.mark.parametrize("form", ["http", "file"])
def test_resume_from_another_mirror_starts_over(
    server, tmp_path, monkeypatch, form
):
    """The partial file came from the publisher; the mirror set since
    holds another file of the same size: it is fetched whole, never
    joined to the partial one (which loaded and was recorded as good)."""
    partial = _interrupted(server)
    other = _other_weights(tmp_path)
    host = server.url.split("//")[1].replace(":", "_")
    files = {f"/{host}/m/weights.hdf5": other}
    mirror = None
    if form == "http":
        mirror = ModelServer(files)
        monkeypatch.setenv("KERAS_ELMO_MIRROR", mirror.url)
    else:
        folder = tmp_path / "mirror" / host / "m"
        folder.mkdir(parents=True)
        (folder / "weights.hdf5").write_bytes(other)
        monkeypatch.setenv("KERAS_ELMO_MIRROR", f"file://{tmp_path}/mirror")
    try:
        paths = pretrained.fetch("tiny-unhashed", progress=False)
    finally:
        if mirror is not None:
            mirror.stop()
    assert read_bytes(paths["weights"]) == other
    if mirror is not None:
        assert _weights_requests(mirror) == [None]  # no Range
    assert not os.path.exists(partial)
    assert not os.path.exists(partial + downloader.RECORD_SUFFIX)


@pytest.mark.parametrize("checks_if_range", [True, False])
def test_resume_of_a_file_changed_on_the_server_starts_over(
    server, tmp_path, checks_if_range
):
    """Same URL, another file (another ETag) since the interruption: a
    server that checks If-Range sends it whole; one that does not sends
    the rest of the new file, which the ETag gives away."""
    _interrupted(server)
    kept = downloader.DOWNLOAD_ATTEMPTS * server.drop_bytes
    other = _other_weights(tmp_path)
    server.files = dict(FILES, **{"/m/weights.hdf5": other})
    server.ignore_if_range = not checks_if_range
    paths = pretrained.fetch("tiny-unhashed", progress=False)
    assert read_bytes(paths["weights"]) == other
    after = _weights_requests(server)[downloader.DOWNLOAD_ATTEMPTS :]
    expected = [f"bytes={kept}-"] + ([] if checks_if_range else [None])
    assert after == expected


def test_partial_download_without_a_record_starts_over(server, tmp_path):
    """A partial file from an older keras_elmo (or whose record was lost)
    cannot be checked, so it is not continued."""
    partial = _interrupted(server)
    os.remove(partial + downloader.RECORD_SUFFIX)
    paths = pretrained.fetch("tiny-unhashed", progress=False)
    assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]
    assert _weights_requests(server)[-1] is None


def test_resume_of_the_same_object_continues(server):
    """Same source, same ETag: the rest only, with If-Range."""
    _interrupted(server)
    kept = downloader.DOWNLOAD_ATTEMPTS * server.drop_bytes
    paths = pretrained.fetch("tiny-unhashed", progress=False)
    assert read_bytes(paths["weights"]) == FILES["/m/weights.hdf5"]
    assert _weights_requests(server)[-1] == f"bytes={kept}-"


# === Every member of an archive checked before unpacking (issue 24) ===


def _efml_members():
    fixtures = os.path.dirname(FIXTURES)
    folder = os.path.join(fixtures, "elmo_for_many_langs", "char_model")
    return {name: read_bytes(os.path.join(folder, name)) for name in sorted(
        os.listdir(folder))}  # fmt: skip


def _member(name, data):
    return {
        "name": name,
        "data": hostile_files.deflated(data),
        "method": 8,
        "plain": data,
    }


def _damaged_efml_zip(path, damage):
    """The ELMoForManyLangs fixture folder as a zip, one member damaged in
    a way `zipfile.testzip` does not see (`crc`: one it does)."""
    import zipfile

    members = []
    for name, data in _efml_members().items():
        if damage == "cut-member" and name == "config.json":
            members.append(hostile_files.cut_deflate_member(name, data))
        elif damage == "short-member" and name == "char.dic":
            members.append(hostile_files.short_member(name, data))
        elif damage == "crc" and name == "word.dic":
            members.append(dict(_member(name, data), crc=1234))
        elif damage == "cut-nested" and name == "encoder.pkl":
            inner = []
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                for info in z.infolist():
                    value = z.read(info)
                    if info.filename.endswith("data.pkl"):
                        cut = hostile_files.cut_deflate_member
                        inner.append(cut(info.filename, value))
                    else:
                        inner.append(_member(info.filename, value))
            nested = read_bytes(hostile_files.raw_zip(path + ".inner", inner))
            members.append(_member(name, nested))
        else:
            members.append(_member(name, data))
    return hostile_files.raw_zip(path, members)


@pytest.mark.parametrize(
    "damage, words",
    [
        ("cut-member", "member 'config.json' has a deflate stream that is"),
        ("short-member", "member 'char.dic' holds 483 bytes but declares 966"),
        ("crc", "member 'word.dic' is damaged (CRC"),
        ("cut-nested", "member 'encoder.pkl' (a zip inside): member "),
    ],
)
def test_damaged_archive_member_is_neither_unpacked_nor_recorded(
    tmp_path, monkeypatch, damage, words
):
    import zipfile

    monkeypatch.setenv("KERAS_ELMO_HOME", str(tmp_path / "cache"))
    # Each damaged copy is downloaded again: no pauses between attempts.
    monkeypatch.setattr(downloader, "RETRY_PAUSE_SECONDS", 0.0)
    mirror = tmp_path / "nlpl"
    mirror.mkdir()
    archive = _damaged_efml_zip(str(mirror / "144.zip"), damage)
    if damage != "crc":
        assert zipfile.ZipFile(archive).testzip() is None  # it looks fine
    monkeypatch.setenv("KERAS_ELMO_MIRROR", f"nlpl={mirror}")
    with pytest.raises(DownloadError) as raised:
        pretrained.fetch("en", progress=False)
    assert words in str(raised.value), str(raised.value)
    url = pretrained.PRESETS["en"].files["model"].url
    zip_path = pretrained.cache_path(url)
    assert not os.path.exists(zip_path[: -len(".zip")])  # not unpacked
    index = os.path.join(os.environ["KERAS_ELMO_HOME"], "index.json")
    assert not os.path.exists(index) or url not in _index()


def test_a_truncated_archive_from_a_mirror_is_said_so_and_not_unpacked(
    tmp_path, monkeypatch
):
    import zipfile

    monkeypatch.setenv("KERAS_ELMO_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(downloader, "RETRY_PAUSE_SECONDS", 0.0)
    whole = io.BytesIO()
    with zipfile.ZipFile(whole, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in _efml_members().items():
            z.writestr(name, data)
    data = whole.getvalue()
    mirror = tmp_path / "nlpl"
    mirror.mkdir()
    monkeypatch.setenv("KERAS_ELMO_MIRROR", f"nlpl={mirror}")
    url = pretrained.PRESETS["en"].files["model"].url
    folder = pretrained.cache_path(url)[: -len(".zip")]
    # Cut anywhere: in a member's data, in the directory, at its end.
    for cut in (len(data) // 5, len(data) // 2, len(data) - 30, len(data) - 1):
        (mirror / "144.zip").write_bytes(data[:cut])
        with pytest.raises(DownloadError, match="it is truncated") as e:
            pretrained.fetch("en", progress=False)
        assert "cut short" in str(e.value)
        assert not os.path.exists(folder)  # nothing unpacked
        assert (
            not os.path.exists(
                os.path.join(os.environ["KERAS_ELMO_HOME"], "index.json")
            )
            or url not in _index()
        )
