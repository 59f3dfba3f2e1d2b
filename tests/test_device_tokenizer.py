"""The device tokenizer's rule (`elmo_core.text.device_tokenizer`), step
by step, against tokens written out by hand from the rule; its Java twin
is compared with it in tests/test_device_ids.py."""

import pytest

from elmo_core.errors import KerasElmoError
from elmo_core.text.device_tokenizer import tokenize


@pytest.mark.parametrize(
    "text, tokens",
    [
        # 1. the normal form: NFC, controls as spaces, invisible marks gone
        ("Cafe\u0301 x", ["Caf\u00e9", "x"]),
        (
            "a\x00b\x9fc \ufeffze\u200bro so\u00adft",
            ["a", "b", "c", "zero", "soft"],
        ),
        # 2. whitespace: Unicode's, as str.split()
        (
            "tab\there no\u00a0break\u2028line",
            ["tab", "here", "no", "break", "line"],
        ),
        ("", []),
        (" \u200b\x00 ", []),
        # 3. the front: marks, currency, period runs
        ('("Hi', ["(", '"', "Hi"]),
        ("$5 \u20ac10 ...so", ["$", "5", "\u20ac", "10", "...", "so"]),
        ("\u00bfQu\u00e9", ["\u00bf", "Qu\u00e9"]),
        # 4. the end: marks, %, period runs, clitics, one period
        ('go."', ["go", ".", '"']),
        ("50%, end...", ["50", "%", ",", "end", "..."]),
        (
            "don't DON\u2019T I'm we'll they've she'd it's you're",
            [
                "do",
                "n't",
                "DO",
                "N\u2019T",
                "I",
                "'m",
                "we",
                "'ll",
                "they",
                "'ve",
                "she",
                "'d",
                "it",
                "'s",
                "you",
                "'re",
            ],
        ),
        ("dogs' O'Neil's", ["dogs", "'", "O'Neil", "'s"]),
        # 4. abbreviations keep their period
        (
            "Mr. U.S. e.g. A. x. I.B.M.",
            ["Mr.", "U.S.", "e.g.", "A.", "x.", "I.B.M."],
        ),
        ("etc. mr. 3.14. ab.", ["etc", ".", "mr", ".", "3.14", ".", "ab", "."]),
        ("(U.S.)", ["(", "U.S.", ")"]),
        # 5. inside: hyphens, dashes, /, commas, period runs, ...
        (
            "well-known 5-year 1998-2004 F-16 -5 a\u2014b",
            [
                "well",
                "-",
                "known",
                "5",
                "-",
                "year",
                "1998",
                "-",
                "2004",
                "F-16",
                "-5",
                "a",
                "\u2014",
                "b",
            ],
        ),
        (
            "and/or 1/2 a,b 1,000 mid...dle a\u2026b 5.50",
            [
                "and",
                "/",
                "or",
                "1/2",
                "a",
                ",",
                "b",
                "1,000",
                "mid",
                "...",
                "dle",
                "a",
                "\u2026",
                "b",
                "5.50",
            ],
        ),
        # 5. addresses stay whole
        (
            "www.a-b.com http://x.y/a-b. me@x-y.org,",
            ["www.a-b.com", "http://x.y/a-b", ".", "me@x-y.org", ","],
        ),
        # a word's last character is never taken: no empty token
        ("' . ... !? $ %", ["'", ".", "...", "!", "?", "$", "%"]),
    ],
)
def test_the_rule(text, tokens):
    assert tokenize(text) == tokens


def test_tokens_are_never_empty_nor_hold_whitespace():
    text = " \u2026 '' -- ..- a-- --b ,, //. \u00a0\u3000x\u3002"
    tokens = tokenize(text)
    assert tokens and all(t and t == "".join(t.split()) for t in tokens)
    assert "".join(tokens) == "".join(text.split())


def test_not_text_is_refused_naming_it():
    with pytest.raises(KerasElmoError, match="`text`"):
        tokenize(b"bytes")
