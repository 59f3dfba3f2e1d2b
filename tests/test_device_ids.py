"""The app side of a deployed biLM: `examples/device/ElmoIds.java` and
`ElmoTokenizer.java`, compiled with the machine's JDK, give the ids
`keras_elmo` gives and the tokens of `elmo_core.text.device_tokenizer`,
on odd input (Unicode in both normal forms, controls, invisible marks,
unpaired surrogates, long tokens cut inside a character, every mark the
tokenizer's rule reads, empty tokens, texts, sentences and batches)."""

import os
import random
import subprocess
import unicodedata

import numpy as np
import pytest

from elmo_core.characters import batch_to_ids
from elmo_core.ids.vocabulary import Vocabulary
from elmo_core.text import device_tokenizer
from tests.device_java import JAVA
from tests.device_java import ROOT
from tests.device_java import code_units
from tests.device_java import compile_java
from tests.device_java import java_tokens
from tests.device_java import needs_jdk
from tests.docs_blocks import blocks

ODD = [
    ["Hi", "there", ",", "world", "!"],
    [],
    ["<S>", "</S>", "<s>", "<UNK>"],
    ["naïve", "nai\u0308ve", "日本語", "😀", "👩\u200d👩\u200d👧", "\u200b"],
    # Unpaired surrogates (a Python str of a high then a low surrogate is
    # two characters, a Java String's is one: not a case for both).
    ["\x00", "a\ud800b", "\udc00", "x\ud83d", "\ude00\ud83d"],
    ["a" * 100, "é" * 30, "€" * 20, "😀" * 13, "a" + "😀" * 12, ""],
    ["tab\there", "no\u00a0break", "Ω" * 24, "Ω" * 25],
]
VOCABULARY = ["<S>", "</S>", "<UNK>", "Hi", "日本語", "world", "naïve", "!"]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return compile_java(tmp_path_factory.mktemp("classes"))


