"""ELMoForManyLangs' string-to-id rules inside TensorFlow: the input rows
of a `tf.string` token tensor, the same as the host rules of
`elmo_core.ids.elmo_for_many_langs_ids` give (its docstring has them)."""

import numpy as np
import tensorflow as tf

from elmo_core.errors import KerasElmoError
from elmo_core.errors import tensor
from elmo_core.ids.elmo_for_many_langs_ids import BOS
from elmo_core.ids.elmo_for_many_langs_ids import EOS
from elmo_core.ids.elmo_for_many_langs_ids import OOV
from keras_elmo.data.token_positions import token_positions

_FINGERPRINT_BUCKETS = 2**63 - 1


class ELMoForManyLangsGraphIds:
    """The in-graph id rules of one model: `host`, its
    `ELMoForManyLangsIds`, as TensorFlow ops (they run in `tf.data`,
    `tf.function` and SavedModels alike)."""

    def __init__(self, host):
        self.host = host
        self._words = None

    def _word_lookup(self):
        """The word lookup without a hash-table resource: the words' sorted
        64-bit fingerprints, searched (the word itself is compared too),
        built on first use."""
        if self._words is not None:
            return self._words
        words = list(self.host.words)
        with tf.init_scope():
            prints = tf.strings.to_hash_bucket_fast(
                tf.constant(words, tf.string), _FINGERPRINT_BUCKETS
            ).numpy()
        if len(np.unique(prints)) != len(prints):
            raise KerasElmoError(
                "Two entries of `words` have the same 64-bit fingerprint; "
                "the in-graph lookup cannot tell them apart."
            )
        order = np.argsort(prints)
        self._words = (
            prints[order],
            np.asarray(words, dtype=object)[order],
            np.asarray([self.host.words[words[k]] + 1 for k in order], "int32"),
        )
        return self._words

    def tokens_to_inputs(self, tokens, table=None, sequence_length=None):
        """In-graph inputs of a `tf.string` token tensor (same ids as
        `batch_to_inputs`).

        Args:
            tokens: `tf.string` tensor (typically `(batch, time)`), `""`
                marking padding unless `sequence_length` is given; or a
                `tf.RaggedTensor` of strings (every element a token).
            table: unused (the vocabularies are the encoder's own).
            sequence_length: optional int tensor `(batch,)`: positions at
                or past it are padding, earlier ones real tokens even when
                empty.

        Returns:
            int32 tensor `tokens.shape + (K,)`, zero rows at padding.
        """
        if isinstance(tokens, tf.RaggedTensor):
            ids = tf.ragged.map_flat_values(self._real_tokens_to_inputs, tokens)
            return ids.to_tensor(default_value=0)
        tokens = tf.convert_to_tensor(tokens)
        if tokens.dtype != tf.string:
            raise KerasElmoError(
                "tokens_to_inputs expects a tf.string tensor.",
                "tokens",
                received=tensor(tokens.dtype.name, tokens.shape),
            )
        ids = self._real_tokens_to_inputs(tokens)
        is_token = token_positions(tokens, sequence_length)
        return ids * tf.cast(is_token, "int32")[..., None]

    def _real_tokens_to_inputs(self, tokens):
        size = self.host.max_characters_per_token - 2
        flat = tf.reshape(tokens, [-1])
        code_points = tf.strings.unicode_decode(flat, "UTF-8", errors="replace")
        cut = code_points[:, :size]
        lengths = tf.cast(cut.row_lengths(), "int32")[:, None]
        dense = tf.cast(
            cut.to_tensor(default_value=-1, shape=[None, size]), "int64"
        )
        # Character ids: binary search in the sorted code points.
        table = tf.constant(self.host.code_points)
        index = tf.searchsorted(table, tf.reshape(dense, [-1]))
        index = tf.minimum(index, len(self.host.code_points) - 1)
        found = tf.equal(tf.gather(table, index), tf.reshape(dense, [-1]))
        chars = tf.where(
            found,
            tf.gather(tf.constant(self.host.code_point_ids), index),
            self.host.oov,
        )
        chars = tf.reshape(chars, tf.shape(dense))
        positions = tf.range(size)[None, :]
        chars = tf.where(positions < lengths, chars, self.host.pad)
        count = tf.shape(flat)[0]
        rows = tf.concat(
            [
                tf.fill([count, 1], self.host.first),
                chars,
                tf.fill([count, 1], self.host.pad),
            ],
            axis=1,
        )
        positions = tf.range(self.host.max_characters_per_token)[None, :]
        rows = tf.where(positions == lengths + 1, self.host.last, rows)
        if self.host.words is not None:
            truncated = tf.where(
                code_points.row_lengths() > size,
                tf.strings.unicode_encode(cut, "UTF-8"),
                flat,
            )
            rows = tf.concat([self._word_ids(truncated)[:, None], rows], 1)
        for token in (BOS, EOS):
            rows = tf.where(
                tf.equal(flat, token)[:, None],
                tf.constant(self.host.token_to_inputs(token))[None, :],
                rows,
            )
        shape = tf.concat(
            [tf.shape(tokens), [self.host.input_shape[0]]], axis=0
        )
        return tf.reshape(rows, shape)

    def _word_ids(self, words):
        prints, sorted_words, ids = self._word_lookup()
        keys = tf.strings.to_hash_bucket_fast(words, _FINGERPRINT_BUCKETS)
        index = tf.searchsorted(tf.constant(prints), keys)
        index = tf.minimum(index, len(prints) - 1)
        found = tf.equal(tf.gather(tf.constant(prints), index), keys)
        found &= tf.equal(
            tf.gather(tf.constant(sorted_words.tolist(), tf.string), index),
            words,
        )
        return tf.where(
            found, tf.gather(tf.constant(ids), index), self.host.words[OOV] + 1
        )
