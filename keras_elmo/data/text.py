"""Reading text files of one whitespace-tokenised sentence per line.

`read_lines` is the one line reader of the package: the corpus scanner,
the vocabulary builder and `embed` all read through it, with one rule for
lines that are not UTF-8 (`on_bad_line`). Files ending in `.gz` are read
through gzip; a damaged or truncated `.gz` file is an error naming it.
"""

import gzip
import zlib

from keras_elmo.errors import TextFileError
from keras_elmo.paths import check_input_file

ON_BAD_LINE = ("error", "skip")


def split_tokens(text):
    """The tokens of one sentence line: its whitespace-separated words
    (`str.split()`), the package's one tokenisation rule."""
    return text.split()


def check_on_bad_line(on_bad_line):
    if on_bad_line not in ON_BAD_LINE:
        raise TextFileError(
            f"`on_bad_line` must be one of {ON_BAD_LINE}.",
            "on_bad_line",
            received=on_bad_line,
        )
    return on_bad_line


def _check_file(path):
    check_input_file(
        path,
        "Input file",
        expected="a text file of one sentence a line (or a glob such as "
        "'dir/*.txt' where a command takes one)",
    )


def open_binary(path):
    """Opens a text file for reading bytes; `.gz` files are decompressed."""
    _check_file(path)
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _bad_line_error(path, line_number, raw, error):
    return TextFileError(
        f"{path}, line {line_number}: not valid UTF-8 (byte "
        f"0x{raw[error.start]:02x} at byte offset {error.start} of the "
        "line). Re-encode the file as UTF-8 (e.g. `iconv -f latin1 -t "
        "utf-8`); in sentence files (training, validation and embedding "
        "input) `on_bad_line` 'skip' leaves such lines out instead.",
        "on_bad_line",
    )


def read_lines(path, on_bad_line="error", skipped=None):
    """Yields `(line_number, tokens)` for each line of `path`.

    Lines are numbered from 1; an empty line is an empty sentence. The
    arguments are those of `read_text_lines`.
    """
    for line_number, text in read_text_lines(path, on_bad_line, skipped):
        yield line_number, split_tokens(text)


def read_text_lines(path, on_bad_line="error", skipped=None):
    """Yields `(line_number, text)` for each line of `path`, the text
    decoded, its line ending kept.

    Args:
        path: str. A text file, `.gz` allowed.
        on_bad_line: `"error"` raises `TextFileError` naming the first line
            that is not UTF-8; `"skip"` leaves such lines out.
        skipped: list or None. With `"skip"`, `(path, line_number)` of each
            line left out is appended to it.
    """
    check_on_bad_line(on_bad_line)
    try:
        with open_binary(path) as f:
            for line_number, raw in enumerate(f, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    if on_bad_line == "error":
                        raise _bad_line_error(
                            path, line_number, raw, error
                        ) from None
                    if skipped is not None:
                        skipped.append((path, line_number))
                    continue
                yield line_number, text
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise TextFileError(
            f"{path} is not a readable .gz file ({error}); it looks damaged "
            "or truncated. Re-create or re-download it, or decompress it "
            "and pass the plain text file."
        ) from None


def iter_sentences(path, on_bad_line="error", skipped=None):
    """Yields each line of `path` as a list of tokens (see `read_lines`)."""
    for _, tokens in read_lines(path, on_bad_line, skipped):
        yield tokens


def count_lines(path, on_bad_line="error"):
    """Counts the lines of `path` that `read_lines` yields, checking the
    whole file (UTF-8, gzip) before any expensive work."""
    count = 0
    for count, _ in enumerate(read_lines(path, on_bad_line), start=1):
        pass
    return count
