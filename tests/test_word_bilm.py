"""Word-input biLMs: bilm-tf parity, official files, layers and serving."""

import json
import os

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from elmo_core.errors import KerasElmoError
from elmo_core.errors import WeightFileError
from elmo_core.ids.vocabulary import Vocabulary
from keras_elmo.formats.bilm_tf import save_bilm
from keras_elmo.layers.bilm import BiLM
from keras_elmo.layers.elmo_embedding import ELMoEmbedding
from keras_elmo.loading import load_bilm
from tests.helpers import HALF_POLICIES
from tests.helpers import OPTIONS as CHAR_OPTIONS
from tests.helpers import WEIGHTS as CHAR_WEIGHTS

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "bilm-tf-words")
MODEL = os.path.join(FIXTURES, "model")
OPTIONS = os.path.join(MODEL, "options.json")
WEIGHTS = os.path.join(MODEL, "lm_weights.hdf5")
VOCAB = os.path.join(MODEL, "vocab.txt")
ATOL, RTOL = 1e-5, 1e-4


def _json(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return json.load(f)


SENTENCES = _json("sentences.json")


def _layers(bilm, ids):
    """`(L + 1, batch, time, 2P)` NumPy."""
    return np.stack([np.asarray(x) for x in bilm(ids)["layer_outputs"]])


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.from_file(VOCAB)


@pytest.fixture(scope="module")
def bilm(vocab):
    return load_bilm(OPTIONS, WEIGHTS, vocabulary=VOCAB)


# === Parity with bilm-tf ===


def test_token_ids_are_those_bilm_tf_fed(vocab):
    expected = _json("token_ids.json")["ids"]
    for sentence, ids in zip(SENTENCES, expected):
        # bilm-tf's ids include <S> (1) and </S> (2); the BiLM adds them.
        assert ids[0] == 1 and ids[-1] == 2
        ours = vocab.batch_to_ids([sentence])[0] if sentence else []
        assert list(ours) == ids[1:-1]


def test_stateless_outputs_match_bilm_tf(bilm, vocab):
    with h5py.File(os.path.join(FIXTURES, "expected_stateless.hdf5")) as f:
        expected = [f[str(i)][...] for i in range(len(SENTENCES))]
    # One sentence a call, as bilm-tf was run ...
    for i, sentence in enumerate(SENTENCES):
        ours = _layers(bilm, vocab.batch_to_ids([sentence]))[:, 0]
        assert ours.shape == expected[i].shape
        np.testing.assert_allclose(ours, expected[i], atol=ATOL, rtol=RTOL)
    # ... and all in one padded batch: the same, zeros past each end.
    batch = _layers(bilm, vocab.batch_to_ids(SENTENCES))
    for i, sentence in enumerate(SENTENCES):
        n = len(sentence)
        np.testing.assert_allclose(
            batch[:, i, :n], expected[i], atol=ATOL, rtol=RTOL
        )
        assert not batch[:, i, n:].any()


def test_stateful_outputs_match_bilm_tf(vocab):
    stateful = load_bilm(OPTIONS, WEIGHTS, stateful=True, max_batch_size=6)
    plan = _json("stateful_batches.json")
    with h5py.File(os.path.join(FIXTURES, "expected_stateful.hdf5")) as f:
        for k, rows in enumerate(plan["batches"]):
            expected = f[f"batch{k}"][...]
            ids = vocab.batch_to_ids([SENTENCES[i] for i in rows])
            ours = _layers(stateful, ids)
            assert ours.shape == expected.shape
            np.testing.assert_allclose(ours, expected, atol=ATOL, rtol=RTOL)


def test_parameter_count_and_layer_zero_is_the_table(bilm, vocab):
    lstm = 2 * 2 * (16 * 64 + 64 + 16 * 8)  # 2 directions x 2 layers
    assert bilm.count_params() == 32 * 8 + lstm
    with h5py.File(WEIGHTS) as f:
        table = f["embedding"][...]
    ids = vocab.batch_to_ids([["the", "zebra", "."]])[0]
    layer0 = _layers(bilm, ids[None])[0, 0]
    np.testing.assert_array_equal(layer0[:, :8], table[ids - 1])
    np.testing.assert_array_equal(layer0[:, 8:], table[ids - 1])


def test_unknown_words_read_as_unk(bilm, vocab):
    unknown = vocab.batch_to_ids([["the", "zebra", "xylophone", "."]])
    literal = vocab.batch_to_ids([["the", "<UNK>", "<UNK>", "."]])
    np.testing.assert_array_equal(unknown, literal)
    assert unknown[0, 1] == vocab.unk_id + 1 == 3
    np.testing.assert_array_equal(
        _layers(bilm, unknown), _layers(bilm, literal)
    )


# === The same model as a char biLM, through its cached token embeddings ===


def test_word_bilm_with_a_char_bilms_token_table_gives_its_outputs():
    char_bilm = load_bilm(CHAR_OPTIONS, CHAR_WEIGHTS)
    words = "<S> </S> <UNK> the cat sat on a mat . dogs bark".split()
    vocab = Vocabulary(words)
    table = char_bilm.encode_tokens(
        keras_elmo.batch_to_ids([[w] for w in words])
    )
    config = char_bilm.get_config()
    word_bilm = BiLM(
        units=config["units"],
        projection_dim=config["projection_dim"],
        num_layers=config["num_layers"],
        cell_clip=config["cell_clip"],
        proj_clip=config["proj_clip"],
        use_skip_connections=config["use_skip_connections"],
        token_encoder="words",
        vocabulary_size=len(vocab),
    )
    word_bilm.build()
    word_bilm.word_embedding.embeddings.assign(np.asarray(table)[:, 0])
    lstms = word_bilm.forward_layers + word_bilm.backward_layers
    others = char_bilm.forward_layers + char_bilm.backward_layers
    for mine, theirs in zip(lstms, others):
        mine.set_weights(theirs.get_weights())
    sentences = [
        ["the", "cat", "sat", "on", "a", "mat", "."],
        ["dogs", "bark"],
        [],
        ["<S>", "a", "</S>", "cat"],
    ]
    by_chars = char_bilm(keras_elmo.batch_to_ids(sentences))
    by_words = word_bilm(vocab.batch_to_ids(sentences))
    for a, b in zip(by_chars["layer_outputs"], by_words["layer_outputs"]):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), atol=1e-6)
    np.testing.assert_array_equal(by_chars["mask"], by_words["mask"])


