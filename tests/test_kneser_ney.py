"""The Kneser-Ney baseline against probabilities computed by hand.

The toy corpus (ids: 0 <S>, 1 </S>, 2..4 words) is

    <S> 2 3 </S>    <S> 2 4 </S>    <S> 3 2 3 4 </S>

Its counts, written out once:
- trigrams (the highest order of a trigram model, raw counts): each of
  (0 2 3) (2 3 1) (0 2 4) (2 4 1) (0 3 2) (3 2 3) (2 3 4) (3 4 1) once;
- bigrams: (0 2) 2 and (0 3) 1 keep their counts (they start with <S>);
  the others count the distinct ids before them in the trigrams:
  (2 3) 2 [0, 3], (3 1) 1, (2 4) 1, (4 1) 2 [2, 3], (3 2) 1, (3 4) 1;
- unigrams count the distinct ids before them in the bigrams: 2 [0, 3],
  3 [2, 0], 1 [3, 4] and 4 [2, 3], 2 each, 8 in all.
"""

import numpy as np
import pytest

from elmo_core.errors import KerasElmoError
from keras_elmo.baselines.kneser_ney import KneserNey

TOY = [[2, 3], [2, 4], [3, 2, 3, 4]]
# Different per order and per level, so that a mix-up shows.
DISCOUNTS = [[0.3, 0.6, 0.9], [0.4, 0.8, 1.2], [0.5, 1.0, 1.5]]


def _probabilities(model, sentences):
    return [np.exp(x) for x in model.log_probabilities(sentences)]


def _trigram_model(vocabulary_size=5):
    model = KneserNey(vocabulary_size, 0, 1, order=3, discounts=DISCOUNTS)
    return model.fit(TOY)


def test_trigram_probabilities_by_hand():
    # Order 1: all four words have count 2 (D 0.6): (2 - 0.6 + 4 * 0.6 / 4)
    # / 8 = 0.25 each.
    p1 = (2 - 0.6 + 4 * 0.6 / 4) / 8
    # Order 2 (D1 0.4, D2 0.8); contexts <S> (0 2: 2, 0 3: 1), 3 (three
    # ones), 2 (2 3: 2, 2 4: 1), 4 (4 1: 2).
    p2_3_after_bos = (1 - 0.4 + (0.8 + 0.4) * p1) / 3
    p2_2_after_3 = (1 - 0.4 + 3 * 0.4 * p1) / 3
    p2_4_after_2 = (1 - 0.4 + (0.8 + 0.4) * p1) / 3
    p2_eos_after_4 = (2 - 0.8 + 0.8 * p1) / 2
    # Order 3 (D1 0.5): contexts (0 3), (3 2), (2 4) each seen once.
    expected = [
        p2_3_after_bos,  # only <S> before it
        (1 - 0.5 + 0.5 * p2_2_after_3) / 1,  # (0 3 2) seen
        (0 + 0.5 * p2_4_after_2) / 1,  # (3 2 4) unseen, context seen
        (1 - 0.5 + 0.5 * p2_eos_after_4) / 1,  # (2 4 </S>) seen
    ]
    (got,) = _probabilities(_trigram_model(), [[3, 2, 4]])
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(expected, [0.3, 0.65, 0.15, 0.85])


def test_unseen_contexts_back_off_to_the_lower_order():
    p1 = 0.25
    expected = [
        (0 + (0.8 + 0.4) * p1) / 3,  # 4 after <S>: (0 4) unseen
        (0 + 0.8 * p1) / 2,  # 3 after (0 4): unseen context -> after 4
        (1 - 0.4 + 3 * 0.4 * p1) / 3,  # </S> after (4 3) -> after 3
    ]
    (got,) = _probabilities(_trigram_model(), [[4, 3]])
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_an_unseen_word_gets_the_uniform_share():
    # Id 5 never occurs: with 6 ids, 5 can follow (all but <S>).
    model = _trigram_model(vocabulary_size=6)
    (got,) = _probabilities(model, [[5]])
    uniform = 4 * 0.6 / 5 / 8
    seen = (2 - 0.6) / 8 + uniform
    p2_5_after_bos = (0 + (0.8 + 0.4) * uniform) / 3
    p2_eos_after_5 = seen  # context 5 unseen: the unigram
    np.testing.assert_allclose(got, [p2_5_after_bos, p2_eos_after_5])


