"""An interpolated modified Kneser-Ney n-gram language model (NumPy only).

The count model a neural language model is measured against: Chen and
Goodman's interpolated Kneser-Ney with three discounts per order
("An empirical study of smoothing techniques for language modeling",
1998, §3.4-3.5), the smoothing KenLM and SRILM use by default:

    p_n(w | h) = (max(c_n(h w) - D_n(c_n(h w)), 0) + gamma_n(h) p_{n-1}(w | h'))
                 / sum_v c_n(h v)
    gamma_n(h) = D_n1 N_1(h .) + D_n2 N_2(h .) + D_n3+ N_3+(h .)

where `h'` is `h` without its first word, `N_k(h .)` counts the words
seen k times (3+: three or more) after `h`, and `p_0` is uniform over the
words that can follow (every id but `<S>`). The highest order counts
n-grams; the lower orders count the distinct words seen before them
(continuation counts), except n-grams that start with `<S>`, which
nothing can precede and which keep their counts. A context never seen at
an order backs off to the next lower order. The discounts of each order
come from its counts of counts n_k: `Y = n1 / (n1 + 2 n2)`,
`D_k = k - (k + 1) Y n_{k+1} / n_k`.

A sentence is a list of vocabulary ids without boundaries; the model reads
`<S> ids </S>` and predicts every id and the `</S>` from at most
`order - 1` ids before it, never across sentences. Counting is vectorised:
an n-gram is one int64 key, the rank of its first n - 1 ids among the
(n-1)-grams times the vocabulary size plus its last id, so that each
order is one sorted array and a lookup is a binary search.
"""

import numpy as np

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_integer
from elmo_core.errors import check_numbers

# Keys are ranks times the vocabulary size; they must fit an int64.
_MAX_KEY = 2**62


