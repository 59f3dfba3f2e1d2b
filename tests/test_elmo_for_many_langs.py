"""ELMoForManyLangs (EFML) models: reading, ids and parity with EFML.

The fixture (`tests/fixtures/elmo_for_many_langs/`, made by its
`make_fixture.py` with EFML 0.0.4.post2's own code) holds two tiny EFML
model folders (characters only, zip-format weights; characters plus the
word table, legacy-format weights) and EFML's outputs on an English and a
Chinese sentence set.
"""

import io
import json
import os
import pickle
import shutil
import zipfile

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from elmo_core import pretrained
from elmo_core.errors import BiLMSourceError
from elmo_core.errors import KerasElmoError
from elmo_core.errors import WeightFileError
from elmo_core.formats.elmo_for_many_langs_files import PACKAGED_CONFIGS
from elmo_core.formats.elmo_for_many_langs_files import read_dictionary
from elmo_core.formats.elmo_for_many_langs_files import read_network_config
from elmo_core.formats.torch_pickle import read_state_dict
from keras_elmo.formats.elmo_for_many_langs import load_elmo_for_many_langs
from keras_elmo.layers.token_encoders.elmo_for_many_langs_encoder import (
    CHARACTER_SPECIALS,
)
from tests.helpers import with_changes
from tests.model_server import ModelServer
from tests.model_server import refuse_other_hosts

FIXTURES = os.path.join(
    os.path.dirname(__file__), "fixtures", "elmo_for_many_langs"
)
MODELS = ("char_model", "word_model")
SETS = ("english", "chinese")
ATOL = 1e-5
EXPECTED = np.load(os.path.join(FIXTURES, "expected.npz"))
with open(os.path.join(FIXTURES, "sentences.json"), encoding="utf-8") as f:
    META = json.load(f)


def _folder(name):
    return os.path.join(FIXTURES, name)


@pytest.fixture(scope="module")
def bilms():
    return {name: keras_elmo.load_bilm(_folder(name)) for name in MODELS}


def _layers(bilm, sentences):
    """Per sentence, `(L + 1, n, 2P)` NumPy, from one padded batch."""
    out = bilm(bilm.encoder.batch_to_inputs(sentences))
    layers = np.stack([np.asarray(x) for x in out["layer_outputs"]])
    return [layers[:, i, : len(s)] for i, s in enumerate(sentences)]


# === Reading the weights without PyTorch ===


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("part", ["token_embedder", "encoder"])
def test_state_dicts_read_as_torch_reads_them(model, part):
    # char_model was saved in PyTorch's zip format, word_model in the
    # legacy format of the published models.
    state = read_state_dict(os.path.join(_folder(model), part + ".pkl"))
    prefix = f"{model}/state/{part}/"
    expected = {
        key[len(prefix) :]: EXPECTED[key]
        for key in EXPECTED.files
        if key.startswith(prefix)
    }
    assert list(state) == list(expected)
    for key, value in expected.items():
        assert state[key].dtype == value.dtype
        np.testing.assert_array_equal(state[key], value)


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo unsafe",))


def test_reader_refuses_pickles_that_name_other_code(tmp_path, capfd):
    path = tmp_path / "evil.pkl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("evil/data.pkl", pickle.dumps({"w": _Boom()}))
    with pytest.raises(WeightFileError, match="refusing to load it"):
        read_state_dict(str(path))
    legacy = tmp_path / "legacy.pkl"
    legacy.write_bytes(pickle.dumps(_Boom()))
    with pytest.raises(WeightFileError, match="refusing"):
        read_state_dict(str(legacy))
    assert "unsafe" not in capfd.readouterr().out


def test_reader_reports_damaged_files(tmp_path):
    source = os.path.join(_folder("word_model"), "encoder.pkl")
    with open(source, "rb") as f:
        data = f.read()
    truncated = tmp_path / "encoder.pkl"
    truncated.write_bytes(data[: len(data) - 100])
    with pytest.raises(WeightFileError, match="truncated|complete download"):
        read_state_dict(str(truncated))
    text = tmp_path / "text.pkl"
    text.write_text("not a pickle")
    with pytest.raises(WeightFileError, match="Could not read"):
        read_state_dict(str(text))
    with pytest.raises(WeightFileError, match="not found"):
        read_state_dict(str(tmp_path / "missing.pkl"))


