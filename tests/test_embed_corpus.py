"""The engine-neutral corpus embedder: each sentence equals its `keras-elmo
embed` dataset (bilm-tf fixture), whatever the batch, the input type (str,
UTF-8 bytes, token lists) or the layers asked for; bad lines carry their
reason; the embedder pickles small and loads its biLM once per process."""

import json
import os
import pickle
import random

import h5py
import numpy as np
import pytest

import keras_elmo
from elmo_core.embedding_files import parquet_layout
from elmo_core.embedding_files.sentences import BadLine
from elmo_core.embedding_files.token_batches import token_batches
from elmo_core.errors import KerasElmoError
from keras_elmo.corpus import SentenceEmbedder
from keras_elmo_cli import main
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
        (
            dict(output_layers="mix", scalar_weights=[0, 0, 0], gamma=np.nan),
            "`gamma` must be a finite number",
        ),
        (dict(gamma=2.0), "`gamma` scales the mix of `scalar_weights`"),
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


# === One sentence, None, padding: refused with what to pass ===


@pytest.mark.parametrize(
    "sentences, words",
    [
        ("Hello", "is one sentence; pass a list"),
        (b"Hello", "is one sentence; pass a list"),
        (None, "must be a list of lines"),
        (3, "must be a list of lines"),
        ({"a": 1}, "must be a list of lines"),
        (np.array("a b"), "must be a list of lines"),
        (np.array([["a", "b"], ["c", ""]]), "Token 1 of a sentence is empty"),
        ([["a", "  "]], "is empty or blank"),
        ([["a", None]], "Token 1 of a sentence must be a str"),
    ],
)
def test_what_is_no_list_of_sentences_is_refused(sentences, words):
    embedder = SentenceEmbedder(MODEL_DIR, output_layers="top")
    with pytest.raises(KerasElmoError, match=words) as caught:
        embedder(sentences)
    assert caught.value.argument == "sentences"
    assert not isinstance(caught.value, BadLine)


def test_a_2d_array_of_tokens_is_a_list_of_token_lists():
    embedder = SentenceEmbedder(MODEL_DIR, output_layers="top")
    rows = np.array([["the", "cat"], ["a", "dog"]])
    got = embedder(rows)
    for x, y in zip(got, embedder([["the", "cat"], ["a", "dog"]])):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("source", [None, 3, b"model", ""])
def test_a_source_of_another_type_is_refused_at_once(source):
    with pytest.raises(KerasElmoError, match="must be a biLM source") as e:
        SentenceEmbedder(source)
    assert e.value.argument == "source"


# === New weights on disk are never served from an old load ===


def _rewrite_weights(folder, scale):
    """Scales every dataset of the folder's hdf5 weights, in place (the
    same inode) or as a new file replacing it."""
    path = os.path.join(folder, "lm_weights.hdf5")
    with h5py.File(path, "r+") as f:
        f.visititems(
            lambda name, item: (
                item.__setitem__(Ellipsis, item[...] * scale)
                if isinstance(item, h5py.Dataset) and item.dtype.kind == "f"
                else None
            )
        )


def test_replaced_weights_are_loaded_again(tmp_path):
    import shutil

    folder = str(tmp_path / "model")
    shutil.copytree(MODEL_DIR, folder)
    lines = ["the cat sat", "a b c"]
    first = SentenceEmbedder(folder, output_layers="top")
    before = first(lines)
    model = first.load()
    # Rewritten in place (same inode; size and time may not change much).
    _rewrite_weights(folder, 0.5)
    after = SentenceEmbedder(folder, output_layers="top")(lines)
    assert first.load() is not model
    assert not np.allclose(before[0], after[0], atol=1e-4)
    # What `keras-elmo embed` gives with the new weights.
    for x, y in zip(after, _reference(tmp_path, lines, "--top", model=folder)):
        np.testing.assert_allclose(x, y, atol=1e-6, rtol=0)
    # Replaced by another file (a new inode), the old one restored.
    shutil.copy(
        os.path.join(MODEL_DIR, "lm_weights.hdf5"),
        os.path.join(folder, "new.hdf5"),
    )
    os.replace(
        os.path.join(folder, "new.hdf5"),
        os.path.join(folder, "lm_weights.hdf5"),
    )
    again = SentenceEmbedder(folder, output_layers="top")(lines)
    for x, y in zip(again, before):
        np.testing.assert_allclose(x, y, atol=1e-6, rtol=0)
    # Unchanged files: the same load.
    assert SentenceEmbedder(folder).load() is first.load()


