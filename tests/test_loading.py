"""One resolver: every kind of biLM source loads the same biLM, through
the Python API (`keras_elmo.load_bilm`, `ELMoEmbedding("...")`) and the
command line (`keras-elmo embed --model X`).

Each kind is built from one fixture model: the bilm-tf test model (official
files, a pair string, its own folder, an export, a pair of URLs and a
preset name served by a loopback server, a `.keras` file), the
ELMoForManyLangs word model (its folder, a folder holding it, a `.keras`
file) and the compat training run. Outputs are compared with each other
and with the fixtures' reference outputs.
"""

import json
import os
import shlex
import shutil

import h5py
import keras
import numpy as np
import pytest

import keras_elmo
from elmo_core.errors import BiLMSourceError
from elmo_core.errors import KerasElmoError
from keras_elmo.loading import classify
from keras_elmo.loading import summaries
from keras_elmo_cli import main
from tests.helpers import MODEL_DIR
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.helpers import run_python
from tests.model_server import serve_fixture_as

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
COMPAT = os.path.join(FIXTURES, "compat")
RUN = os.path.join(COMPAT, "run")
MANY_LANGS = os.path.join(FIXTURES, "elmo_for_many_langs", "word_model")
SENTENCES = [["The", "cat", "sat", "."], ["Hello", "world"], ["ELMo"]]


@pytest.fixture(scope="module")
def expected():
    with np.load(os.path.join(COMPAT, "expected.npz")) as f:
        return dict(f)


@pytest.fixture
def server(tmp_path, monkeypatch):
    with serve_fixture_as(monkeypatch, tmp_path / "cache", "tiny") as served:
        yield served