# === Official files ===


def test_save_load_round_trip_is_exact(bilm, vocab, tmp_path):
    options, weights = tmp_path / "options.json", tmp_path / "weights.hdf5"
    save_bilm(bilm, str(options), str(weights))
    written = json.loads(options.read_text())
    assert "char_cnn" not in written and written["n_tokens_vocab"] == 32
    with h5py.File(weights) as ours, h5py.File(WEIGHTS) as theirs:
        assert sorted(ours) == sorted(theirs)
        for name in _dataset_names(theirs):
            np.testing.assert_array_equal(ours[name][...], theirs[name][...])
    again = load_bilm(str(options), str(weights), vocabulary=vocab)
    ids = vocab.batch_to_ids(SENTENCES)
    np.testing.assert_array_equal(_layers(again, ids), _layers(bilm, ids))


def _dataset_names(f):
    names = []
    f.visititems(
        lambda name, item: (
            names.append(name) if isinstance(item, h5py.Dataset) else None
        )
    )
    return names


def _options(**lstm_changes):
    with open(OPTIONS) as f:
        options = json.load(f)
    options["lstm"].update(lstm_changes)
    return options


def test_missing_skip_connections_takes_the_default():
    options = _options()
    del options["lstm"]["use_skip_connections"]
    assert load_bilm(options, WEIGHTS).use_skip_connections is False


def test_vocabulary_of_another_size_is_an_error(tmp_path):
    short = tmp_path / "vocab.txt"
    short.write_text("<S>\n</S>\n<UNK>\nthe\n")
    with pytest.raises(WeightFileError, match=r"4 tokens.*32 rows"):
        load_bilm(OPTIONS, WEIGHTS, vocabulary=str(short))
    options = dict(_options(), n_tokens_vocab=40)
    with pytest.raises(WeightFileError, match=r"n_tokens_vocab=40.*32 rows"):
        load_bilm(options, WEIGHTS)


def test_vocabulary_without_special_tokens_is_an_error(tmp_path):
    with open(VOCAB) as f:
        lines = f.read().split("\n")[:-1]
    no_unk = tmp_path / "no_unk.txt"
    no_unk.write_text("\n".join(t for t in lines if t != "<UNK>") + "\nx\n")
    with pytest.raises(KerasElmoError, match="lacks the special.*<UNK>"):
        load_bilm(OPTIONS, WEIGHTS, vocabulary=str(no_unk))
    moved = tmp_path / "moved.txt"
    moved.write_text("\n".join(lines[1:] + lines[:1]) + "\n")
    with pytest.raises(KerasElmoError, match="first two lines"):
        load_bilm(OPTIONS, WEIGHTS, vocabulary=str(moved))


def test_word_options_need_the_embedding_dataset():
    with pytest.raises(WeightFileError, match="no 2-D dataset 'embedding'"):
        load_bilm(OPTIONS, CHAR_WEIGHTS)
    with pytest.raises(WeightFileError, match="word-input"):
        load_bilm(CHAR_OPTIONS, CHAR_WEIGHTS, vocabulary=VOCAB)


