"""Protein FASTA input of `keras-elmo embed` and `embed-corpus`
(docs/proteins.md): per-residue and per-protein vectors equal to the
page's Python recipe (load_bilm, batch_to_ids, the sum over layers then
the mean over residues), keyed by record id, each distinct sequence
embedded once; damaged FASTA gives an error naming the file and line, or
bad-record lines, never a traceback."""

import glob
import gzip
import hashlib
import json
import os
import sys

import h5py
import keras
import numpy as np
import pyarrow.parquet as pq
import pytest

import keras_elmo
from elmo_core.errors import KerasElmoError
from elmo_core.proteins import fasta
from keras_elmo_cli import main
from tests.helpers import MODEL_DIR

# id -> sequence as written (case, line breaks, a stop); seq3 repeats
# seq2, so it is embedded once.
RECORDS = [
    ("sp|P69905|HBA_HUMAN", "MVLSPADKTNVKAAWGKV\nGAHAGEYGAEALERMF\nLSFPTTK"),
    ("seq2", "MVTYDFGSDEMHD"),
    ("seq3", "mvtydfgsdemhd*"),
    ("short", "MK"),
    ("rare", "MXBZUOACDEFGHIKLMNPQRSTVWY" * 3),
]


def _clean(sequence):
    return "".join(sequence.split()).upper().rstrip("*")


def _fasta_text(records):
    return "".join(f">{i} a description\n{s}\n" for i, s in records)


def _write(path, text):
    data = text if isinstance(text, bytes) else text.encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data)
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


@pytest.fixture(scope="module")
def recipe():
    """docs/proteins.md's recipe, one protein at a time: sequence ->
    (per_residue (3, L, 2P), per_protein (2P,))."""
    bilm = keras_elmo.load_bilm(MODEL_DIR)
    cache = {}

    def vectors(sequence):
        if sequence not in cache:
            ids = keras_elmo.batch_to_ids([list(sequence)])
            layers = bilm(ids)["layer_outputs"]
            per_residue = np.stack(
                [keras.ops.convert_to_numpy(x)[0] for x in layers]
            )
            cache[sequence] = per_residue, per_residue.sum(0).mean(0)
        return cache[sequence]

    return vectors


def _embed(tmp_path, input_file, *flags, name="out.hdf5"):
    output = str(tmp_path / name)
    argv = ["embed", "--model", MODEL_DIR, "--input", input_file]
    return main([*argv, "--output", output, "--quiet", *flags]), output


@pytest.mark.parametrize("name", ["proteins.fasta", "proteins.fa.gz"])
def test_embed_gives_the_recipe_s_vectors(name, tmp_path, recipe):
    path = _write(tmp_path / name, _fasta_text(RECORDS))
    status, output = _embed(tmp_path, path)
    assert status == 0
    with h5py.File(output, "r") as f:
        id_to_hash = json.loads(f["id_to_hash"][0])
        assert list(id_to_hash) == [i for i, _ in RECORDS]
        for record_id, sequence in RECORDS:
            sequence = _clean(sequence)
            digest = hashlib.md5(sequence.encode()).hexdigest()
            assert id_to_hash[record_id] == digest
            per_residue, per_protein = recipe(sequence)
            got = f["per_residue"][record_id][...]
            assert got.shape == (3, len(sequence), 32)
            np.testing.assert_allclose(got, per_residue, atol=1e-6)
            np.testing.assert_allclose(
                f["per_protein"][record_id][...], per_protein, atol=1e-6
            )
        # The repeated sequence was embedded once: seq3 links seq2's data.
        assert f["per_protein"]["seq3"] == f["per_protein"]["seq2"]
        assert f["per_residue"]["seq3"] == f["per_residue"]["seq2"]
        assert "bad_records" not in f


def test_embed_top_and_one_group(tmp_path, recipe):
    path = _write(tmp_path / "p.faa", _fasta_text(RECORDS[:2]))
    flags = ("--top", "--protein-vectors", "per-protein")
    status, output = _embed(tmp_path, path, *flags)
    assert status == 0
    with h5py.File(output, "r") as f:
        assert "per_residue" not in f
        per_residue, _ = recipe("MVTYDFGSDEMHD")
        np.testing.assert_allclose(
            f["per_protein"]["seq2"][...], per_residue[-1].mean(0), atol=1e-6
        )


