"""`keras-elmo embed` writes the file layout of `allennlp elmo`, read here
with plain h5py and json as downstream tools read it, and each row of the
"Coming from AllenNLP" table of docs/migrating.md holds."""

import json

import h5py
import numpy as np
import pytest

import keras_elmo
from keras_elmo_cli import main
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.model_server import serve_fixture_as

LINES = [
    "Hello world !",
    "",
    "  spaced   out  ",
    "The cat sat",
    "Hello world !",  # a repeat: AllenNLP maps it to its last line
    "日本語 and 😀",
]


@pytest.fixture(scope="module")
def sentences(tmp_path_factory):
    path = tmp_path_factory.mktemp("allennlp") / "in.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def expected():
    """Each line's layers, from the biLM in Python."""
    bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    layers = []
    for line in LINES:
        tokens = line.split()
        if not tokens:
            layers.append(np.zeros((3, 0, 32), "float32"))
            continue
        out = bilm(keras_elmo.batch_to_ids([tokens]))["layer_outputs"]
        layers.append(np.stack([np.asarray(x)[0] for x in out]))
    return layers


def _embed(sentences, output, *flags):
    argv = ["embed", "--options", OPTIONS, "--weights", WEIGHTS]
    argv += ["--input", sentences, "--output", output, "--quiet", *flags]
    assert main(argv) == 0


def _read(path):
    with h5py.File(path, "r") as f:
        datasets = {key: f[key][()] for key in f}
    return datasets


@pytest.mark.parametrize("flag", ["", "--all", "--top", "--average"])
def test_layers_of_each_sentence(sentences, expected, tmp_path, flag):
    output = str(tmp_path / "out.hdf5")
    _embed(sentences, output, *([flag] if flag else []))
    datasets = _read(output)
    assert sorted(datasets) == sorted(
        [str(i) for i in range(len(LINES))] + ["sentence_to_index"]
    )
    for i, layers in enumerate(expected):
        want = {
            "": layers,
            "--all": layers,
            "--top": layers[-1],
            "--average": layers.mean(axis=0),
        }[flag]
        got = datasets[str(i)]
        assert got.dtype == np.float32
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_sentence_to_index_as_allennlp_writes_it(sentences, tmp_path):
    output = str(tmp_path / "out.hdf5")
    _embed(sentences, output, "--top")
    with h5py.File(output, "r") as f:
        dataset = f["sentence_to_index"]
        assert dataset.shape == (1,)
        assert h5py.check_string_dtype(dataset.dtype) is not None
        index = json.loads(dataset[0])
        # The downstream idiom: sentence text -> its dataset.
        vectors = f[index["The cat sat"]][()]
    assert index == {
        "Hello world !": "4",
        "": "1",
        "spaced   out": "2",
        "The cat sat": "3",
        "日本語 and 😀": "5",
    }
    assert vectors.shape == (3, 32)


def test_forget_sentences_leaves_the_index_out(sentences, tmp_path):
    output = str(tmp_path / "out.hdf5")
    _embed(sentences, output, "--forget-sentences")
    assert "sentence_to_index" not in _read(output)


