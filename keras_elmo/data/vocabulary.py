"""Word vocabularies in the bilm-tf format (SPEC §11)."""

import collections

import tensorflow as tf

from keras_elmo.data.text import iter_sentences

BOS = "<S>"
EOS = "</S>"
UNK = "<UNK>"
SPECIAL_TOKENS = (BOS, EOS, UNK)


class Vocabulary:
    """The output vocabulary of a biLM: token strings and their ids.

    The file format is the original one: one token a line, `<S>`, `</S>` and
    `<UNK>` first, then tokens by descending frequency (the sampled softmax
    draws negatives assuming that order). Only the softmax targets use it:
    inputs always go through characters, so out-of-vocabulary words are
    still read; as targets they become `<UNK>`.

    Args:
        tokens: list of str, the tokens in id order. Must contain `<S>`,
            `</S>` and `<UNK>` once each.

    Example:

    >>> vocab = keras_elmo.data.Vocabulary(["<S>", "</S>", "<UNK>", "the"])
    >>> len(vocab), vocab.unk_id, vocab.id("the"), vocab.id("cat")
    (4, 2, 3, 2)
    """

    def __init__(self, tokens, source="the vocabulary"):
        tokens = list(tokens)
        missing = [t for t in SPECIAL_TOKENS if t not in tokens]
        if missing:
            raise ValueError(
                f"{source} lacks the special token(s) {', '.join(missing)}. "
                "A biLM vocabulary lists <S>, </S> and <UNK> first, then "
                "tokens by descending frequency; add the missing ones at the "
                "top (or build one with `keras-elmo train --build-vocab`)."
            )
        seen = set()
        for line, token in enumerate(tokens, start=1):
            if token in seen:
                raise ValueError(
                    f"{source} lists {token!r} twice (again on line {line}); "
                    "each token must appear once."
                )
            if not token or token.split() != [token]:
                raise ValueError(
                    f"{source}, line {line}: {token!r} is not one "
                    "whitespace-free token."
                )
            seen.add(token)
        self.tokens = tokens
        self._ids = {token: i for i, token in enumerate(tokens)}
        self.bos_id = self._ids[BOS]
        self.eos_id = self._ids[EOS]
        self.unk_id = self._ids[UNK]

    def __len__(self):
        return len(self.tokens)

    def id(self, token):
        return self._ids.get(token, self.unk_id)

    @classmethod
    def from_file(cls, path):
        """Reads a vocabulary file (one token a line, UTF-8)."""
        tokens = [" ".join(line) for line in iter_sentences(path)]
        return cls(tokens, source=f"Vocabulary file {path}")

    @classmethod
    def from_corpus(cls, files, min_count=1, max_size=None):
        """Builds a vocabulary from text files, most frequent first.

        Args:
            files: list of str, text files of one sentence a line.
            min_count: int. Keep tokens seen at least this often.
            max_size: int or None. Keep at most this many tokens, the three
                special tokens included.
        """
        counts = collections.Counter()
        for path in files:
            for sentence in iter_sentences(path):
                counts.update(sentence)
        for token in SPECIAL_TOKENS:
            counts.pop(token, None)
        # Ties broken by the token itself, so the order is reproducible.
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        tokens = [t for t, count in ranked if count >= min_count]
        if max_size is not None:
            tokens = tokens[: max(0, max_size - len(SPECIAL_TOKENS))]
        return cls(list(SPECIAL_TOKENS) + tokens)

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(f"{token}\n" for token in self.tokens))

    def lookup_table(self):
        """A `tf.lookup.StaticHashTable` from token to id (`<UNK>` default)."""
        return tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self.tokens),
                tf.range(len(self.tokens), dtype=tf.int32),
            ),
            default_value=self.unk_id,
        )