def _export(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    keras_elmo.save_bilm(
        bilm, str(folder / "options.json"), str(folder / "weights.hdf5")
    )
    return str(folder)


def _wrapped_folder(tmp_path):
    shutil.copytree(MANY_LANGS, tmp_path / "outer" / "zh.model")
    return str(tmp_path / "outer")


# kind -> (how to build the source from tmp_path and the server, which
# model it is, what kind the resolver must find).
CHARACTER_SOURCES = {
    "official files": lambda t, s: (OPTIONS, WEIGHTS),
    "pair string": lambda t, s: (f"{OPTIONS},{WEIGHTS}",),
    "bilm-tf model folder": lambda t, s: (MODEL_DIR,),
    "export directory": lambda t, s: (_export(t),),
    "pair of URLs": lambda t, s: (
        f"{s.url}/m/options.json",
        f"{s.url}/m/weights.hdf5",
    ),
    "pair-of-URLs string": lambda t, s: (
        f"{s.url}/m/options.json,{s.url}/m/weights.hdf5",
    ),
    "preset name": lambda t, s: ("tiny",),
    ".keras file": lambda t, s: (os.path.join(COMPAT, "characters.keras"),),
}
MANY_LANGS_SOURCES = {
    "ELMoForManyLangs folder": lambda t: MANY_LANGS,
    "folder holding one": _wrapped_folder,
    ".keras file": lambda t: os.path.join(COMPAT, "elmo_for_many_langs.keras"),
}


def _layers(bilm, inputs):
    out = bilm(inputs)
    return np.stack([np.asarray(x) for x in out["layer_outputs"]])


def _embed_cli(tmp_path, name, model_flags):
    sentences = tmp_path / "sentences.txt"
    sentences.write_text(
        "\n".join(" ".join(s) for s in SENTENCES) + "\n", encoding="utf-8"
    )
    output = str(tmp_path / f"{name.replace(' ', '_')}.hdf5")
    argv = ["embed", *model_flags, "--input", str(sentences)]
    assert main([*argv, "--output", output, "--quiet"]) == 0
    with h5py.File(output) as f:
        return [f[str(i)][...] for i in range(len(SENTENCES))]


def _model_flags(source):
    if len(source) == 2:
        return ["--options", source[0], "--weights", source[1]]
    return ["--model", source[0]]


def _fixture_parity(bilm):
    """The stateless biLM gives bilm-tf's outputs of the fixture's first
    batch (top layer, forward and backward)."""
    with open(os.path.join(MODEL_DIR, "lm_embeddings_sentences.json")) as f:
        batch = [s[0].split() for s in json.load(f)]
    top = np.asarray(bilm(keras_elmo.batch_to_ids(batch))["layer_outputs"][-1])
    for k, sentence in enumerate(batch):
        path = os.path.join(MODEL_DIR, f"lm_embeddings_{k}.hdf5")
        with h5py.File(path) as f:
            target = f["0"][...]
        got = top[k, : len(sentence)]
        half = got.shape[-1] // 2
        got = np.stack([got[:, :half], got[:, half:]])
        np.testing.assert_allclose(got, target, atol=1e-5, rtol=0)


@pytest.fixture(scope="module")
def reference():
    """The bilm-tf fixture model's layers of SENTENCES, from its files."""
    bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    _fixture_parity(bilm)
    return _layers(bilm, keras_elmo.batch_to_ids(SENTENCES))


@pytest.mark.parametrize("kind", sorted(CHARACTER_SOURCES))
def test_every_character_source_loads_the_fixture_model(
    kind, server, tmp_path, reference, expected
):
    source = CHARACTER_SOURCES[kind](tmp_path, server)
    ids = keras_elmo.batch_to_ids(SENTENCES)
    bilm = keras_elmo.load_bilm(*source)
    np.testing.assert_allclose(_layers(bilm, ids), reference, atol=1e-6)
    if len(source) == 1:  # one string: ELMoEmbedding takes it too
        mix = [0.1, 0.5, -0.2]
        embedding = keras_elmo.layers.ELMoEmbedding(
            source[0], scalar_mix_weights=mix
        )
        np.testing.assert_allclose(
            np.asarray(embedding(ids)), expected["characters"], atol=1e-6
        )
    # The command line reads the same biLM.
    embedded = _embed_cli(tmp_path, kind, _model_flags(source))
    for i, sentence in enumerate(SENTENCES):
        np.testing.assert_allclose(
            embedded[i], reference[:, i, : len(sentence)], atol=1e-6
        )


def test_load_bilm_takes_other_bilm_arguments_from_any_source():
    ids = keras_elmo.batch_to_ids(SENTENCES)
    for source in ((OPTIONS, WEIGHTS), (MODEL_DIR,), (RUN,)):
        stateful = keras_elmo.load_bilm(*source, stateful=True)
        assert stateful.stateful
        plain = keras_elmo.load_bilm(*source)
        np.testing.assert_allclose(
            _layers(stateful, ids), _layers(plain, ids), atol=1e-6
        )


def test_load_bilm_refuses_arguments_that_change_the_sizes():
    # A run is read whole, then built again with the arguments: weights
    # that no longer fit are an error, never left random.
    with pytest.raises(KerasElmoError) as raised:
        keras_elmo.load_bilm(RUN, units=24)
    message = str(raised.value)
    assert raised.value.argument == "units"
    assert "`units` changes the sizes of the run" in message
    assert (
        ": forward_lstm_0/kernel has shape (8, 64) there but (8, 96) with "
        "it. A biLM's sizes come from its weights: leave it out (the "
        "weights say units=16)." in message
    )


def test_a_kind_registers_itself_and_explains_its_near_misses(tmp_path):
    # A new kind is one class: the resolver tries it in its order and
    # asks it about the paths no kind matches.
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "MINE").write_text("")
    (tmp_path / "almost").mkdir()
    (tmp_path / "almost" / "MINE.txt").write_text("")
    code = f"""
import os
from elmo_core.errors import BiLMSourceError
from keras_elmo.loading import classify
from keras_elmo.loading import summaries
from keras_elmo.sources import BiLMSource
from keras_elmo.sources import register_source_kind

@register_source_kind
class Mine(BiLMSource):
    summary = "a folder of mine"
    order = 25
    @classmethod
    def matches(cls, source):
        return os.path.isfile(os.path.join(source, "MINE"))
    @classmethod
    def near_miss(cls, path):
        if os.path.isfile(os.path.join(path, "MINE.txt")):
            return "holds MINE.txt; rename it MINE."

print(type(classify({str(tmp_path / "mine")!r})).__name__)
try:
    classify({str(tmp_path / "almost")!r})
except BiLMSourceError as error:
    print(error.message)
print("a folder of mine" in summaries())
"""
    out = run_python(code, check=True)
    assert out.stdout.splitlines() == [
        "Mine",
        "`source` holds MINE.txt; rename it MINE.",
        "True",
    ], out.stderr


@pytest.mark.parametrize("kind", sorted(MANY_LANGS_SOURCES))
def test_every_elmo_for_many_langs_source_loads_the_model(
    kind, tmp_path, expected
):
    bilm = keras_elmo.load_bilm(MANY_LANGS_SOURCES[kind](tmp_path))
    assert bilm.token_encoder == "elmo_for_many_langs"
    ids = bilm.encoder.batch_to_inputs(SENTENCES)
    top = np.asarray(bilm(ids)["layer_outputs"][-1])
    np.testing.assert_allclose(top, expected["elmo_for_many_langs"], atol=1e-6)