class KneserNey:
    """An interpolated modified Kneser-Ney n-gram language model.

    Args:
        vocabulary_size: int. The number of ids (ids are 0..size - 1).
        bos_id: int. The id of `<S>`: the start of every sentence, never
            predicted.
        eos_id: int. The id of `</S>`: predicted after every sentence.
        order: int. The longest n-gram. Defaults to 5.
        discounts: list or None. `order` triples `(D1, D2, D3+)`, lowest
            order first, instead of those estimated from the counts of
            counts (which need n-grams seen once to four times at every
            order). Each `D_k` must be in [0, k]. Defaults to None.

    Example:

    >>> model = keras_elmo.baselines.kneser_ney.KneserNey(
    ...     5, bos_id=0, eos_id=1, order=2, discounts=[[0.5] * 3] * 2
    ... )
    >>> model = model.fit([[2, 3], [2, 4], [3, 2, 3, 4]])
    >>> logp = model.log_probabilities([[2, 3]])  # targets 2, 3, </S>
    >>> [round(float(p), 4) for p in np.exp(logp[0])]
    [0.5833, 0.5833, 0.2917]

    Reference:
        Chen and Goodman 1998, "An empirical study of smoothing techniques
        for language modeling"; Kneser and Ney 1995.
    """

    def __init__(
        self, vocabulary_size, bos_id, eos_id, order=5, discounts=None
    ):
        self.vocabulary_size = check_integer(
            vocabulary_size, "vocabulary_size", minimum=2
        )
        self.bos_id = self._check_id(bos_id, "bos_id")
        self.eos_id = self._check_id(eos_id, "eos_id")
        if self.bos_id == self.eos_id:
            raise KerasElmoError(
                f"`bos_id` and `eos_id` must differ; both are {bos_id}."
            )
        self.order = check_integer(order, "order", minimum=1, maximum=10)
        self.discounts = _check_discounts(discounts, self.order)
        self.tables = None

    def _check_id(self, value, name):
        return check_integer(
            value, name, minimum=0, maximum=self.vocabulary_size - 1
        )

    def fit(self, sentences):
        """Counts `sentences` (lists of ids) and returns the model."""
        ids, ends = self._padded(sentences, "the training sentences")
        ranks = [None]
        keys = [None]
        counts = [None]
        for n in range(1, self.order + 1):
            key, positions = self._keys(ids, ends, n, ranks[-1])
            unique, first, inverse, raw = np.unique(
                key, return_index=True, return_inverse=True, return_counts=True
            )
            rank = np.full(len(ids), -1, dtype="int64")
            rank[positions] = inverse
            ranks.append(rank)
            keys.append(unique)
            counts.append((raw, positions[first]))
        self.tables = [None]
        for n in range(1, self.order + 1):
            adjusted = self._adjusted_counts(n, ids, ranks, counts)
            self.tables.append(self._table(n, keys, adjusted))
        return self

    def _padded(self, sentences, what):
        """The ids of `<S> sentence </S>` end to end, and for each position
        the index of the last position of its sentence."""
        if isinstance(sentences, (str, bytes)) or not hasattr(
            sentences, "__iter__"
        ):
            raise KerasElmoError(
                f"{what} must be a list of lists of ids.",
                "sentences",
                received=sentences,
            )
        pieces, lengths = [], []
        for i, sentence in enumerate(sentences):
            row = np.asarray(sentence)
            if row.ndim != 1 or (row.size and row.dtype.kind not in "iu"):
                raise KerasElmoError(
                    f"{what}: sentence {i} must be a list of integer ids.",
                    received=sentence,
                )
            row = row.astype("int64")
            bad = (row < 0) | (row >= self.vocabulary_size)
            bad |= row == self.bos_id
            if bad.any():
                raise KerasElmoError(
                    f"{what}: sentence {i} holds id {row[bad][0]}; expected "
                    f"ids in 0..{self.vocabulary_size - 1} other than <S> "
                    f"({self.bos_id}), which only starts a sentence."
                )
            pieces.append([[self.bos_id], row, [self.eos_id]])
            lengths.append(len(row) + 2)
        if not pieces:
            raise KerasElmoError(f"{what} hold no sentence.")
        ids = np.concatenate([np.concatenate(p) for p in pieces])
        ends = np.repeat(np.cumsum(lengths) - 1, lengths)
        return ids.astype("int64"), ends

    def _keys(self, ids, ends, n, context_rank):
        """The key of each n-gram of the text and where it starts."""
        positions = np.flatnonzero(np.arange(len(ids)) + n - 1 <= ends)
        if n == 1:
            return ids[positions], positions
        if context_rank is not None and context_rank.max() + 1 > (
            _MAX_KEY // self.vocabulary_size
        ):
            raise KerasElmoError(
                "Too many distinct n-grams for int64 keys with a vocabulary "
                f"of {self.vocabulary_size:,}; use a smaller corpus."
            )
        context = context_rank[positions]
        return context * self.vocabulary_size + ids[positions + n - 1], (
            positions
        )

    def _adjusted_counts(self, n, ids, ranks, counts):
        """The counts order `n` predicts with: raw at the highest order
        and for n-grams starting with `<S>`; else how many distinct ids
        precede the n-gram. `<S>` alone is never predicted: 0."""
        raw, starts = counts[n]
        if n < self.order:
            longer_raw, longer_starts = counts[n + 1]
            suffixes = ranks[n][longer_starts + 1]
            continuation = np.bincount(suffixes, minlength=len(raw))
            adjusted = np.where(ids[starts] == self.bos_id, raw, continuation)
        else:
            adjusted = raw.copy()
        if n == 1:
            adjusted[ids[starts] == self.bos_id] = 0
        return adjusted.astype("int64")

    def _table(self, n, keys, adjusted):
        """Order `n`'s sorted keys, their discounted counts, and per
        context its total and its back-off weight's numerator."""
        if self.discounts is not None:
            discounts = np.asarray(self.discounts[n - 1])
        else:
            discounts = _estimate_discounts(adjusted, n)
        size = self.vocabulary_size
        if n == 1:
            contexts = np.zeros(len(keys[n]), dtype="int64")
            num_contexts = 1
        else:
            contexts = keys[n] // size
            num_contexts = len(keys[n - 1])
        level = np.minimum(adjusted, 3)
        discount = np.where(level > 0, discounts[np.maximum(level, 1) - 1], 0)
        return dict(
            keys=keys[n],
            discounted=np.maximum(adjusted - discount, 0.0),
            total=np.bincount(contexts, adjusted, minlength=num_contexts),
            backoff=np.bincount(contexts, discount, minlength=num_contexts),
        )

    def log_probabilities(self, sentences):
        """Natural-log probabilities of each target of each sentence: its
        ids, then `</S>`. A list of float64 arrays, one per sentence."""
        if self.tables is None:
            raise KerasElmoError("Call fit(sentences) before scoring.")
        ids, ends = self._padded(sentences, "the sentences to score")
        starts = np.flatnonzero(ids == self.bos_id)
        sentence_start = np.repeat(starts, np.diff(np.append(starts, len(ids))))
        targets = np.flatnonzero(ids != self.bos_id)
        probability = self._unigram(ids[targets])
        rank = self._lookup(1, ids, ends, None)
        ranks = [None, rank]
        for n in range(2, self.order + 1):
            ranks.append(self._lookup(n, ids, ends, ranks[-1]))
            at = targets - n + 1
            usable = at >= sentence_start[targets]
            probability[usable] = self._interpolate(
                n, ranks, at[usable], probability[usable]
            )
        log_probability = np.log(probability)
        return np.split(log_probability, np.cumsum(ends[starts] - starts)[:-1])

    def _unigram(self, words):
        table = self.tables[1]
        index, found = _find(table["keys"], words)
        discounted = np.where(found, table["discounted"][index], 0.0)
        uniform = table["backoff"][0] / (self.vocabulary_size - 1)
        return (discounted + uniform) / table["total"][0]

    def _lookup(self, n, ids, ends, context_rank):
        """The rank of each position's n-gram in the training table of
        order `n`, or -1 where it was never seen (or runs past its
        sentence)."""
        rank = np.full(len(ids), -1, dtype="int64")
        positions = np.flatnonzero(np.arange(len(ids)) + n - 1 <= ends)
        if n == 1:
            key = ids[positions]
        else:
            positions = positions[context_rank[positions] >= 0]
            key = context_rank[positions] * self.vocabulary_size
            key += ids[positions + n - 1]
        index, found = _find(self.tables[n]["keys"], key)
        rank[positions[found]] = index[found]
        return rank

    def _interpolate(self, n, ranks, at, lower):
        """p_n of the targets whose n-gram starts at `at`, from p_{n-1}."""
        table = self.tables[n]
        context = ranks[n - 1][at]
        seen = context >= 0
        total = np.zeros(len(at))
        total[seen] = table["total"][context[seen]]
        seen &= total > 0
        gram = ranks[n][at]
        discounted = np.where(gram >= 0, table["discounted"][gram], 0.0)
        backoff = np.zeros(len(at))
        backoff[seen] = table["backoff"][context[seen]]
        interpolated = discounted + backoff * lower
        return np.where(seen, interpolated / np.where(seen, total, 1), lower)

    def perplexity(self, sentences):
        """exp of the mean negative log probability of every target."""
        log_probabilities = np.concatenate(self.log_probabilities(sentences))
        return float(np.exp(-np.mean(log_probabilities)))


