"""The hdf5 writers check their input, then read it again: a file that
changes in between (grown, shrunk or rewritten) is refused, nothing is
written, and an output already there is kept."""

import h5py
import numpy as np
import pytest

from elmo_core.embedding_files.hdf5_layout import write_sentence_embeddings
from elmo_core.embedding_files.hdf5_layout import write_token_embeddings
from elmo_core.errors import TextFileError

LINES = "the cat sat\n\na dog ran fast\n"


def _layers_of(change=None):
    """A stand-in biLM of 3 layers and width 4 that runs `change` (a
    change to the input) on its first call."""
    calls = []

    def layers_of(batch):
        if change is not None and not calls:
            change()
        calls.append(len(batch))
        time = max([len(tokens) for tokens in batch] + [1])
        return np.ones((len(batch), 3, time, 4), "float32")

    return layers_of


def _grow(path):
    with open(path, "a", encoding="utf-8") as f:
        f.write("one line more\n")


def _shrink(path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("the cat sat\n")


def _rewrite(path):
    # As many lines, other words.
    with open(path, "w", encoding="utf-8") as f:
        f.write("a bird flew\n\nthe river ran high and fast\n")


def test_an_unchanged_input_is_embedded_line_by_line(tmp_path):
    text = tmp_path / "in.txt"
    text.write_text(LINES, encoding="utf-8")
    out = tmp_path / "out.hdf5"
    count = write_sentence_embeddings(
        _layers_of(), str(text), str(out), batch_size=2, verbose=0
    )
    assert count == 3
    with h5py.File(out) as f:
        assert [f[str(n)].shape for n in range(3)] == [
            (3, 3, 4),
            (3, 0, 4),
            (3, 4, 4),
        ]


@pytest.mark.parametrize("change", [_grow, _shrink, _rewrite])
def test_an_input_changed_midway_writes_nothing(change, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text(LINES * 40, encoding="utf-8")
    out = tmp_path / "out.hdf5"
    out.write_bytes(b"someone's results")
    with pytest.raises(TextFileError, match="changed while it was read"):
        write_sentence_embeddings(
            _layers_of(lambda: change(text)),
            str(text),
            str(out),
            batch_size=2,
            verbose=0,
        )
    assert out.read_bytes() == b"someone's results"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.hdf5"]


def _embed_tokens(change=None):
    def embed_tokens(words):
        for n, _ in enumerate(words):
            if n == 0 and change is not None:
                change()
            yield np.full((1, 4), n, "float32")

    return embed_tokens


def test_an_unchanged_vocabulary_is_dumped_row_by_row(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("<S>\n</S>\ncat\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    assert (
        write_token_embeddings(_embed_tokens(), str(vocab), str(out), 4, 0) == 3
    )
    with h5py.File(out) as f:
        np.testing.assert_array_equal(f["embedding"][:, 0], [0, 1, 2])


@pytest.mark.parametrize("change", [_grow, _shrink, _rewrite])
def test_a_vocabulary_changed_midway_writes_nothing(change, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("<S>\n</S>\ncat\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    with pytest.raises(TextFileError, match="changed while it was read"):
        write_token_embeddings(
            _embed_tokens(lambda: change(vocab)), str(vocab), str(out), 4, 0
        )
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["vocab.txt"]