def test_a_5000_residue_sequence(tmp_path, recipe):
    rng = np.random.default_rng(5)
    long = "".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), 5000))
    lines = "\n".join(long[i : i + 60] for i in range(0, 5000, 60))
    path = _write(tmp_path / "long.fasta", f">long\n{lines}\n>s\nMKV\n")
    status, output = _embed(tmp_path, path, "--protein-vectors", "per-protein")
    assert status == 0
    with h5py.File(output, "r") as f:
        np.testing.assert_allclose(
            f["per_protein"]["long"][...], recipe(long)[1], atol=1e-6
        )


# Damaged FASTA: (file name, content, flags) -> what the error names.
DAMAGED = {
    "text before the first '>'": ("a.fasta", "MKV\n>a\nMKV\n", (), "line 1"),
    "empty record": ("a.fasta", ">a\nMKV\n>b\n\n>c\nMK\n", (), "line 3"),
    "bad residue": ("a.fa", ">a\nMKV\n>b\nMK1V\n", (), "'1'"),
    "too long": ("a.fa", ">a\nMKVLLA\n", ("--max-residues", "5"), "line 1"),
    "duplicate id": ("a.fa", ">a\nMKV\n>a x\nMKL\n", (), "line 3"),
    "no id": ("a.fa", ">a\nMKV\n> \nMKL\n", (), "line 3"),
    "not UTF-8": ("a.fa", b">a\nMKV\n>b\xff\nMKL\n", (), "line 3"),
    "empty file": ("a.fasta", "", (), "no FASTA record"),
    "blank file": ("a.fasta", "\n\n", (), "no FASTA record"),
    "truncated .gz": ("a.fasta.gz", None, (), "truncated"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damaged_fasta_is_an_error_naming_file_and_line(case, tmp_path, capsys):
    name, text, flags, named = DAMAGED[case]
    path = str(tmp_path / name)
    if text is None:
        data = gzip.compress(_fasta_text(RECORDS).encode())
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
    else:
        _write(path, text)
    status, output = _embed(tmp_path, path, *flags)
    err = capsys.readouterr().err
    assert status == 2, err
    assert path in err and named in err, err
    assert "Traceback" not in err
    assert not os.path.exists(output)


def test_skip_lists_the_bad_records(tmp_path):
    text = ">a\nMKV\n>b\n\n>c\nMJK\n>a\nMKL\n>d/1\nMK\n>e\nMKV\n"
    path = _write(tmp_path / "a.fasta", text)
    status, output = _embed(tmp_path, path, "--on-bad-line", "skip")
    assert status == 0
    with h5py.File(output, "r") as f:
        assert sorted(f["per_protein"]) == ["a", "e"]
        bad = json.loads(f["bad_records"][0])
    assert [(r["line"], r["reason"]) for r in bad] == [
        (3, "empty"),
        (5, "bad_residue"),
        (7, "duplicate_id"),
        (9, "bad_id"),
    ]


def test_fasta_flags_with_text_input_and_the_format_flag(tmp_path, capsys):
    text = _write(tmp_path / "s.txt", "M K V\n")
    status, _ = _embed(tmp_path, text, "--max-residues", "5")
    assert status == 2 and "--input-format" in capsys.readouterr().err
    # Any name is FASTA with --input-format fasta.
    path = _write(tmp_path / "p.txt", ">a\nMKV\n")
    status, output = _embed(tmp_path, path, "--input-format", "fasta")
    assert status == 0
    with h5py.File(output, "r") as f:
        assert list(f["per_protein"]) == ["a"]


def test_a_huge_line_is_never_held_whole(tmp_path):
    path = tmp_path / "huge.fasta"
    with open(path, "wb") as f:
        f.write(b">huge\n" + b"A" * (17 << 20) + b"\n>ok\nMKV\n")
    records = list(fasta.read_fasta(str(path)))
    assert [(r.id, r.reason) for r in records] == [
        ("huge", "too_long"),
        ("ok", None),
    ]


def test_missing_biopython_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "Bio.SeqIO.FastaIO", None)
    with pytest.raises(KerasElmoError, match=r"keras-elmo\[proteins\]"):
        list(fasta.read_fasta("any.fasta"))


# === embed-corpus ===


def _corpus_run(tmp_path, inputs, *flags):
    output = str(tmp_path / "corpus-out")
    argv = ["embed-corpus", "--model", MODEL_DIR, "--output", output]
    for path in inputs:
        argv += ["--input", path]
    return main([*argv, *flags]), output


def test_embed_corpus_gives_the_recipe_s_vectors(tmp_path, recipe, capsys):
    good = _write(tmp_path / "a.fasta", _fasta_text(RECORDS[:3]))
    packed = _write(tmp_path / "b.fa.gz", _fasta_text(RECORDS[3:]))
    damaged = _write(
        tmp_path / "c.fasta",
        ">x\nMKV\n>y\n\n>z\nMJK\n>x\nMKL\n>long\n" + "A" * 120 + "\n",
    )
    cut = gzip.compress(_fasta_text(RECORDS).encode())
    truncated = _write(tmp_path / "d.fa.gz", b"")
    with open(truncated, "wb") as f:
        f.write(cut[: len(cut) // 2])
    inputs = [good, packed, damaged, truncated]
    status, output = _corpus_run(tmp_path, inputs, "--max-residues", "100")
    err = capsys.readouterr().err
    # The truncated file: exit 2 after the rest is written, naming it.
    assert status == 2 and truncated in err and "Traceback" not in err
    rows = {}
    for shard in glob.glob(os.path.join(output, "embeddings-*.parquet")):
        for row in pq.read_table(shard).to_pylist():
            rows[(os.path.basename(row["file"]), row["line"])] = row
    expected = {("a.fasta", 1): "sp|P69905|HBA_HUMAN", ("a.fasta", 5): "seq2"}
    expected.update({("a.fasta", 7): "seq3", ("b.fa.gz", 1): "short"})
    expected.update({("b.fa.gz", 3): "rare", ("c.fasta", 1): "x"})
    assert {key: row["id"] for key, row in rows.items()} == expected
    sequences = dict(RECORDS, x="MKV")
    for row in rows.values():
        sequence = _clean(sequences[row["id"]])
        per_residue, per_protein = recipe(sequence)
        got = np.reshape(row["embedding"], row["shape"])
        np.testing.assert_allclose(got, per_residue, atol=1e-6)
        np.testing.assert_allclose(row["per_protein"], per_protein, atol=1e-6)
        digest = hashlib.md5(sequence.encode()).hexdigest()
        assert row["sequence_hash"] == digest
    bad = []
    for name in glob.glob(os.path.join(output, "bad_lines-*.jsonl")):
        with open(name) as f:
            bad += [json.loads(line) for line in f]
    reasons = {(os.path.basename(r["file"]), r["line"]): r for r in bad}
    assert {key: r["reason"] for key, r in reasons.items()} == {
        ("c.fasta", 3): "empty",
        ("c.fasta", 5): "bad_residue",
        ("c.fasta", 7): "duplicate_id",
        ("c.fasta", 9): "too_long",
        ("d.fa.gz", 1): "unreadable",
    }
    # The duplicate names the record that kept its id.
    assert "c.fasta, line 1" in reasons[("c.fasta", 7)]["detail"]
    with open(os.path.join(output, "summary.json")) as f:
        summary = json.load(f)
    assert summary["sentences"] == 6
    assert summary["settings"]["input_format"] == "fasta"


def test_embed_corpus_per_protein_read_as_the_page_does(tmp_path, recipe):
    path = _write(tmp_path / "uniprot.fasta", _fasta_text(RECORDS))
    flags = ("--protein-vectors", "per-protein")
    status, output = _corpus_run(tmp_path, [path], *flags)
    assert status == 0
    # docs/proteins.md's reading block, on this output.
    import torch

    ids, vectors = [], []
    for shard in sorted(glob.glob(f"{output}/embeddings-*.parquet")):
        table = pq.read_table(shard, columns=["id", "embedding"])
        ids += table.column("id").to_pylist()
        vectors.extend(table.column("embedding").to_numpy(zero_copy_only=False))
    per_protein = torch.from_numpy(np.stack(vectors))
    assert sorted(ids) == sorted(i for i, _ in RECORDS)
    for record_id, vector in zip(ids, per_protein.numpy()):
        sequence = _clean(dict(RECORDS)[record_id])
        np.testing.assert_allclose(vector, recipe(sequence)[1], atol=1e-6)