# === Token ids: EFML's rules ===


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("sentence_set", SETS)
def test_ids_are_those_efml_builds(bilms, model, sentence_set):
    encoder = bilms[model].encoder
    sentences = META["sets"][sentence_set]
    ids = encoder.batch_to_inputs(sentences)
    bos, eos = encoder.boundaries()
    for i, sentence in enumerate(sentences):
        # EFML's ids are 0-based and include <bos>/<eos>; ours are +1.
        rows = np.concatenate([[bos], ids[i, : len(sentence)], [eos]]) - 1
        key = f"{model}/{sentence_set}/{i}"
        if encoder.words is not None:
            np.testing.assert_array_equal(rows[:, 0], EXPECTED[key + "/words"])
            rows = rows[:, 1:]
        np.testing.assert_array_equal(rows, EXPECTED[key + "/chars"])
        assert not ids[i, len(sentence) :].any()
    # In the graph, from strings: dense ("" pads), ragged, tf.function.
    length = ids.shape[1]
    dense = tf.constant([s + [""] * (length - len(s)) for s in sentences])
    np.testing.assert_array_equal(encoder.tokens_to_inputs(dense), ids)
    traced = tf.function(encoder.tokens_to_inputs)
    np.testing.assert_array_equal(traced(dense), ids)
    ragged = tf.ragged.constant(sentences, dtype=tf.string, ragged_rank=1)
    np.testing.assert_array_equal(encoder.tokens_to_inputs(ragged), ids)


def test_whitespace_dictionary_line_is_u3000_as_in_efml(tmp_path):
    # char_model/char.dic has a U+3000 line: EFML strips the line, finds
    # the id alone and takes the entry to be U+3000.
    characters = read_dictionary(
        os.path.join(_folder("char_model"), "char.dic"), CHARACTER_SPECIALS
    )
    assert characters["\u3000"] == max(characters.values())
    path = tmp_path / "char.dic"
    lines = [f"{c}\t{i}" for i, c in enumerate(CHARACTER_SPECIALS)]
    path.write_text("\n".join(lines + [" \t6", "a\t7"]) + "\n", "utf-8")
    entries = read_dictionary(str(path), CHARACTER_SPECIALS)
    assert entries["\u3000"] == 6 and " " not in entries


# === Parity with EFML's outputs ===


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("sentence_set", SETS)
def test_layers_equal_efml_sents2elmo(bilms, model, sentence_set):
    sentences = META["sets"][sentence_set]
    got = _layers(bilms[model], sentences)
    for i, layers in enumerate(got):
        expected = EXPECTED[f"{model}/{sentence_set}/{i}"]
        assert layers.shape == expected.shape
        np.testing.assert_allclose(layers, expected, atol=ATOL, rtol=0)


def test_parity_without_deduplication_and_one_sentence_at_a_time():
    bilm = keras_elmo.load_bilm(_folder("word_model"), deduplicate_tokens=False)
    for i, sentence in enumerate(META["sets"]["chinese"]):
        (layers,) = _layers(bilm, [sentence])
        expected = EXPECTED[f"word_model/chinese/{i}"]
        np.testing.assert_allclose(layers, expected, atol=ATOL, rtol=0)


def test_the_fixture_exercises_clipping():
    # char_model clips cell and output at 1; without the clips the outputs
    # move, so the parity above covers EFML's clipping.
    bilm = load_elmo_for_many_langs(
        _folder("char_model"), cell_clip=None, proj_clip=None
    )
    sentences = META["sets"]["english"]
    got = _layers(bilm, sentences)
    differences = [
        np.abs(x - EXPECTED[f"char_model/english/{i}"]).max()
        for i, x in enumerate(got)
        if x.size
    ]
    assert max(differences) > 1e-3


