"""The app side of a deployed biLM: `examples/device/ElmoIds.java`,
compiled with the machine's JDK, gives the ids `keras_elmo` gives, on odd
input (Unicode, unpaired surrogates, long tokens cut inside a character,
empty tokens, sentences and batches)."""

import os
import shutil
import subprocess

import numpy as np
import pytest

from elmo_core.characters import batch_to_ids
from elmo_core.ids.vocabulary import Vocabulary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = [
    os.path.join(ROOT, "examples", "device", "ElmoIds.java"),
    os.path.join(ROOT, "tests", "java", "ElmoIdsCheck.java"),
]
JAVAC = shutil.which("javac")
JAVA = shutil.which("java")
# Without a JDK the check cannot run; .ci/run's machine has one.
needs_jdk = pytest.mark.skipif(
    not (JAVAC and JAVA), reason="needs a JDK (javac and java on PATH)"
)

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
    classes = tmp_path_factory.mktemp("classes")
    subprocess.run(
        [JAVAC, "-encoding", "UTF-8", "-d", str(classes), *SOURCES],
        check=True,
        capture_output=True,
    )
    return classes


def _code_units(token):
    data = token.encode("utf-16-le", "surrogatepass")
    units = np.frombuffer(data, "<u2")
    return "u" + ".".join(f"{unit:x}" for unit in units)


def _java_ids(classes, tmp_path, sentences, vocabulary_text):
    given = tmp_path / "sentences.txt"
    given.write_text(
        "".join(" ".join(_code_units(t) for t in s) + "\n" for s in sentences),
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
