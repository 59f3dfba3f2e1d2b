"""The app side's Java (`examples/device/`), compiled with the machine's
JDK and run on texts, for tests/test_device_ids.py and the Android
journey of tests/test_journeys.py.

Texts travel as UTF-16 code units in hex (`u48.69` is "Hi", `u` alone
""), so that any Java string, unpaired surrogates included, gets through
both ways.
"""

import os
import shutil
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = [
    os.path.join(ROOT, "examples", "device", "ElmoIds.java"),
    os.path.join(ROOT, "examples", "device", "ElmoTokenizer.java"),
    os.path.join(ROOT, "tests", "java", "ElmoIdsCheck.java"),
    os.path.join(ROOT, "tests", "java", "ElmoTokenizerCheck.java"),
]
JAVAC = shutil.which("javac")
JAVA = shutil.which("java")
# Without a JDK the checks cannot run; .ci/run's machine has one.
needs_jdk = pytest.mark.skipif(
    not (JAVAC and JAVA), reason="needs a JDK (javac and java on PATH)"
)


def compile_java(folder):
    """Compiles `SOURCES` into `folder`; returns it."""
    subprocess.run(
        [JAVAC, "-encoding", "UTF-8", "-d", str(folder), *SOURCES],
        check=True,
        capture_output=True,
    )
    return folder


def code_units(text):
    """`text` as `u` and its UTF-16 code units in hex, joined by `.`."""
    data = text.encode("utf-16-le", "surrogatepass")
    units = np.frombuffer(data, "<u2")
    return "u" + ".".join(f"{unit:x}" for unit in units)


def from_code_units(word):
    units = word[1:].split(".") if len(word) > 1 else []
    data = b"".join(int(unit, 16).to_bytes(2, "little") for unit in units)
    return data.decode("utf-16-le", "surrogatepass")


def java_tokens(classes, folder, texts):
    """`ElmoTokenizer.tokenize` of each of `texts` in Java: `(token lists,
    their ElmoIds character ids [text][token][50], the letters line:
    one character per code point, "L" a letter, "U" unassigned)`."""
    given = os.path.join(folder, "texts.txt")
    with open(given, "w", encoding="ascii") as f:
        f.write("".join(code_units(text) + "\n" for text in texts))
    out = os.path.join(folder, "tokens.txt")
    subprocess.run(
        [JAVA, "-cp", str(classes), "ElmoTokenizerCheck", given, out],
        check=True,
        capture_output=True,
    )
    with open(out, encoding="ascii") as f:
        lines = f.read().split("\n")
    count = int(lines[0].split()[1])
    tokens = [
        [from_code_units(word) for word in line.split()]
        for line in lines[1 : 1 + count]
    ]
    longest = int(lines[1 + count].split()[1])
    rows = lines[2 + count : 2 + count + count * longest]
    ids = np.array([row.split() for row in rows], "int32")
    letters = lines[2 + count + count * longest + 1]
    return tokens, ids.reshape(count, longest, 50), letters
