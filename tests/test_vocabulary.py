import pytest

from elmo_core.ids.vocabulary import Vocabulary
from tests.helpers import FIXTURES

TRAIN_VOCAB = f"{FIXTURES}/train/vocab.txt"
TRAIN_DATA = f"{FIXTURES}/train/data.txt"


def test_reads_the_original_format():
    vocab = Vocabulary.from_file(TRAIN_VOCAB)
    assert (vocab.bos_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2)
    assert vocab.tokens[3:5] == ["of", "the"]
    assert vocab.id("neural") == vocab.tokens.index("neural")
    assert vocab.id("never-seen") == vocab.unk_id


def test_builds_from_a_corpus_by_frequency(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("b a b\nc b a\n<S> d\n", encoding="utf-8")
    vocab = Vocabulary.from_corpus([str(corpus)])
    assert vocab.tokens == ["<S>", "</S>", "<UNK>", "b", "a", "c", "d"]
    vocab = Vocabulary.from_corpus([str(corpus)], min_count=2)
    assert vocab.tokens[3:] == ["b", "a"]
    vocab = Vocabulary.from_corpus([str(corpus)], max_size=4)
    assert vocab.tokens[3:] == ["b"]
    vocab.save(str(tmp_path / "v.txt"))
    assert Vocabulary.from_file(str(tmp_path / "v.txt")).tokens == vocab.tokens


def test_missing_special_tokens_are_named(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("<S>\nthe\nof\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"lacks the special token\(s\) </S>, <UNK>"
    ):
        Vocabulary.from_file(str(path))


def test_duplicates_and_bad_lines(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("<S>\n</S>\n<UNK>\nthe\nthe\n", encoding="utf-8")
    with pytest.raises(ValueError, match="'the' twice"):
        Vocabulary.from_file(str(path))
    path.write_text("<S>\n</S>\n<UNK>\n\nthe\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 4"):
        Vocabulary.from_file(str(path))