def test_elmo_for_many_langs_folder_through_the_cli(tmp_path):
    bilm = keras_elmo.load_bilm(MANY_LANGS)
    layers = _layers(bilm, bilm.encoder.batch_to_inputs(SENTENCES))
    for name, folder in (
        ("folder", MANY_LANGS),
        ("wrapped", _wrapped_folder(tmp_path)),
    ):
        embedded = _embed_cli(tmp_path, name, ["--model", folder])
        for i, sentence in enumerate(SENTENCES):
            np.testing.assert_allclose(
                embedded[i], layers[:, i, : len(sentence)], atol=1e-6
            )


def test_run_directory_through_the_api_and_the_cli(tmp_path, expected):
    ids = keras_elmo.batch_to_ids(SENTENCES)
    bilm = keras_elmo.load_bilm(RUN)
    layers = _layers(bilm, ids)
    np.testing.assert_allclose(layers, expected["run"], atol=1e-6)
    embedded = _embed_cli(tmp_path, "run", ["--model", RUN])
    for i, sentence in enumerate(SENTENCES):
        np.testing.assert_allclose(
            embedded[i], layers[:, i, : len(sentence)], atol=1e-6
        )
    # Its export (softmax and vocabulary beside it) reads back the same.
    export = str(tmp_path / "export")
    assert main(["export-weights", "--model", RUN, "--output", export]) == 0
    exported = keras_elmo.load_bilm(export)
    np.testing.assert_allclose(_layers(exported, ids), layers, atol=1e-6)


def test_a_keras_model_with_a_bilm_saved_now_loads(tmp_path):
    bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    inputs = keras.Input(shape=(None, 50), dtype="int32")
    model = keras.Model(inputs, bilm(inputs)["layer_outputs"][-1])
    path = str(tmp_path / "model.keras")
    model.save(path)
    ids = keras_elmo.batch_to_ids(SENTENCES)
    np.testing.assert_allclose(
        _layers(keras_elmo.load_bilm(path), ids), _layers(bilm, ids), atol=0
    )


def test_the_kinds_found(tmp_path, server):
    kinds = {
        OPTIONS + "," + WEIGHTS: "bilm-tf",
        MODEL_DIR: "bilm-tf",
        RUN: "run",
        MANY_LANGS: "elmo_for_many_langs",
        os.path.join(COMPAT, "words.keras"): "keras",
        "tiny": "bilm-tf",
    }
    for source, kind in kinds.items():
        assert classify(source, progress=False).kind == kind, source


def test_nothing_matches_lists_what_was_found_and_the_kinds(tmp_path):
    folder = tmp_path / "stuff"
    folder.mkdir()
    (folder / "notes.txt").write_text("x", encoding="utf-8")
    (folder / "a.json").write_text("{}", encoding="utf-8")
    with pytest.raises(BiLMSourceError) as raised:
        keras_elmo.load_bilm(str(folder))
    message = str(raised.value)
    assert f"Received: source={str(folder)!r}" in message
    assert "a folder holding a.json, notes.txt" in message
    for kind in summaries():
        assert kind in message
    # The same error for another argument names that argument (the
    # command line shows it as its flag).
    with pytest.raises(BiLMSourceError) as raised:
        classify(str(folder), argument="init_from")
    assert raised.value.argument == "init_from"
    assert f"Received: init_from={str(folder)!r}" in str(raised.value)
    with pytest.raises(BiLMSourceError, match="no such file or directory"):
        keras_elmo.load_bilm(str(tmp_path / "missing" / "model"))
    with pytest.raises(BiLMSourceError, match="is a file"):
        keras_elmo.load_bilm(str(folder / "notes.txt"))
    with pytest.raises(BiLMSourceError, match="Did you mean 'original'"):
        keras_elmo.load_bilm("orignal")
    with pytest.raises(BiLMSourceError, match="Did you mean 'original'"):
        keras_elmo.layers.ELMoEmbedding("orignal")


def test_download_classifies_as_the_loader_does(server):
    from elmo_core.pretrained import download

    pair = f"{server.url}/m/options.json,{server.url}/m/weights.hdf5"
    paths = download(pair, progress=False)
    assert sorted(paths) == ["options", "weights"]
    assert main(["download", "tiny", "--quiet"]) == 0
    with pytest.raises(BiLMSourceError, match="is a local path"):
        download(MODEL_DIR)
    with pytest.raises(BiLMSourceError, match="Did you mean 'tiny'"):
        download("tinyy")


def test_vocabulary_is_checked_for_every_kind(tmp_path):
    from elmo_core.errors import WeightFileError

    words = os.path.join(FIXTURES, "bilm-tf-words", "model")
    vocab = os.path.join(words, "vocab.txt")
    keras_file = os.path.join(COMPAT, "words.keras")
    bilm = keras_elmo.load_bilm(keras_file, vocabulary=vocab)
    assert bilm.encoder.needs_vocabulary
    short = tmp_path / "short.txt"
    short.write_text("<S>\n</S>\n<UNK>\n", encoding="utf-8")
    for source in ((keras_file,), (words,)):
        with pytest.raises(WeightFileError, match="3 tokens but"):
            keras_elmo.load_bilm(*source, vocabulary=str(short))
    with pytest.raises(WeightFileError, match="is for word-input biLMs"):
        keras_elmo.load_bilm(MODEL_DIR, vocabulary=vocab)


