"""Reading text files of one whitespace-tokenised sentence per line."""

import gzip
import os


class TextFileError(ValueError):
    """A text file that cannot be read as UTF-8 sentences."""


def _decode(raw, path, line_number):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TextFileError(
            f"{path}, line {line_number}: not valid UTF-8 (byte "
            f"0x{raw[e.start]:02x} at byte offset {e.start} of the line). "
            "Re-encode the file as UTF-8, e.g. `iconv -f latin1 -t utf-8`."
        ) from None


def _check_exists(path):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Input file not found: {path}")


def open_binary(path):
    """Opens a text file for reading bytes; `.gz` files are decompressed."""
    _check_exists(path)
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def iter_sentences(path):
    """Yields each line of `path` as a list of tokens (split on whitespace).

    Files ending in `.gz` are read through gzip.

    Lines are numbered from 1 in error messages; an empty line is an empty
    sentence. Raises `TextFileError` naming the line that is not UTF-8.
    """
    with open_binary(path) as f:
        for line_number, raw in enumerate(f, start=1):
            yield _decode(raw, path, line_number).split()


def count_lines(path):
    """Counts the lines of `path`, checking that every line is UTF-8.

    Run before any expensive work so that a bad file fails at once.
    """
    count = 0
    with open_binary(path) as f:
        for count, raw in enumerate(f, start=1):
            _decode(raw, path, count)
    return count