@pytest.mark.large
def test_stateful_option_matches_efml_default():
    """EFML carries each batch row's state into the next call."""
    bilm = keras_elmo.load_bilm(
        _folder("char_model"), stateful=True, max_batch_size=8
    )
    stateless = keras_elmo.load_bilm(_folder("char_model"))
    sentences = META["sets"]["english"]
    moved = 0.0
    for call, indices in enumerate(META["stateful_calls"]):
        batch = [sentences[i] for i in indices]
        # EFML's row order: longest first, ties in input order.
        batch.sort(key=lambda s: -len(s))
        got = _layers(bilm, batch)
        fresh = _layers(stateless, batch)
        for row, layers in enumerate(got):
            expected = EXPECTED[f"char_model/stateful/{call}/{row}"]
            np.testing.assert_allclose(layers, expected, atol=ATOL, rtol=0)
            if call and layers.size:
                moved = max(moved, np.abs(layers - fresh[row]).max())
    assert moved > 1e-3  # later calls really depend on the carried state
    bilm.reset_states()
    (first,) = _layers(bilm, [sentences[0]])
    np.testing.assert_allclose(
        first, EXPECTED["char_model/english/0"], atol=ATOL, rtol=0
    )


def test_elmo_embedding_on_strings_gives_efml_average(bilms):
    # EFML's default output (output_layer=-1) is the mean of the layers:
    # a scalar mix with equal weights and gamma 1.
    bilm = bilms["word_model"]
    embedding = keras_elmo.ELMoEmbedding(bilm, scalar_mix_weights=[0, 0, 0])
    sentences = META["sets"]["english"][:3]
    length = max(len(s) for s in sentences)
    tokens = tf.constant([s + [""] * (length - len(s)) for s in sentences])
    mixed = np.asarray(embedding(tokens))
    for i, sentence in enumerate(sentences):
        expected = EXPECTED[f"word_model/english/{i}"].mean(axis=0)
        np.testing.assert_allclose(
            mixed[i, : len(sentence)], expected, atol=ATOL, rtol=0
        )


