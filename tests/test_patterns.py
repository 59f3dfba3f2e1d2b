"""Which files a pattern names (`elmo_core.text.patterns`), on every
command that takes patterns: a pattern is matched once, and each file it
matches is read as named, whatever characters the name holds (issue 63:
`x[1].txt` could not be given at all, and a file matched by a glob was
read as another). The Beam commands' side is in test_embed_corpus_beam."""

import glob
import gzip
import os

import pytest

from elmo_core.errors import KerasElmoError
from elmo_core.text.patterns import resolve_files
from keras_elmo_cli import main
from tests.helpers import TINY_TRAIN_FLAGS

# Names that hold every glob character, a brace, spaces and non-ASCII.
ODD = ["x[1].txt", "a*b.txt", "q?.txt", "{c,d}.txt", "two words.txt", "é ü.txt"]
# Files the odd names match as patterns (what a second match would read).
DECOYS = ["x1.txt", "aZZb.txt", "qQ.txt"]


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for i, name in enumerate(ODD + DECOYS):
        (folder / name).write_text(f"the cat {i} sat on the mat .\n" * (i + 1))
    return folder


def test_each_odd_name_is_given_literally_in_brackets(corpus):
    for name in ODD:
        escaped = os.path.join(glob.escape(str(corpus)), glob.escape(name))
        assert resolve_files(escaped) == [str(corpus / name)], name
    # A glob matches every file once, odd names and all.
    assert resolve_files(str(corpus / "*.txt")) == sorted(
        str(corpus / name) for name in ODD + DECOYS
    )


def test_a_name_that_matches_nothing_is_that_file(tmp_path):
    (tmp_path / "y[2].txt").write_text("a b\n")
    assert resolve_files(str(tmp_path / "y[2].txt")) == [
        str(tmp_path / "y[2].txt")
    ]


def test_a_name_that_names_one_file_and_matches_others_is_refused(corpus):
    with pytest.raises(KerasElmoError) as caught:
        resolve_files(str(corpus / "x[1].txt"), "inputs")
    message = str(caught.value)
    assert "names a file, and as a pattern matches others" in message
    assert glob.escape(str(corpus / "x[1].txt")) in message
    assert caught.value.argument == "inputs"


def test_a_fifo_that_a_glob_matches_is_refused_not_left_out(tmp_path):
    (tmp_path / "a.txt").write_text("a b\n")
    os.mkfifo(tmp_path / "b.txt")
    with pytest.raises(KerasElmoError, match="b.txt"):
        resolve_files(str(tmp_path / "*.txt"))


def test_prepare_reads_odd_names_as_named(corpus, tmp_path, capsys):
    for i, name in enumerate(ODD):
        out = tmp_path / f"out{i}"
        pattern = os.path.join(glob.escape(str(corpus)), glob.escape(name))
        argv = ["prepare", "--quiet", "--input", pattern, "--output", str(out),
                "--tokenize", "whitespace", "--held-out", "0"]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
        with gzip.open(out / "train.txt.gz", "rt") as f:
            assert f.read() == f"the cat {i} sat on the mat .\n" * (i + 1), name
    argv = ["prepare", "--input", str(corpus / "x[1].txt"), "--output",
            str(tmp_path / "refused")]  # fmt: skip
    assert main(argv) == 2
    assert "--input: " in capsys.readouterr().err


def test_train_and_evaluate_read_odd_names_as_named(corpus, tmp_path, capsys):
    name = "x[1].txt"  # its decoy x1.txt has 7 lines; it has 1
    pattern = os.path.join(glob.escape(str(corpus)), glob.escape(name))
    run = str(tmp_path / "run")
    argv = ["train", "--train", pattern, "--validation", pattern,
            "--build-vocab", "--output", run, "--steps", "1",
            "--tokens-per-batch", "64", "--num-sampled", "4",
            *TINY_TRAIN_FLAGS]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["evaluate", "--model", run, "--data", pattern]) == 0
    assert "tokens, 1 sentence" in capsys.readouterr().out
