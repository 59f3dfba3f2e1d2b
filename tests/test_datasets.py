import gzip

import keras
import numpy as np
import pytest
import tensorflow as tf

from elmo_core.ids.vocabulary import Vocabulary
from elmo_core.text.lines import TextFileError
from elmo_core.text.patterns import resolve_files
from keras_elmo.data import lm_dataset
from keras_elmo.data import scan_corpus
from keras_elmo.data.datasets import bucket_plan
from keras_elmo.data.datasets import make_lm_batch
from keras_elmo.data.datasets import split_lengths
from keras_elmo.data.word_ids import lookup_table

WORDS = "the cat sat on a mat and then it ran off to see dog".split()


def _corpus(tmp_path, name="c.txt", lines=60, seed=0):
    rng = np.random.RandomState(seed)
    text = "\n".join(
        " ".join(rng.choice(WORDS, size=rng.randint(1, 30)))
        for _ in range(lines)
    )
    path = tmp_path / name
    path.write_text(text + "\n", encoding="utf-8")
    return str(path)


def _vocab():
    return Vocabulary(["<S>", "</S>", "<UNK>"] + WORDS[:10])


def _batches(dataset, limit=None):
    out = []
    for i, (x, y, w) in enumerate(dataset):
        if limit is not None and i >= limit:
            break
        out.append((x["character_ids"].numpy(), y.numpy(), w.numpy()))
    return out


def test_epoch_step_count_and_token_totals(tmp_path):
    files = [_corpus(tmp_path, "a.txt"), _corpus(tmp_path, "b.txt", seed=1)]
    scan = scan_corpus(files, max_length=12, tokens_per_batch=64)
    batches = _batches(lm_dataset(scan, _vocab(), seed=3, repeat=False))
    assert len(batches) == scan.steps_per_epoch
    # Every token is a forward target once; long sentences were split, not
    # dropped (each piece adds one </S> target).
    targets = sum(w[:, 0].sum() for _, _, w in batches)
    assert targets == scan.num_tokens + scan.num_sentences
    assert scan.num_split > 0
    for ids, _, w in batches:
        # Token budget: rows x (longest + 2) within 64.
        assert ids.shape[0] * (ids.shape[1] + 2) <= 64
        assert ids.shape[1] <= 12


def test_deterministic_for_a_seed(tmp_path):
    scan = scan_corpus([_corpus(tmp_path)], max_length=20, tokens_per_batch=100)
    first = _batches(lm_dataset(scan, _vocab(), seed=5, repeat=False))
    again = _batches(lm_dataset(scan, _vocab(), seed=5, repeat=False))
    other = _batches(lm_dataset(scan, _vocab(), seed=6, repeat=False))
    for a, b in zip(first, again):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)
    assert any(
        a[0].shape != b[0].shape or not np.array_equal(a[0], b[0])
        for a, b in zip(first, other)
    )


def test_order_ignores_the_global_seed(tmp_path):
    # keras.utils.set_random_seed(0) used to break the epoch-seeded shuffle.
    scan = scan_corpus([_corpus(tmp_path)], max_length=20, tokens_per_batch=64)
    unseeded = _batches(lm_dataset(scan, _vocab(), seed=2), limit=4)
    try:
        for global_seed in (0, 7):
            keras.utils.set_random_seed(global_seed)
            seeded = _batches(lm_dataset(scan, _vocab(), seed=2), limit=4)
            for a, b in zip(unseeded, seeded):
                for x, y in zip(a, b):
                    np.testing.assert_array_equal(x, y)
    finally:
        tf.random.set_seed(None)


def test_start_step_continues_the_stream_across_epochs(tmp_path):
    scan = scan_corpus([_corpus(tmp_path)], max_length=20, tokens_per_batch=100)
    steps = scan.steps_per_epoch
    full = _batches(lm_dataset(scan, _vocab(), seed=1), limit=2 * steps + 3)
    start = steps + 2
    resumed = _batches(
        lm_dataset(scan, _vocab(), seed=1, start_step=start), limit=steps
    )
    for a, b in zip(full[start:], resumed):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)
    # A new epoch is reshuffled.
    assert not all(
        a[0].shape == b[0].shape and np.array_equal(a[0], b[0])
        for a, b in zip(full[:steps], full[steps : 2 * steps])
    )