def _find(keys, values):
    """Indices of `values` in the sorted `keys`, and which were found."""
    index = np.searchsorted(keys, values)
    index = np.minimum(index, max(len(keys) - 1, 0))
    found = keys[index] == values if len(keys) else np.zeros(len(values), bool)
    return index, found


def _estimate_discounts(adjusted, n):
    """Chen and Goodman's D1, D2, D3+ from the counts of counts."""
    n1, n2, n3, n4 = (int(np.sum(adjusted == k)) for k in (1, 2, 3, 4))
    if min(n1, n2, n3, n4) == 0:
        raise KerasElmoError(
            f"The training text is too small to estimate the order-{n} "
            f"discounts: n-grams seen 1, 2, 3 and 4 times number {n1}, "
            f"{n2}, {n3} and {n4}, and none may be 0. Train on more text, "
            "use a lower order, or give `discounts` explicitly."
        )
    y = n1 / (n1 + 2 * n2)
    discounts = [1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3]
    # Within [0, k], each n-gram keeps a non-negative count.
    return np.clip(discounts, 0.0, [1.0, 2.0, 3.0])


def _check_discounts(discounts, order):
    if discounts is None:
        return None
    if isinstance(discounts, (str, bytes)) or not hasattr(discounts, "__len__"):
        raise KerasElmoError(
            f"`discounts` must be {order} triples (D1, D2, D3+).",
            "discounts",
            received=discounts,
        )
    if len(discounts) != order:
        raise KerasElmoError(
            f"`discounts` must be {order} triples (D1, D2, D3+), one per "
            "order, lowest first.",
            "discounts",
            received=discounts,
        )
    checked = []
    for n, triple in enumerate(discounts, start=1):
        values = check_numbers(triple, where=f"`discounts`[{n - 1}]", count=3)
        for k, value in enumerate(values, start=1):
            if not 0.0 <= value <= k:
                raise KerasElmoError(
                    f"`discounts`[{n - 1}][{k - 1}] (order {n}, D{k}) must "
                    f"be in [0, {k}].",
                    received=value,
                )
        checked.append(values)
    return checked