# === The layer ===


def _tiny(**overrides):
    kwargs = dict(
        units=8,
        projection_dim=4,
        token_encoder="words",
        vocabulary_size=6,
    )
    kwargs.update(overrides)
    return BiLM(**kwargs)


def test_config_round_trip_and_keras_saving(tmp_path):
    layer = _tiny()
    ids = np.array([[4, 5, 6], [6, 3, 0]], "int32")
    before = _layers(layer, ids)
    config = layer.get_config()
    assert config["token_encoder"] == "words"
    assert config["vocabulary_size"] == 6
    assert "filters" not in config and "char_embedding_dim" not in config
    np.testing.assert_array_equal(
        _layers(BiLM.from_config(config), ids).shape, before.shape
    )
    inputs = keras.Input((None,), dtype="int32")
    model = keras.Model(inputs, layer(inputs)["layer_outputs"][-1])
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_array_equal(loaded(ids), model(ids))
    assert layer.weights[0].path == f"{layer.name}/word_embedding/embeddings"


def test_character_config_is_unchanged():
    config = BiLM(filters=[[1, 4]], units=8, projection_dim=4).get_config()
    assert "token_encoder" not in config and "vocabulary_size" not in config
    assert {"filters", "deduplicate_tokens", "use_token_projection"} <= set(
        config
    )


def test_inputs_as_dict_cached_tokens_and_padding():
    layer = _tiny()
    ids = np.array([[4, 5, 6], [6, 3, 0]], "int32")
    plain = layer(ids)
    as_dict = layer({"token_ids": ids})
    cached = layer(
        {"token_embeddings": layer.encode_tokens(ids), "mask": ids > 0}
    )
    for a, b, c in zip(
        plain["layer_outputs"],
        as_dict["layer_outputs"],
        cached["layer_outputs"],
    ):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, atol=1e-6)
    assert plain["mask"].numpy().tolist() == [
        [True, True, True],
        [True, True, False],
    ]
    assert not np.asarray(plain["token_embeddings"])[1, 2].any()


def test_bad_word_inputs_raise():
    layer = _tiny()
    with pytest.raises(KerasElmoError, match=r"0\.\.6"):
        layer(np.array([[1, 7]], "int32"))
    with pytest.raises(KerasElmoError, match=r"0\.\.6"):
        layer(np.array([[1, -1]], "int32"))
    with pytest.raises(KerasElmoError, match="integer tensor"):
        layer(np.zeros((1, 2), "float32"))
    with pytest.raises(KerasElmoError, match="integer tensor"):
        layer(keras_elmo.batch_to_ids([["a"]]))
    with pytest.raises(KerasElmoError, match="'token_ids'"):
        layer({"character_ids": np.zeros((1, 2), "int32")})

    @tf.function
    def run(ids):
        return layer(ids)["mask"]

    with pytest.raises(tf.errors.InvalidArgumentError, match=r"0\.\.6"):
        run(tf.constant([[1, 9]]))


def test_invalid_arguments():
    with pytest.raises(KerasElmoError, match="vocabulary_size"):
        BiLM(units=8, projection_dim=4, token_encoder="words")
    with pytest.raises(KerasElmoError, match="token_encoder"):
        BiLM(units=8, projection_dim=4, token_encoder="bytes")
    with pytest.raises(KerasElmoError, match="vocabulary_size"):
        BiLM(units=8, projection_dim=4, vocabulary_size=10)


@pytest.mark.large
def test_training_flows_into_the_table_sparsely():
    layer = _tiny()
    ids = np.array([[4, 5, 0]], "int32")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(ids)["layer_outputs"][-1] ** 2)
    table = layer.word_embedding.embeddings
    gradient = tape.gradient(loss, table.value)
    assert isinstance(gradient, tf.IndexedSlices)
    dense = tf.convert_to_tensor(gradient).numpy()
    # Rows of <S> (id 1 -> row 0), </S>, and the two words; no padding row.
    assert sorted(np.flatnonzero(np.abs(dense).sum(1))) == [0, 1, 3, 4]


# === ELMoEmbedding with string input ===