def test_backward_targets_are_the_reversed_forward_targets():
    import tensorflow as tf

    vocab = _vocab()
    table = lookup_table(vocab)
    tokens = tf.constant([["the", "cat", "zebra"], ["on", "", ""]])
    x, y, w = make_lm_batch(tokens, table, vocab.bos_id, vocab.eos_id)
    y, w = y.numpy(), w.numpy()
    assert y.shape == (2, 2, 5) and x["character_ids"].shape == (2, 3, 50)
    the, cat, unk = vocab.id("the"), vocab.id("cat"), vocab.unk_id
    # Forward reads <S> the cat zebra and predicts the cat <UNK> </S>.
    assert y[0, 0, :4].tolist() == [the, cat, unk, vocab.eos_id]
    # Backward reads the cat zebra </S> and predicts <S> the cat <UNK>.
    assert y[0, 1, 1:].tolist() == [vocab.bos_id, the, cat, unk]
    # Padding has weight 0 in both directions.
    assert w[1, 0].tolist() == [1, 1, 0, 0, 0]
    assert w[1, 1].tolist() == [0, 1, 1, 0, 0]
    # The backward LM of a sentence is the forward LM of the reversed
    # sentence: same targets, reversed, the boundary ids trading places.
    _, y_rev, w_rev = make_lm_batch(
        tokens[:, ::-1][:1, :], table, vocab.bos_id, vocab.eos_id
    )
    backward = y[0, 1][w[0, 1] > 0][::-1]
    forward_of_reversed = y_rev.numpy()[0, 0][w_rev.numpy()[0, 0] > 0]
    assert backward[:-1].tolist() == forward_of_reversed[:-1].tolist()
    assert (backward[-1], forward_of_reversed[-1]) == (
        vocab.bos_id,
        vocab.eos_id,
    )


def test_pad_to_bucket_gives_few_shapes_and_the_same_batches(tmp_path):
    scan = scan_corpus([_corpus(tmp_path)], max_length=20, tokens_per_batch=64)
    plain = _batches(lm_dataset(scan, _vocab(), seed=4, repeat=False))
    padded = _batches(
        lm_dataset(scan, _vocab(), seed=4, repeat=False, pad_to_bucket=True)
    )
    assert len(plain) == len(padded) == scan.steps_per_epoch
    boundaries, _ = bucket_plan(20, 64)
    lengths = {ids.shape[1] for ids, _, _ in padded}
    # Padded to a boundary - 1 (plus <S> and </S> in the targets).
    assert lengths <= {b - 1 for b in boundaries}, lengths
    assert len({ids.shape[1] for ids, _, _ in plain}) > len(lengths)
    for (ids, y, w), (pids, py, pw) in zip(plain, padded):
        time = ids.shape[1]
        np.testing.assert_array_equal(pids[:, :time], ids)
        assert not pids[:, time:].any()
        np.testing.assert_array_equal(pw[:, :, : time + 2], w)
        assert not pw[:, :, time + 2 :].any()
        np.testing.assert_array_equal((py * pw)[:, :, : time + 2], y * w)


def test_split_lengths_are_even():
    assert split_lengths(10, 4) == [4, 3, 3]
    assert split_lengths(8, 4) == [4, 4]
    assert split_lengths(3, 4) == [3]