def _java_ids(classes, tmp_path, sentences, vocabulary_text):
    given = tmp_path / "sentences.txt"
    given.write_text(
        "".join(" ".join(code_units(t) for t in s) + "\n" for s in sentences),
        encoding="ascii",
    )
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text(vocabulary_text, encoding="utf-8")
    out = tmp_path / "ids.txt"
    ran = subprocess.run(
        [JAVA, "-cp", str(classes), "ElmoIdsCheck", str(given),
         str(vocabulary), str(out)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    if ran.returncode:
        return None, ran.stderr
    return _parse(out.read_text(encoding="utf-8").split("\n")), ""


def _parse(lines):
    _, count, longest = lines[0].split()
    count, longest = int(count), int(longest)

    def numbers(first, rows, width):
        values = [int(v) for line in lines[first : first + rows]
                  for v in line.split()]  # fmt: skip
        return np.array(values, "int32").reshape(rows, width)

    chars = numbers(1, count * longest, 50).reshape(count, longest, 50)
    at = 1 + count * longest
    assert lines[at] == f"words {count}"
    words = numbers(at + 1, count, longest)
    spaces = [int(p) for p in lines[at + count + 1].split()[1:]]
    return chars, words, spaces


@needs_jdk
def test_java_ids_equal_the_packages_on_odd_input(compiled, tmp_path):
    (chars, words, spaces), _ = _java_ids(
        compiled, tmp_path, ODD, "\n".join(VOCABULARY) + "\n"
    )
    np.testing.assert_array_equal(chars, batch_to_ids(ODD))
    np.testing.assert_array_equal(
        words, Vocabulary(VOCABULARY).batch_to_ids(ODD)
    )
    # The cuts: 48 bytes kept, a 4-byte character cut after its 3rd byte.
    assert chars[5, 4, 48] == "😀".encode()[2] + 1 and chars[5, 4, 49] == 260


@needs_jdk
def test_java_splits_a_vocabulary_line_where_python_does(compiled, tmp_path):
    (_, _, spaces), _ = _java_ids(
        compiled, tmp_path, [["a"]], "<S>\n</S>\n<UNK>\n"
    )
    assert spaces == [p for p in range(0x110000) if chr(p).isspace()]


@needs_jdk
def test_empty_batches(compiled, tmp_path):
    for sentences in ([], [[], []]):
        (chars, words, _), _ = _java_ids(
            compiled, tmp_path, sentences, "<S>\n</S>\n<UNK>\n"
        )
        assert chars.shape == batch_to_ids(sentences).shape
        assert words.shape == (len(sentences), 0)


@needs_jdk
@pytest.mark.parametrize(
    "text, problem",
    [
        ("<S>\n</S>\n<UNK>\nHi\nHi\n", "line 5"),
        ("<S>\n</S>\n<UNK>\nHi there\n", "line 4"),
        ("<S>\n</S>\nHi\n", "no <UNK>"),
        ("<S>\n\n</S>\n<UNK>\n", "line 2"),
        ("<S>\n</S>\n<UNK>\n \u00a0\n", "line 4"),
    ],
)
def test_a_vocabulary_keras_elmo_refuses_is_refused(
    compiled, tmp_path, text, problem
):
    ids, error = _java_ids(compiled, tmp_path, [["Hi"]], text)
    assert ids is None and problem in error
    (tmp_path / "python.txt").write_text(text, encoding="utf-8")
    with pytest.raises(Exception):
        Vocabulary.from_file(str(tmp_path / "python.txt"))


@needs_jdk
def test_a_last_line_break_is_optional_in_both(compiled, tmp_path):
    text = "<S>\n</S>\n<UNK>\nHi"
    (_, words, _), _ = _java_ids(compiled, tmp_path, [["Hi", "x"]], text)
    (tmp_path / "python.txt").write_text(text, encoding="utf-8")
    python = Vocabulary.from_file(str(tmp_path / "python.txt"))
    np.testing.assert_array_equal(words, python.batch_to_ids([["Hi", "x"]]))
    assert words.tolist() == [[4, 3]]


# === The tokenizer ===

# Raw sentences that reach every step of the rule, and text it must
# survive: both Unicode forms, controls, invisible marks, unpaired
# surrogates (on their own: see ODD), right-to-left scripts, empty text.
ODD_TEXTS = [
    'He said, "Don\'t go." Mr. Smith-Jones paid $5.50 (U.S.) for 50%...',
    "DON\u2019T I\u2019m it's JOHN'S y'all dogs' 'tis O'Neil's",
    "Cafe\u0301 nai\u0308ve \u212b \uff21\uff22",
    "a\x00b\x1fc\x7fd\x85e\x9ff \ufeffzero\u200bwidth soft\u00adhyphen",
    "\u65e5\u672c\u8a9e\u3002 \U0001f469\u200d\U0001f469\u200d\U0001f467 "
    "\U0001f600! \u00bfQu\u00e9? \u00abOui\u00bb \u201cq\u201d \u2018s\u2019",
    "a\ud800b \udc00. x\ud83d-y \ude00\ud83d",
    "\u05e9\u05dc\u05d5\u05dd, \u05e2\u05d5\u05dc\u05dd! "
    "\u0645\u0631\u062d\u0628\u0627-\u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "...start end... mid...dle a\u2026b \u2026 a.b.c. etc. e.g., I.B.M. "
    "3.14. A. x. .. . Sept. sept. vs.",
    "--x-- well--known 5-year 1998-2004 F-16 x-ray -5 a\u2014b 5\u20136",
    "www.x.com/a-b, http://a.b/c-d. (me@x-y.org) @user #tag",
    "and/or 1/2 a,b 1,000 3,to x//y a/,b",
    "",
    "   ",
    "\u200b",
    "\x00",
    "'",
    ".",
    "!?",
    "'s",
    "$",
    "%",
    "a" * 100 + "-b " + "\u00e9" * 30 + ".",
    "tab\there no\u00a0break\u2028line\u2029para\x1cfile",
]
ODD_CHARACTERS = (
    "aZ\u00e9\u00df\u03a9\u05d0\u4e2d09 .,;:!?'\"`()[]{}<>_*&#@/$\u00a3"
    "\u20ac\u00a5%-\u2013\u2014~\u2026\u2018\u2019\u201a\u201c\u201d\u201e"
    "\u00ab\u00bb\u00bf\u00a1\t\u00a0\u200b\u00ad\x00\u0301\U0001f600"
    # Every mark of ASCII, Latin-1, General Punctuation, CJK's symbols and
    # the fullwidth forms: a mark one rule reads and the other does not
    # splits differently.
    + "".join(chr(p) for p in range(0x21, 0x7F) if not chr(p).isalnum())
    + "".join(map(chr, range(0xA1, 0xC0)))
    + "".join(map(chr, range(0x2010, 0x2060)))
    + "".join(map(chr, range(0x3000, 0x3020)))
    + "".join(map(chr, range(0xFF01, 0xFF20)))
)


def _random_texts(count, seed=7):
    """Texts drawn from `ODD_CHARACTERS` and the words the rule names:
    the same texts on every run."""
    draw = random.Random(seed)
    pieces = list(ODD_CHARACTERS) + [
        "n't",
        "'s",
        "'LL",
        "Mr.",
        "U.S.",
        "://",
        "www.",
        "...",
        "e.g.",
    ]
    return [
        "".join(draw.choice(pieces) for _ in range(draw.randint(0, 30)))
        for _ in range(count)
    ]


@needs_jdk
def test_java_tokens_and_ids_equal_the_python_rule_s(compiled, tmp_path):
    texts = ODD_TEXTS + _random_texts(2000)
    tokens, ids, _ = java_tokens(compiled, tmp_path, texts)
    want = [device_tokenizer.tokenize(text) for text in texts]
    for text, got, expected in zip(texts, tokens, want):
        assert got == expected, text
    np.testing.assert_array_equal(ids, batch_to_ids(want))
    # The rule's steps split these texts (tests/test_device_tokenizer.py
    # checks each step's tokens).
    assert want[0][:5] == ["He", "said", ",", '"', "Do"]
    assert sum(map(len, want)) > 2 * sum(len(text.split()) for text in texts)


@needs_jdk
def test_java_letters_are_python_s(compiled, tmp_path):
    # Every code point both Unicode versions assign is a letter in both or
    # in neither (Java's and Python's versions may differ by a few new
    # characters, which neither rule can be asked to agree on).
    _, _, letters = java_tokens(compiled, tmp_path, ["a"])
    assert len(letters) == 0x110000
    differ = [
        point
        for point, kind in enumerate(letters)
        if (kind == "L") != chr(point).isalpha()
        and kind != "U"
        and unicodedata.category(chr(point)) != "Cn"
    ]
    assert differ == []


def test_the_deploy_page_shows_the_java_files_as_they_are():
    # docs/deploy.md holds the code itself (a page read on GitHub shows
    # no include), so it is checked against the files.
    shown = [b.code for b in blocks("docs/deploy.md") if b.language == "java"]
    names = ("ElmoTokenizer.java", "ElmoIds.java")
    files = []
    for name in names:
        path = os.path.join(ROOT, "examples", "device", name)
        with open(path, encoding="utf-8") as f:
            files.append(f.read())
    assert shown == files