def test_elmo_embedding_looks_words_up_in_graph(bilm, vocab, tmp_path):
    tokens = keras.Input((None,), dtype="string")
    elmo = ELMoEmbedding(bilm, vocabulary=vocab.tokens, dropout=0.0)
    model = keras.Model(tokens, elmo(tokens))
    strings = tf.constant(
        [["the", "quantum", "words", "."], ["the", "", "", ""]]
    )
    ids = vocab.batch_to_ids([["the", "quantum", "words", "."], ["the"]])
    expected = np.mean(_layers(bilm, ids), axis=0)  # initial mix: mean
    np.testing.assert_allclose(model(strings), expected, atol=1e-6)
    np.testing.assert_allclose(elmo(tf.constant(ids)), expected, atol=1e-6)
    mask = elmo.compute_mask(strings).numpy().tolist()
    assert mask == [[True] * 4, [True, False, False, False]]
    path = str(tmp_path / "tagger.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded(strings), model(strings), atol=1e-6)

    @tf.function(input_signature=[tf.TensorSpec((None, None), tf.string)])
    def serve(x):
        return model(x)

    np.testing.assert_allclose(serve(strings), expected, atol=1e-6)


def test_elmo_embedding_needs_the_vocabulary(bilm):
    with pytest.raises(KerasElmoError, match="vocabulary"):
        ELMoEmbedding(bilm)(tf.constant([["the"]]))
    with pytest.raises(KerasElmoError, match="3 tokens.*32 rows"):
        ELMoEmbedding(bilm, vocabulary=["<S>", "</S>", "<UNK>"])
    char_bilm = load_bilm(CHAR_OPTIONS, CHAR_WEIGHTS)
    with pytest.raises(KerasElmoError, match="word-input"):
        ELMoEmbedding(char_bilm, vocabulary=["<S>", "</S>", "<UNK>"])


# === Embedding dumps and the SavedModel ===


def test_embed_file_and_token_dump(bilm, vocab, tmp_path):
    from keras_elmo.corpus.bilm_dump import dump_token_embeddings
    from keras_elmo.corpus.bilm_dump import embed_file

    text = tmp_path / "sentences.txt"
    text.write_text(
        "".join(" ".join(s) + "\n" for s in SENTENCES), encoding="utf-8"
    )
    out = tmp_path / "layers.hdf5"
    assert embed_file(bilm, str(text), str(out), batch_size=5, vocabulary=VOCAB)
    with (
        h5py.File(out) as ours,
        h5py.File(os.path.join(FIXTURES, "expected_stateless.hdf5")) as theirs,
    ):
        for i in range(len(SENTENCES)):
            np.testing.assert_allclose(
                ours[str(i)][...], theirs[str(i)][...], atol=ATOL, rtol=RTOL
            )
    dump = tmp_path / "tokens.hdf5"
    dump_token_embeddings(bilm, VOCAB, str(dump), verbose=0, vocabulary=vocab)
    with h5py.File(dump) as ours, h5py.File(WEIGHTS) as theirs:
        np.testing.assert_array_equal(ours["embedding"], theirs["embedding"])
    with pytest.raises(KerasElmoError, match="needs its vocabulary"):
        embed_file(bilm, str(text), str(tmp_path / "x.hdf5"))


@pytest.mark.large
def test_savedmodel_carries_the_vocabulary(bilm, vocab, tmp_path):
    from keras_elmo.export import export_savedmodel

    path = export_savedmodel(bilm, str(tmp_path / "sm"), vocabulary=VOCAB)
    loaded = tf.saved_model.load(path)
    sentences = ["neural language models", "quantum zebras .", ""]
    tokens = [s.split() for s in sentences]
    layers = _layers(bilm, vocab.batch_to_ids(tokens))
    got = loaded.signatures["default"](sentences=tf.constant(sentences))
    np.testing.assert_allclose(got["lstm_outputs2"], layers[2], atol=1e-5)
    np.testing.assert_allclose(got["elmo"], layers.mean(0), atol=1e-5)
    assert got["sequence_len"].numpy().tolist() == [3, 3, 0]
    rows = np.array([[vocab.id(t) for t in tokens[0]], [3, 2, 2]], "int32")
    by_ids = loaded.signatures["token_ids"](
        token_ids=tf.constant(rows), sequence_len=tf.constant([3, 1])
    )
    np.testing.assert_allclose(
        by_ids["lstm_outputs1"][0], layers[1, 0], atol=1e-5
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="smaller than"):
        loaded.signatures["token_ids"](
            token_ids=tf.constant([[32]]), sequence_len=tf.constant([1])
        )
    with pytest.raises(KerasElmoError, match="needs its vocabulary"):
        export_savedmodel(bilm, str(tmp_path / "none"))


@pytest.mark.parametrize("policy", HALF_POLICIES)
def test_mixed_precision_stays_close_to_float32(bilm, vocab, policy):
    low = BiLM.from_config(dict(bilm.get_config(), dtype=policy))
    low.build()
    low.set_weights(bilm.get_weights())
    ids = vocab.batch_to_ids(SENTENCES[:3])
    out = low(ids)["layer_outputs"]
    assert out[0].dtype == policy.split("_")[1]
    assert {w.dtype for w in low.weights} == {"float32"}
    np.testing.assert_allclose(
        np.stack([np.asarray(x, "float32") for x in out]),
        _layers(bilm, ids),
        atol=0.1,
    )
