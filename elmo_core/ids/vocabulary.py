"""Word vocabularies in the bilm-tf format (SPEC §11), with NumPy: the
runtime of exported models (`elmo_core.runtime`) turns words into ids
here; the lookup inside TensorFlow is `keras_elmo.data.word_ids`.
"""

import collections
import os

import numpy as np

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_integer
from elmo_core.errors import check_strings
from elmo_core.errors.blame import about
from elmo_core.errors.blame import blame
from elmo_core.files import atomic_output
from elmo_core.text.lines import iter_sentences

BOS = "<S>"
EOS = "</S>"
UNK = "<UNK>"
SPECIAL_TOKENS = (BOS, EOS, UNK)
# What a vocabulary given as a list is called in messages.
_GIVEN = "the vocabulary (`tokens`)"


class Vocabulary:
    """The output vocabulary of a biLM: token strings and their ids.

    The file format is the original one: one token a line, `<S>`, `</S>` and
    `<UNK>` first, then tokens by descending frequency (the sampled softmax
    draws negatives assuming that order). A character-input biLM uses it
    for the softmax targets only (inputs go through characters, so
    out-of-vocabulary words are still read; as targets they become
    `<UNK>`); a word-input biLM also reads its inputs as ids (line + 1,
    unknown words the `<UNK>` id, see `batch_to_ids`).

    Args:
        tokens: list of str, the tokens in id order. Must contain `<S>`,
            `</S>` and `<UNK>` once each.

    Example:

    >>> vocab = elmo_core.ids.Vocabulary(["<S>", "</S>", "<UNK>", "the"])
    >>> len(vocab), vocab.unk_id, vocab.id("the"), vocab.id("cat")
    (4, 2, 3, 2)
    """

    def __init__(self, tokens, source=_GIVEN):
        if not isinstance(source, str) or not source:
            raise KerasElmoError(
                "`source` names the vocabulary in messages: a non-empty str.",
                "source",
                received=source,
            )
        # Every error is about `tokens` (named as `source` says); the
        # callers that read them from somewhere else say so instead.
        argument = "tokens"
        with about(argument):
            if source == _GIVEN:
                tokens = check_strings(tokens, argument)
            else:
                tokens = check_strings(tokens, where=source)
        missing = [t for t in SPECIAL_TOKENS if t not in tokens]
        if missing:
            raise KerasElmoError(
                f"{source} lacks the special token(s) {', '.join(missing)}. "
                "A biLM vocabulary lists <S>, </S> and <UNK> first, then "
                "tokens by descending frequency; add the missing ones at the "
                "top (or build one from a corpus with "
                "`Vocabulary.from_corpus`).",
                argument,
            )
        seen = set()
        for line, token in enumerate(tokens, start=1):
            if token in seen:
                raise KerasElmoError(
                    f"{source} lists {token!r} twice (again on line {line}); "
                    "each token must appear once.",
                    argument,
                )
            if not token or token.split() != [token]:
                raise KerasElmoError(
                    f"{source}, line {line}: {token!r} is not one "
                    "whitespace-free token.",
                    argument,
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

    def batch_to_ids(self, sentences):
        """The input ids of a word-input biLM (NumPy): vocabulary line + 1,
        unknown words the `<UNK>` line + 1, padding 0.

        Args:
            sentences: list of lists of str, without `<S>`/`</S>`.

        Returns:
            int32 array `(num_sentences, max_length)`.

        Example:

        >>> vocab = elmo_core.ids.Vocabulary(["<S>", "</S>", "<UNK>", "a"])
        >>> vocab.batch_to_ids([["a", "cat"], ["a"]]).tolist()
        [[4, 3], [4, 0]]
        """
        length = max((len(s) for s in sentences), default=0)
        ids = np.zeros((len(sentences), length), dtype="int32")
        for i, sentence in enumerate(sentences):
            if isinstance(sentence, (str, bytes)):
                raise KerasElmoError(
                    f"Sentence {i} is a {type(sentence).__name__}, not a list "
                    'of token strings; split it first, e.g. "a b".split().'
                )
            ids[i, : len(sentence)] = [self.id(t) + 1 for t in sentence]
        return ids

    @classmethod
    def from_file(cls, path):
        """Reads a vocabulary file (one token a line, UTF-8)."""
        tokens = [" ".join(line) for line in iter_sentences(path)]
        try:
            return cls(tokens, source=f"Vocabulary file {path}")
        except KerasElmoError as error:
            error.argument = None  # a mistake of the file, named in it
            raise

    @classmethod
    def from_corpus(
        cls, files, min_count=1, max_size=None, on_bad_line="error"
    ):
        """Builds a vocabulary from text files, most frequent first.

        Args:
            files: list of str, text files of one sentence a line.
            min_count: int. Keep tokens seen at least this often.
            max_size: int or None. Keep at most this many tokens, the three
                special tokens included.
            on_bad_line: `"error"` or `"skip"`, for lines that are not
                UTF-8 (as for training; see `elmo_core.text.lines`).
        """
        check_integer(min_count, "min_count", minimum=1)
        if max_size is not None and int(max_size) <= len(SPECIAL_TOKENS):
            raise KerasElmoError(
                "`max_size` must be larger than 3 (the special tokens <S>, "
                "</S>, <UNK>).",
                "max_size",
                received=max_size,
            )
        counts = collections.Counter()
        for path in files:
            for sentence in iter_sentences(path, on_bad_line):
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
        """Writes the vocabulary file (atomically)."""
        with atomic_output(path) as temporary:
            with open(temporary, "w", encoding="utf-8") as f:
                f.write("".join(f"{token}\n" for token in self.tokens))


def check_vocabulary(vocabulary, encoder, source=None):
    """The `Vocabulary` of a word-input encoder, checked against it.

    Args:
        vocabulary: a `elmo_core.ids.Vocabulary`, a list of token strings
            or the path of a vocabulary file.
        encoder: the `WordEncoder` it is for (its `vocabulary_size`), or
            None to check the layout only.
        source: str, what to call the vocabulary in messages.

    Raises `KerasElmoError` when it is missing, lacks `<S>`, `</S>` or
    `<UNK>`, does not start with `<S>`, `</S>`, or has another size than
    the table.
    """
    if vocabulary is None:
        raise KerasElmoError(
            "A word-input biLM needs its vocabulary (the vocab.txt it was "
            "trained with, one token a line) to turn words into ids; pass "
            "vocabulary=...",
            "vocabulary",
        )
    if isinstance(vocabulary, (str, os.PathLike)):
        vocabulary = os.fspath(vocabulary)
        source = source or f"Vocabulary file {vocabulary}"
        with about("vocabulary"):  # a missing or damaged file
            vocabulary = Vocabulary.from_file(vocabulary)
    elif not isinstance(vocabulary, Vocabulary):
        try:
            vocabulary = Vocabulary(
                vocabulary, source=source or "the vocabulary"
            )
        except KerasElmoError as error:
            blame(error, "vocabulary")
            raise
    source = source or "the vocabulary"
    if vocabulary.tokens[:2] != [BOS, EOS]:
        raise KerasElmoError(
            f"{source} starts with {vocabulary.tokens[:2]}; a word-input "
            f"biLM reads {BOS} as id 1 and {EOS} as id 2, so they must be "
            "its first two lines (as in vocabularies built by bilm-tf or "
            "`Vocabulary.from_corpus`). Move them to the top (the "
            "embedding table rows must move with them)."
        )
    if encoder is not None and len(vocabulary) != encoder.vocabulary_size:
        raise KerasElmoError(
            f"{source} has {len(vocabulary):,} tokens but the biLM's word "
            f"table has {encoder.vocabulary_size:,} rows (one per "
            "vocabulary line); pass the vocabulary the biLM was trained "
            "with."
        )
    return vocabulary