def test_init_from_an_elmo_for_many_langs_model_is_refused_clearly():
    source = classify(MANY_LANGS, argument="init_from")
    with pytest.raises(KerasElmoError, match="cannot be trained here"):
        source.bilm_size()


@pytest.mark.parametrize(
    "keyword, value", [("dropout", None), ("max_batch_size", "many")]
)
def test_a_bad_keyword_is_blamed_on_the_keyword_not_the_file(keyword, value):
    with pytest.raises(KerasElmoError) as raised:
        keras_elmo.load_bilm(OPTIONS, WEIGHTS, **{keyword: value})
    message = str(raised.value)
    assert raised.value.argument == keyword
    assert message.startswith(f"`{keyword}` must be"), message
    assert "options.json" not in message
    assert not isinstance(raised.value, keras_elmo.WeightFileError)


def _files_under(folder):
    """`folder`, its subfolders and their files, as real paths (a source
    names the folders it reads too: no output may go into one)."""
    return sorted(
        {
            os.path.realpath(os.path.join(directory, name))
            for directory, _, names in os.walk(folder)
            for name in ["", *names]
        }
    )


def _real(*paths):
    return sorted(os.path.realpath(path) for path in paths)


def test_each_kind_lists_every_file_it_reads(tmp_path, server):
    from elmo_core import pretrained

    export = str(tmp_path / "export")
    assert main(["export-weights", "--model", RUN, "--output", export]) == 0
    # A network config outside the model folder, named by its path.
    many_langs = tmp_path / "many_langs"
    shutil.copytree(MANY_LANGS, many_langs)
    network = tmp_path / "elsewhere" / "network.json"
    network.parent.mkdir()
    shutil.move(many_langs / "tiny_cnn.json", network)
    config = json.loads((many_langs / "config.json").read_text("utf-8"))
    config["config_path"] = str(network)
    (many_langs / "config.json").write_text(json.dumps(config), "utf-8")
    keras_file = os.path.join(COMPAT, "words.keras")
    cached = pretrained.fetch("tiny", progress=False)
    expected_inputs = {
        f"{OPTIONS},{WEIGHTS}": _real(OPTIONS, WEIGHTS),
        MODEL_DIR: _real(OPTIONS, WEIGHTS, MODEL_DIR),
        export: _files_under(export),
        # A run: its files and checkpoint, not the folder (an export may
        # go beside them); this one has no history.json or plan.
        RUN: _real(f"{RUN}/config.json", f"{RUN}/vocab.txt")
        + _files_under(os.path.join(RUN, "checkpoint")),
        str(many_langs): _files_under(many_langs) + _real(network),
        _wrapped_folder(tmp_path): _files_under(
            tmp_path / "outer" / "zh.model"
        ),
        keras_file: _real(keras_file),
        "tiny": _real(cached["options"], cached["weights"]),
    }
    assert sorted(os.listdir(export)) == [
        "options.json", "softmax.hdf5", "vocab.txt", "weights.hdf5"
    ]  # fmt: skip
    for source, files in expected_inputs.items():
        inputs = classify(source, progress=False).inputs()
        assert sorted(inputs) == sorted(files), source
    # The biLM reads through that outside config as the inputs say.
    assert keras_elmo.load_bilm(str(many_langs)).count_params() > 0


def test_an_output_over_a_file_the_source_reads_is_refused(tmp_path, capsys):
    export = tmp_path / "export"
    assert (
        main(["export-weights", "--model", RUN, "--output", str(export)]) == 0
    )
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("The cat sat .\n", encoding="utf-8")
    vocab = export / "vocab.txt"
    before = vocab.read_bytes()
    argv = ["embed", "--model", str(export), "--input", str(sentences)]
    assert main([*argv, "--output", str(vocab), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--output is also an input" in err
    assert f"Received: --output {shlex.quote(str(vocab))}." in err
    assert vocab.read_bytes() == before


def test_presets_and_sources_share_one_vocabulary_of_kinds():
    from elmo_core import pretrained
    from keras_elmo.sources import ELMoForManyLangsFolder
    from keras_elmo.sources import OfficialFiles

    source_kinds = {OfficialFiles.kind, ELMoForManyLangsFolder.kind}
    for preset in pretrained.PRESETS.values():
        assert preset.kind in source_kinds, preset.name