# === read_embeddings trusts nothing it reads ===


def _output(directory, rows, names=None):
    """A corpus output written by the layout's own functions: one shard
    of `rows` ((file, line, array) each) and its summary."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(directory, exist_ok=True)
    name = "embeddings-00000-of-00001.parquet"
    records = [parquet_layout.embedding_record((f, n), a) for f, n, a in rows]
    table = pa.Table.from_pylist(
        records, schema=parquet_layout.parquet_schema("float32")
    )
    pq.write_table(table, os.path.join(directory, name))
    text = parquet_layout.summary(
        {"sentences": len(rows)}, {}, names or [name], []
    )
    with open(os.path.join(directory, "summary.json"), "w") as f:
        f.write(text)
    return os.path.join(directory, name)


def test_read_embeddings_reads_what_the_layout_writes(tmp_path):
    pytest.importorskip("pyarrow")
    rows = [
        ("a.txt", 1, np.ones((3, 2, 4), np.float32)),
        ("a.txt", 2, np.arange(8, dtype=np.float32).reshape(2, 4)),
    ]
    _output(str(tmp_path), rows)
    got = list(parquet_layout.read_embeddings(str(tmp_path)))
    assert [(f, n) for f, n, _ in got] == [("a.txt", 1), ("a.txt", 2)]
    for (_, _, x), (_, _, y) in zip(got, rows):
        np.testing.assert_array_equal(x, y)


def _summary(directory, **changes):
    path = os.path.join(directory, "summary.json")
    with open(path) as f:
        value = json.load(f)
    value.update(changes)
    with open(path, "w") as f:
        json.dump(value, f)


def test_read_embeddings_refuses_damaged_outputs(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [("a.txt", 1, np.ones((2, 4), np.float32))]

    def output(name):
        directory = str(tmp_path / name)
        return directory, _output(directory, rows)

    def refused(directory, words):
        with pytest.raises(KerasElmoError, match=words):
            list(parquet_layout.read_embeddings(directory))

    directory, shard = output("truncated")
    with open(shard, "r+b") as f:
        f.truncate(os.path.getsize(shard) // 2)
    refused(directory, "is not a whole Parquet shard .* truncated")

    directory, shard = output("shape")
    wrong = [("a.txt", 1, np.ones((2, 4), np.float32))]
    records = [parquet_layout.embedding_record((f, n), a) for f, n, a in wrong]
    records[0]["shape"] = [3, 4]
    pq.write_table(
        pa.Table.from_pylist(
            records, schema=parquet_layout.parquet_schema("float32")
        ),
        shard,
    )
    refused(directory, r"line 1, has shape \[3, 4\] for 8 values")

    directory, _ = output("nested")
    with open(os.path.join(directory, "summary.json"), "w") as f:
        f.write('{"format": ' + "[" * 100000 + "]" * 100000 + "}")
    refused(directory, "nests JSON values more than")

    directory, _ = output("string-list")
    _summary(directory, embedding_files="embeddings-00000-of-00001.parquet")
    refused(directory, "`embedding_files` must be a list of shard names")

    directory, _ = output("path")
    _summary(directory, embedding_files=["../../etc/passwd"])
    refused(directory, "is not the name of a shard")

    directory, shard = output("missing")
    os.remove(shard)
    refused(directory, "is missing, though summary.json lists it")

    directory, shard = output("not-parquet")
    with open(shard, "wb") as f:
        f.write(b"PAR1" + b"\0" * 100)
    refused(directory, "is not a whole Parquet shard")

    directory, shard = output("columns")
    pq.write_table(pa.table({"file": ["a"], "line": ["1"]}), shard)
    refused(directory, "its column 'line' is string, expected int64")