def test_gzip_shards(tmp_path):
    plain = _corpus(tmp_path)
    gz = tmp_path / "c.txt.gz"
    with open(plain, "rb") as src, gzip.open(gz, "wb") as dst:
        dst.write(src.read())
    a = scan_corpus([plain], max_length=20, tokens_per_batch=100)
    b = scan_corpus([str(gz)], max_length=20, tokens_per_batch=100)
    assert (a.num_tokens, a.steps_per_epoch) == (
        b.num_tokens,
        b.steps_per_epoch,
    )
    first = _batches(lm_dataset(a, _vocab(), seed=1, repeat=False))
    second = _batches(lm_dataset(b, _vocab(), seed=1, repeat=False))
    np.testing.assert_array_equal(first[0][1], second[0][1])


def test_bad_lines_error_or_skip(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"the cat\nna\xefve cat\non a mat\n")
    with pytest.raises(
        TextFileError, match=r"bad.txt, line 2: not valid UTF-8"
    ):
        scan_corpus([str(path)])
    scan = scan_corpus([str(path)], on_bad_line="skip")
    assert scan.skipped_lines == [(str(path), 2)]
    assert "not UTF-8 are skipped" in " ".join(scan.summary())
    batches = _batches(lm_dataset(scan, _vocab(), repeat=False))
    assert sum(w[:, 0].sum() for _, _, w in batches) == 2 + 3 + 2


def test_empty_shards_and_missing_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    scan = scan_corpus([_corpus(tmp_path), str(empty)])
    assert scan.empty_files == [str(empty)]
    assert any("holds no sentences" in line for line in scan.summary())
    with pytest.raises(ValueError, match="No sentences found"):
        scan_corpus([str(empty)])
    with pytest.raises(FileNotFoundError, match="No file matches"):
        resolve_files(str(tmp_path / "*.nothing"))
    assert resolve_files(str(tmp_path / "*.txt")) == sorted(
        str(p) for p in tmp_path.glob("*.txt")
    )


def test_bad_batching_arguments(tmp_path):
    with pytest.raises(ValueError, match="`tokens_per_batch` must hold the"):
        scan_corpus([_corpus(tmp_path)], max_length=100, tokens_per_batch=50)
    with pytest.raises(ValueError, match="on_bad_line"):
        scan_corpus([_corpus(tmp_path)], on_bad_line="ignore")


def test_training_files_are_read_once_however_they_are_matched(tmp_path):
    (tmp_path / "a.txt").write_text("a b\n", encoding="utf-8")
    (tmp_path / "link.txt").symlink_to("a.txt")
    patterns = [str(tmp_path / "*.txt"), str(tmp_path / "." / "a.txt")]
    assert resolve_files(patterns) == [str(tmp_path / "a.txt")]


def test_the_pipeline_splits_a_line_where_python_does():
    # Issue 63 (a line means the same thing on every command): the scan
    # and the vocabulary split a line with `str.split()`, at Unicode
    # whitespace; `tf.strings.split` alone split at ASCII whitespace, so
    # "a\u00a0b" was two tokens in the vocabulary and one in training.
    from elmo_core.text.lines import WHITESPACE
    from keras_elmo.data.datasets import split_at_whitespace

    every = "".join(c for c in map(chr, range(0x110000)) if c.isspace())
    assert WHITESPACE == every
    lines = ["a" + c + "b  c" for c in every] + ["caf\u00e9\u3000 日本", ""]
    tokens = split_at_whitespace(tf.constant(lines)).to_list()
    assert [[t.decode() for t in row] for row in tokens] == [
        line.split() for line in lines
    ]


def test_the_savedmodel_splits_a_sentence_where_python_does(
    fixture_savedmodel,
):
    # Issue 63: the `default` signature split at ASCII whitespace only
    # (`tf.strings.split`), so "a\u00a0b" was one token there and two in
    # `embed` and in the vocabulary.
    loaded = tf.saved_model.load(str(fixture_savedmodel))
    sentences = ["a\u00a0b", "a\u3000b c", "a\u2028b", " a  b ", ""]
    outputs = loaded.signatures["default"](sentences=tf.constant(sentences))
    lengths = outputs["sequence_len"].numpy().tolist()
    assert lengths == [len(s.split()) for s in sentences]