def test_discounts_estimated_from_counts_of_counts():
    # A unigram model counts raw: ids 3-6 and </S> once (n1 = 5), 7 and 8
    # twice (n2 = 2), 9 three times (n3 = 1), 10 four times (n4 = 1).
    sentence = [3, 4, 5, 6, 7, 7, 8, 8, 9, 9, 9, 10, 10, 10, 10]
    model = KneserNey(11, 0, 1, order=1).fit([sentence])
    y = 5 / (5 + 2 * 2)
    d1, d2, d3 = 1 - 2 * y * 2 / 5, 2 - 3 * y * 1 / 2, 3 - 4 * y * 1 / 1
    np.testing.assert_allclose([d1, d2, d3], [5 / 9, 7 / 6, 7 / 9])
    backoff = 5 * d1 + 2 * d2 + d3 + d3
    uniform = backoff / 10  # ids 1..10 can follow
    (got,) = _probabilities(model, [[10, 2, 3, 7]])
    expected = np.array(
        [4 - d3 + uniform, uniform, 1 - d1 + uniform, 2 - d2 + uniform]
        + [1 - d1 + uniform]  # </S>
    )
    np.testing.assert_allclose(got, expected / 16, rtol=1e-12)


def _random_corpus(seed):
    """Sentences of ids 2..201 (202 is never seen): Zipf-like ids, often
    followed by the next id, so that every order up to 5 has n-grams seen
    1 to 4 times."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, 201) ** 1.1
    sentences = []
    for _ in range(300):
        words = rng.choice(np.arange(2, 202), 12, p=weights / weights.sum())
        for i in range(1, 12):
            if rng.random() < 0.7:
                words[i] = min(words[i - 1] + 1, 201)
        sentences.append(list(words[: rng.integers(0, 13)]))
    return sentences


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_probabilities_sum_to_one(order):
    sentences = _random_corpus(order)
    model = KneserNey(203, 0, 1, order=order).fit(sentences)
    prefixes = [[], [2], [2, 3], [5, 2, 2, 3], [202, 202], sentences[0]]
    for prefix in prefixes:
        candidates = [prefix + [w] for w in range(2, 203)]
        total = sum(np.exp(x[-2]) for x in model.log_probabilities(candidates))
        total += np.exp(model.log_probabilities([prefix])[0][-1])
        assert abs(total - 1.0) < 1e-12, (prefix, total)


def test_the_targets_of_each_sentence():
    model = _trigram_model()
    lengths = [len(x) for x in model.log_probabilities([[2], [], [3, 4, 2]])]
    assert lengths == [2, 1, 4]
    assert model.perplexity([[3, 2, 4]]) == pytest.approx(
        (0.3 * 0.65 * 0.15 * 0.85) ** -0.25
    )


@pytest.mark.parametrize(
    "sentences, message",
    [
        ([[2, 7]], "sentence 0 holds id 7; expected ids in 0..4"),
        ([[2], [0, 2]], "sentence 1 holds id 0"),
        ([[2, -1]], "holds id -1"),
        ([["a"]], "sentence 0 must be a list of integer ids"),
        ("2 3", "must be a list of lists of ids"),
        ([], "hold no sentence"),
    ],
)
def test_bad_sentences(sentences, message):
    model = KneserNey(5, 0, 1, order=2, discounts=[[0.5] * 3] * 2)
    with pytest.raises(KerasElmoError, match=message):
        model.fit(sentences)


def test_a_corpus_too_small_for_the_discounts():
    with pytest.raises(KerasElmoError, match="order-1 discounts") as raised:
        KneserNey(5, 0, 1, order=2).fit(TOY)
    assert "give `discounts`" in str(raised.value)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(discounts=[[0.5] * 3]),
            r"must be 2 triples \(D1, D2, D3\+\), one per order",
        ),
        (dict(discounts=[[0.5] * 3, [1.5, 1, 1]]), r"D1\) must be in \[0, 1\]"),
        (
            dict(discounts=[[0.5] * 3, [0.5, 1]]),
            r"`discounts`\[1\] must be 3 numbers. Received: \[0.5, 1\]\.",
        ),
        (dict(discounts=[[0.5] * 3, [0.5, float("nan"), 1]]), "finite"),
        (
            dict(bos_id=5),
            "`bos_id` must be an integer >= 0 and <= 4. Received: bos_id=5.",
        ),
        (dict(eos_id=0), "must differ"),
        (dict(order=0), "`order` must be an integer >= 1"),
    ],
)
def test_bad_arguments(kwargs, message):
    arguments = dict(vocabulary_size=5, bos_id=0, eos_id=1, order=2)
    with pytest.raises(KerasElmoError, match=message):
        KneserNey(**{**arguments, **kwargs})


def test_scoring_before_fitting():
    with pytest.raises(KerasElmoError, match="fit"):
        KneserNey(5, 0, 1).log_probabilities([[2]])