def test_one_layer_choice_at_a_time(sentences, tmp_path, capsys):
    argv = ["embed", "--model", "x", "--input", sentences]
    assert main([*argv, "--output", "o.hdf5", "--top", "--average"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_skipped_lines_have_no_dataset_nor_index_entry(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good line\nna\xefve\nlast one\n")
    output = str(tmp_path / "out.hdf5")
    _embed(str(path), output, "--on-bad-line", "skip")
    datasets = _read(output)
    assert sorted(datasets) == ["0", "2", "sentence_to_index"]
    index = json.loads(datasets["sentence_to_index"][0])
    assert index == {"good line": "0", "last one": "2"}


# === docs/migrating.md's "Coming from AllenNLP" table, row by row ===


def _bilm():
    return keras_elmo.load_bilm(OPTIONS, WEIGHTS)


def test_row_elmo_with_n_representations():
    elmo = keras_elmo.ELMoEmbedding(
        _bilm(), num_output_representations=2, dropout=0.0
    )
    out = elmo(keras_elmo.batch_to_ids([["Hello", "world"]]))
    assert len(out) == 2 and all(x.shape == (1, 2, 32) for x in out)


def test_rows_urls_and_names_cached(tmp_path, monkeypatch):
    # The fixture model served on 127.0.0.1 as the preset "original".
    with serve_fixture_as(monkeypatch, tmp_path, "original") as server:
        by_name = keras_elmo.ELMoEmbedding("original", dropout=0.0)
        urls = [server.url + "/m/options.json", server.url + "/m/weights.hdf5"]
        by_url = keras_elmo.load_bilm(*urls)
        requests = len(server.requests)
        keras_elmo.load_bilm(*urls)  # cached: no new request
        assert len(server.requests) == requests
    ids = keras_elmo.batch_to_ids([["Hello", "world"]])
    want = _bilm()(ids)["layer_outputs"]
    for got in (
        by_name.bilm(ids)["layer_outputs"],
        by_url(ids)["layer_outputs"],
    ):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, atol=1e-6)


def test_rows_requires_grad_dropout_and_scalar_mix_defaults():
    elmo = keras_elmo.ELMoEmbedding(_bilm())
    assert elmo.fine_tune is False  # requires_grad=False
    assert not any(w.trainable for w in elmo.bilm.weights)
    assert elmo.dropout == 0.5  # dropout=0.5
    fixed = keras_elmo.ELMoEmbedding(_bilm(), scalar_mix_weights=[1, 2, 3])
    fixed(keras_elmo.batch_to_ids([["a"]]))
    assert not fixed.trainable_weights  # fixed weights, gamma fixed at 1


def test_row_layer_norm_rule():
    elmo = keras_elmo.ELMoEmbedding(
        _bilm(), do_layer_norm=True, layer_norm_rule="allennlp"
    )
    assert elmo(keras_elmo.batch_to_ids([["a", "b"]])).shape == (1, 2, 32)


def test_row_keep_sentence_boundaries():
    out = _bilm()(keras_elmo.batch_to_ids([["a", "b"]]), keep_boundaries=True)
    assert all(x.shape == (1, 4, 32) for x in out["layer_outputs"])


def test_row_vocab_to_cache():
    bilm = _bilm()
    ids = keras_elmo.batch_to_ids([["Hello", "world"], ["cat", ""]])
    e = bilm.encode_tokens(ids)
    mask = np.any(ids != 0, axis=-1)
    cached = bilm({"token_embeddings": e, "mask": mask})["layer_outputs"]
    for a, b in zip(cached, bilm(ids)["layer_outputs"]):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_row_batch_to_ids_and_embed_sentence():
    # AllenNLP's ids of "Hello": begin-of-word 259, bytes + 1, end 260,
    # padding 261 (its ELMoCharacterMapper with the +1 shift).
    ids = keras_elmo.batch_to_ids([["Hello"]])
    assert ids.shape == (1, 1, 50) and ids.dtype == np.int32
    expected = [259] + [b + 1 for b in b"Hello"] + [260] + [261] * 43
    assert ids[0, 0].tolist() == expected
    layers = _bilm()(ids)["layer_outputs"]
    assert len(layers) == 3 and layers[0].shape == (1, 1, 32)


def test_row_allennlp_elmo_all_command(sentences, expected, tmp_path):
    # `allennlp elmo --all in.txt out.hdf5`: keras-elmo embed --model NAME.
    output = str(tmp_path / "out.hdf5")
    monkeypatch = pytest.MonkeyPatch()
    with monkeypatch.context() as patch:
        with serve_fixture_as(patch, tmp_path, "original"):
            argv = ["embed", "--model", "original", "--input", sentences]
            assert main([*argv, "--output", output, "--quiet"]) == 0
    datasets = _read(output)
    np.testing.assert_allclose(datasets["3"], expected[3], atol=1e-5)
    assert "sentence_to_index" in datasets
