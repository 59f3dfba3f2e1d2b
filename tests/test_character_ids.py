import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from elmo_core.errors import KerasElmoError
from keras_elmo.data import tokens_to_char_ids
from keras_elmo.data.character_ids import BOS_CHARACTER_IDS
from keras_elmo.data.character_ids import EOS_CHARACTER_IDS

# ASCII, accents, CJK, emoji, tokens of 47/48/49/100 bytes, a multi-byte
# character cut at byte 48, the boundary tokens and look-alikes, and the
# empty string.
VARIED_TOKENS = [
    "Hi",
    "the",
    "naïve",
    "Ångström",
    "日本語",
    "😀",
    "a" * 47,
    "b" * 48,
    "c" * 49,
    "d" * 100,
    "x" * 47 + "é",  # é is 2 bytes: cut after its first byte
    "<S>",
    "</S>",
    "<s>",
    "<UNK>",
    "<S/>",
    "",
]


def _ragged(sentences):
    return tf.ragged.constant(sentences, dtype=tf.string)


def test_spot_values_by_hand():
    ids = keras_elmo.batch_to_ids([["Hi", "<S>", "</S>", "", "é"]])[0]
    pad = [261] * 47
    # "Hi": BOW 258+1, 'H' 72+1, 'i' 105+1, EOW 259+1, then padding chars.
    assert ids[0].tolist() == [259, 73, 106, 260] + [261] * 46
    assert ids[1].tolist() == [259, 257, 260] + pad
    assert ids[2].tolist() == [259, 258, 260] + pad
    assert ids[3].tolist() == [259, 260] + [261] * 48
    # "é" is the bytes 0xc3 0xa9 -> ids 196 and 170.
    assert ids[4].tolist() == [259, 196, 170, 260] + [261] * 46


def test_truncation_at_48_bytes():
    ids = keras_elmo.batch_to_ids([["b" * 48, "c" * 49, "x" * 47 + "é"]])[0]
    # 48 bytes fill positions 1..48 and EOW lands in the last position.
    assert ids[0, 1:49].tolist() == [99] * 48 and ids[0, 49] == 260
    assert ids[1, 1:49].tolist() == [100] * 48 and ids[1, 49] == 260
    # Only the first byte (0xc3) of the cut "é" is kept.
    assert ids[2, 48] == 0xC3 + 1 and ids[2, 49] == 260


def test_boundary_lookalikes_are_ordinary_tokens():
    ids = keras_elmo.batch_to_ids([["<s>", "<UNK>", "<S/>"]])[0]
    assert ids[0, 1:4].tolist() == [ord("<") + 1, ord("s") + 1, ord(">") + 1]
    for row in ids:
        assert not np.array_equal(row, BOS_CHARACTER_IDS)
        assert not np.array_equal(row, EOS_CHARACTER_IDS)


def test_padding_tokens_are_zero_rows():
    ids = keras_elmo.batch_to_ids([["a", "b", "c"], ["d"], []])
    assert ids.shape == (3, 3, 50) and ids.dtype == np.int32
    assert not ids[1, 1:].any() and not ids[2].any()


def test_numpy_and_graph_paths_agree_on_varied_tokens():
    sentences = [VARIED_TOKENS, VARIED_TOKENS[::-1][:5], []]
    expected = keras_elmo.batch_to_ids(sentences)
    ragged = tokens_to_char_ids(_ragged(sentences))
    np.testing.assert_array_equal(ragged.numpy(), expected)
    # Inside tf.data.Dataset.map too.
    dataset = tf.data.Dataset.from_tensors(_ragged(sentences)).map(
        tokens_to_char_ids
    )
    np.testing.assert_array_equal(next(iter(dataset)).numpy(), expected)


def test_dense_graph_input_with_padding_and_lengths():
    dense = tf.constant([["Hi", "there", ""], ["日本語", "", ""]])
    expected = keras_elmo.batch_to_ids([["Hi", "there"], ["日本語"]])
    got = tokens_to_char_ids(dense).numpy()
    np.testing.assert_array_equal(got[:, :2], expected)
    assert not got[:, 2].any()
    # With lengths an empty string inside the sentence is a real token.
    got = tokens_to_char_ids(dense, sequence_length=[3, 1])
    expected = keras_elmo.batch_to_ids([["Hi", "there", ""], ["日本語"]])
    np.testing.assert_array_equal(got.numpy()[:, :3], expected)


def test_invalid_utf8_is_dropped_like_python_ignore():
    # Invalid bytes in a tf.string tensor are dropped, as Python drops lone
    # surrogates with encode("utf-8", "ignore").
    graph = tokens_to_char_ids(
        _ragged([[b"\xff\xfeab", b"\xed\xa0\x80x", b"\xe6\xbc"]])
    )
    python = keras_elmo.batch_to_ids([["ab", "\ud800x", ""]])
    np.testing.assert_array_equal(graph.numpy(), python)


def test_non_string_tokens_raise():
    with pytest.raises(KerasElmoError, match="Token 1 of sentence 0 is 3"):
        keras_elmo.batch_to_ids([["a", 3]])
    with pytest.raises(KerasElmoError, match="not a list of token strings"):
        keras_elmo.batch_to_ids(["a sentence"])
    with pytest.raises(KerasElmoError, match="list of sentences"):
        keras_elmo.batch_to_ids("a sentence")
    with pytest.raises(KerasElmoError, match="expects a tf.string tensor"):
        tokens_to_char_ids(tf.constant([[1, 2]]))


def test_empty_batch():
    assert keras_elmo.batch_to_ids([]).shape == (0, 0, 50)
    got = tokens_to_char_ids(tf.zeros((0, 4), tf.string))
    assert tuple(got.shape) == (0, 4, 50)