def test_keras_file_round_trip(bilms, tmp_path):
    bilm = bilms["word_model"]
    tokens = keras.Input(shape=(None,), dtype="string")
    model = keras.Model(tokens, keras_elmo.ELMoEmbedding(bilm)(tokens))
    path = str(tmp_path / "efml.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    batch = tf.constant([["今天", "天气", "好"], ["Hello", "", ""]])
    np.testing.assert_allclose(loaded(batch), model(batch), atol=1e-6)
    inner = [x for x in loaded.layers if hasattr(x, "bilm")][0].bilm
    assert inner.token_encoder == "elmo_for_many_langs"
    assert inner.words == bilm.words and inner.characters == bilm.characters


def test_wrong_ids_are_clear_errors(bilms):
    bilm = bilms["char_model"]
    with pytest.raises(KerasElmoError, match=r"\(batch, time, 50\)"):
        bilm(keras_elmo.batch_to_ids([["Hi"]])[..., :49])
    ids = bilm.encoder.batch_to_inputs([["Hi"]])
    ids[0, 0, 3] = 10_000
    with pytest.raises(KerasElmoError, match="out of range"):
        bilm(ids)


# === Bad model folders ===


@pytest.fixture
def folder(tmp_path):
    """A writable copy of word_model."""
    path = tmp_path / "model"
    shutil.copytree(_folder("word_model"), path)
    return path


def _edit_json(path, edit):
    value = json.loads(path.read_text("utf-8"))
    edit(value)
    path.write_text(json.dumps(value), "utf-8")


def _config(folder):
    return folder / "tiny_cnn.json"


def _network_change(changes):
    """A damage: the folder's network config with `changes` applied
    ({"encoder.dim": 14}, `tests.helpers.with_changes`)."""
    return lambda p: _edit_json(_config(p), lambda c: with_changes(c, changes))


def test_missing_model_folder_is_a_source_error(folder):
    shutil.rmtree(folder)
    with pytest.raises(BiLMSourceError, match="no such file or directory"):
        keras_elmo.load_bilm(str(folder))
    with pytest.raises(WeightFileError, match="model folder not found"):
        load_elmo_for_many_langs(str(folder))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: os.remove(p / "config.json"), "has no config.json"),
        (
            lambda p: (p / "config.json").write_text("{"),
            "config.json is not valid JSON",
        ),
        (
            lambda p: _edit_json(
                p / "config.json", lambda c: c.pop("config_path")
            ),
            "no `config_path`",
        ),
        (lambda p: os.remove(_config(p)), "neither at that path"),
        (lambda p: os.remove(p / "char.dic"), "char.dic not found"),
        (
            lambda p: (p / "word.dic").write_text("a\t0\n", "utf-8"),
            r"lacks the special entries \['<oov>', '<pad>'\]",
        ),
        (
            lambda p: (p / "char.dic").write_text("a\tb\tc\n", "utf-8"),
            "line 1",
        ),
        (lambda p: os.remove(p / "encoder.pkl"), "encoder.pkl"),
        (
            lambda p: (p / "token_embedder.pkl").write_bytes(b"\x80\x02K\x01."),
            "neither a zip nor a legacy",
        ),
        (
            _network_change({"encoder.dim": 14}),
            r"'forward_layer_0.input_linearity.weight' .* \(48, 6\), but",
        ),
        (
            _network_change({"token_embedder.n_highway": 2}),
            "highways._layers.1.weight",
        ),
        (
            _network_change({"encoder.name": "lstm"}),
            "plain-LSTM variants",
        ),
        (
            _network_change({"token_embedder.char_dim": 0}),
            "word-only model",
        ),
        (
            _network_change({"encoder.projection_dim": 12}),
            "projection_dim 12 >= encoder.dim 12",
        ),
        (
            _network_change({"token_embedder.activation": "x"}),
            "must be 'relu' or 'tanh'. Received: 'x'.",
        ),
        (
            _network_change({"encoder.n_layers": "2"}),
            "`encoder.n_layers` must be an integer >= 1. Received: '2'.",
        ),
        # Every value of the network config is checked by name (issue 24).
        (
            lambda p: _edit_json(
                _config(p),
                lambda c: c["token_embedder"]["filters"][0].__setitem__(1, "4"),
            ),
            r"tiny_cnn.json `token_embedder.filters\[0\]` num_filters must "
            "be an integer >= 1. Received: '4'.",
        ),
        (
            lambda p: _edit_json(
                _config(p),
                lambda c: c["token_embedder"]["filters"][1].__setitem__(
                    0, True
                ),
            ),
            r"`token_embedder.filters\[1\]` width must be an integer >= 1. "
            "Received: True.",
        ),
        (
            lambda p: _edit_json(
                _config(p),
                lambda c: c["token_embedder"]["filters"][0].__setitem__(0, 1.5),
            ),
            r"`token_embedder.filters\[0\]` width must be an integer >= 1. "
            "Received: 1.5.",
        ),
        (
            _network_change({"token_embedder.filters": []}),
            "must be a list of \\[width, num_filters\\] pairs",
        ),
        (
            _network_change({"encoder.name": ["elmo"]}),
            "Received: \\{'encoder': \\['elmo'\\]",
        ),
        (
            _network_change({"encoder.dim": 12.5}),
            "`encoder.dim` must be an integer >= 1. Received: 12.5.",
        ),
        (
            lambda p: (
                os.mkfifo(p / "char.dic.tmp")
                or os.replace(p / "char.dic.tmp", p / "char.dic")
            ),
            "char.dic is a pipe",
        ),
    ],
)
def test_bad_model_folders_give_clear_errors(folder, damage, message):
    damage(folder)
    with pytest.raises(WeightFileError, match=message):
        keras_elmo.load_bilm(str(folder))


def test_config_is_found_as_efml_finds_it(folder):
    # The published config.json names a path on the trainer's machine;
    # EFML falls back to the base name in the folder, then to its packaged
    # configs, whose network keras_elmo knows.
    config, source = read_network_config(str(folder))
    assert source == str(folder / "tiny_cnn.json")
    _edit_json(
        folder / "config.json",
        lambda c: c.update(config_path="/x/cnn_50_100_512_4096_sample.json"),
    )
    config, source = read_network_config(str(folder))
    assert source == "cnn_50_100_512_4096_sample.json"
    assert config == PACKAGED_CONFIGS[source]
    assert config["encoder"]["dim"] == 4096


