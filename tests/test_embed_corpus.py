"""The engine-neutral corpus embedder: each sentence equals its `keras-elmo
embed` dataset (bilm-tf fixture), whatever the batch, the input type (str,
UTF-8 bytes, token lists) or the layers asked for; bad lines carry their
reason; the embedder pickles small and loads its biLM once per process."""

import os
import pickle
import random

import h5py
import numpy as np
import pytest

import keras_elmo
from keras_elmo.cli import main
from keras_elmo.corpus import SentenceEmbedder
from keras_elmo.corpus.sentences import BadLine
from keras_elmo.corpus.sentences import token_batches
from keras_elmo.embedding_files import parquet_layout
from keras_elmo.errors import KerasElmoError
from tests.helpers import FIXTURES
from tests.helpers import MODEL_DIR

WORD_MODEL = os.path.join(os.path.dirname(FIXTURES), "bilm-tf-words", "model")
SENTENCES = [
    "The U.S. Centers for Disease Control",
    "Hello world !",
    "日本語 and 😀 tokens",
    " spaced   out  ",
    "a",
] + [f"sentence number {i} " + "x " * (i % 9) for i in range(20)]


def _reference(tmp_path, lines, *flags, model=MODEL_DIR):
    """`keras-elmo embed` of `lines`: the dataset of each line."""
    text = tmp_path / "reference.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = str(tmp_path / "reference.hdf5")
    argv = ["embed", "--model", model, "--input", str(text)]
    assert main([*argv, "--output", output, "--quiet", *flags]) == 0
    with h5py.File(output) as f:
        return [f[str(i)][...] for i in range(len(lines))]


@pytest.mark.parametrize("layers", ["all", "top", "average"])
def test_equals_keras_elmo_embed_for_str_bytes_and_tokens(tmp_path, layers):
    expected = _reference(tmp_path, SENTENCES, f"--{layers}")
    # A small budget: many biLM calls of other sizes than embed's.
    embedder = SentenceEmbedder(
        MODEL_DIR, output_layers=layers, max_batch_tokens=24
    )
    as_bytes = [s.encode("utf-8") for s in SENTENCES]
    as_tokens = [s.split() for s in SENTENCES]
    for given in (SENTENCES, as_bytes, as_tokens):
        got = embedder(given)
        assert len(got) == len(expected)
        for x, y in zip(got, expected):
            assert x.dtype == np.float32 and x.shape == y.shape
            np.testing.assert_allclose(x, y, atol=1e-6, rtol=0)


def test_a_word_biLM_takes_the_vocabulary_beside_its_options(tmp_path):
    lines = ["the cat sat", "an unknownword here ."]
    expected = _reference(tmp_path, lines, "--top", model=WORD_MODEL)
    got = SentenceEmbedder(WORD_MODEL, output_layers="top")(lines)
    for x, y in zip(got, expected):
        np.testing.assert_allclose(x, y, atol=1e-6, rtol=0)


def test_scalar_mix_and_float16_follow_the_layers(tmp_path):
    layers = SentenceEmbedder(MODEL_DIR)(SENTENCES[:3])
    weights, gamma = [0.5, -1.0, 2.0], 1.5
    mixed = SentenceEmbedder(
        MODEL_DIR, output_layers="mix", scalar_weights=weights, gamma=gamma
    )(SENTENCES[:3])
    mix = keras_elmo.layers.ScalarMix(initial_scalar_weights=weights)
    mix.build([(1, None, 32)] * 3)
    mix.gamma.assign(gamma)
    for x, layer in zip(mixed, layers):
        expected = mix(list(layer[:, None])).numpy()[0]
        np.testing.assert_allclose(x, expected, atol=1e-6, rtol=0)
    half = SentenceEmbedder(MODEL_DIR, output_layers="top", dtype="float16")
    for x, layer in zip(half(SENTENCES[:3]), layers):
        assert x.dtype == np.float16
        np.testing.assert_array_equal(x, layer[-1].astype(np.float16))


def test_bad_lines_carry_their_reason():
    embedder = SentenceEmbedder(MODEL_DIR, max_sentence_tokens=5)
    for value, reason in [
        ("", "empty"),
        (b"  \t ", "empty"),
        ([], "empty"),
        ("a b c d e f", "too_long"),
        (b"caf\xe9", "not_utf8"),
        ([b"ok", b"\xff"], "not_utf8"),
    ]:
        with pytest.raises(BadLine) as caught:
            embedder.tokens(value)
        assert caught.value.reason == reason, value
    with pytest.raises(BadLine, match="Sentence 1: .*not valid UTF-8"):
        embedder(["fine", b"\xff"])
    assert embedder.tokens(b"caf\xc3\xa9 au lait") == ["café", "au", "lait"]


@pytest.mark.parametrize("value", [3, None, 1.5, {"a": 1}, [["nested"]]])
def test_other_types_are_refused_by_name(value):
    embedder = SentenceEmbedder(MODEL_DIR)
    with pytest.raises(KerasElmoError, match="must be a") as caught:
        embedder.tokens(value)
    assert not isinstance(caught.value, BadLine)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(output_layers="bottom"), "`output_layers` must be one of"),
        (dict(scalar_weights=[1.0, 2.0, 3.0]), "are for `output_layers` 'mix'"),
        (dict(output_layers="mix"), "needs `scalar_weights`"),
        (dict(dtype="int8"), "`dtype` must be one of"),
        (
            dict(max_batch_tokens=0),
            "`max_batch_tokens` must be an integer >= 1",
        ),
        (dict(gamma=float("nan")), "`gamma` must be a finite number"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(KerasElmoError, match=message):
        SentenceEmbedder(MODEL_DIR, **kwargs)


def test_a_mix_of_the_wrong_size_is_refused_when_the_biLM_loads():
    embedder = SentenceEmbedder(
        MODEL_DIR, output_layers="mix", scalar_weights=[0.0, 0.0]
    )
    with pytest.raises(KerasElmoError, match="has 3 layers to mix"):
        embedder(["a b"])


def test_pickles_small_and_loads_once_per_process():
    embedder = SentenceEmbedder(MODEL_DIR, output_layers="top")
    model = embedder.load()
    copy = pickle.loads(pickle.dumps(embedder))
    assert len(pickle.dumps(embedder)) < 1000  # names, not weights
    # Another embedder of the same biLM (a copy, or other layers) shares it.
    assert copy.load() is model
    assert SentenceEmbedder(MODEL_DIR, dtype="float16").load() is model


def test_batches_hold_the_token_budget_and_every_sentence_once():
    rng = random.Random(0)
    lengths = [rng.randint(1, 40) for _ in range(300)]
    batches = token_batches(lengths, max_batch_tokens=64)
    assert sorted(i for batch in batches for i in batch) == list(range(300))
    for batch in batches:
        longest = max(lengths[i] for i in batch)
        assert len(batch) * longest <= 64
        assert [lengths[i] for i in batch] == sorted(lengths[i] for i in batch)


def test_an_output_without_summary_is_not_read(tmp_path):
    (tmp_path / "embeddings-00000-of-00001.parquet").write_bytes(b"half")
    with pytest.raises(KerasElmoError, match="not the output of a finished"):
        list(parquet_layout.read_embeddings(str(tmp_path)))
    (tmp_path / "summary.json").write_text('{"format": "other"}')
    with pytest.raises(KerasElmoError, match="not a keras-elmo corpus"):
        list(parquet_layout.read_embeddings(str(tmp_path)))