@pytest.mark.large  # ~15 s
def test_a_folder_holding_the_model_folder_loads(tmp_path):
    shutil.copytree(_folder("char_model"), tmp_path / "zh.model")
    bilm = keras_elmo.load_bilm(str(tmp_path))
    assert (
        bilm.count_params()
        == keras_elmo.load_bilm(_folder("char_model")).count_params()
    )


# === Presets ===


def test_efml_presets_are_the_published_languages():
    efml = [
        p
        for p in pretrained.PRESETS.values()
        if p.kind == "elmo_for_many_langs"
    ]
    assert len(efml) == 44
    urls = [p.files["model"].url for p in efml]
    assert len(set(urls)) == 44
    assert all(
        u.startswith("http://vectors.nlpl.eu/repository/11/") for u in urls
    )
    assert pretrained.PRESETS["zh"].files["model"].url.endswith("/179.zip")
    assert pretrained.PRESETS["en"].files["model"].url.endswith("/144.zip")
    assert all(p.files["model"].extract == "zip" for p in efml)


@pytest.fixture
def served_zip(tmp_path, monkeypatch):
    """The char_model folder as a zip on a local HTTP server, as a preset."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(os.listdir(_folder("char_model"))):
            archive.write(
                os.path.join(_folder("char_model"), name), f"tiny.model/{name}"
            )
    refuse_other_hosts(monkeypatch)
    server = ModelServer({"/11/999.zip": buffer.getvalue()})
    monkeypatch.setenv("KERAS_ELMO_HOME", str(tmp_path / "cache"))
    preset = pretrained.Preset(
        name="tiny-efml",
        kind="elmo_for_many_langs",
        language="zh",
        description="the EFML fixture",
        files={
            "model": pretrained.PresetFile(
                server.url + "/11/999.zip", extract="zip"
            )
        },
    )
    monkeypatch.setitem(pretrained.PRESETS, "tiny-efml", preset)
    yield
    server.stop()


def test_efml_preset_downloads_unpacks_and_loads(served_zip):
    bilm = keras_elmo.load_bilm("tiny-efml")
    sentences = META["sets"]["chinese"]
    for i, layers in enumerate(_layers(bilm, sentences)):
        expected = EXPECTED[f"char_model/chinese/{i}"]
        np.testing.assert_allclose(layers, expected, atol=ATOL, rtol=0)


# === Command line and serving ===


def test_cli_embed_reads_a_model_folder(tmp_path):
    from keras_elmo_cli import main

    sentences = [s for s in META["sets"]["chinese"] if "\u3000" not in s[0]]
    text = tmp_path / "in.txt"
    text.write_text("\n".join(" ".join(s) for s in sentences) + "\n", "utf-8")
    output = tmp_path / "out.hdf5"
    argv = ["embed", "--model", _folder("word_model"), "--quiet"]
    argv += ["--input", str(text), "--output", str(output)]
    assert main(argv) == 0
    indices = [META["sets"]["chinese"].index(s) for s in sentences]
    with h5py.File(output, "r") as f:
        for line, i in enumerate(indices):
            np.testing.assert_allclose(
                f[str(line)][...],
                EXPECTED[f"word_model/chinese/{i}"],
                atol=ATOL,
                rtol=0,
            )


@pytest.mark.large
def test_savedmodel_export_reads_strings_with_the_char_vocabulary(
    bilms, tmp_path
):
    from keras_elmo.export import export_savedmodel

    path = str(tmp_path / "served")
    # A token cache for two words: the others go through the characters.
    export_savedmodel(bilms["word_model"], path, cache_vocab=["今", "好"])
    served = tf.saved_model.load(path).signatures["tokens"]
    sentence = META["sets"]["chinese"][0]
    out = served(
        tokens=tf.constant([sentence]),
        sequence_len=tf.constant([len(sentence)]),
    )
    # The default mix weighs the layers equally: EFML's average.
    expected = EXPECTED["word_model/chinese/0"].mean(axis=0)
    np.testing.assert_allclose(out["elmo"][0], expected, atol=ATOL, rtol=0)
