"""Reading text files of one whitespace-tokenised sentence per line.

`read_lines` is the one line reader of the package: the corpus scanner,
the vocabulary builder and `embed` all read through it, with one rule for
lines that are not UTF-8 (`on_bad_line`); `numbered_lines` is the rule
for what a line is, which the corpus pipeline reads remote files with:

- a line ends at "\n"; "\r\n" ends it too (the "\r" is whitespace to
  the tokeniser), and a UTF-8 byte order mark at the start of a file is
  not part of its first line, so a file saved by Windows Notepad gives the
  same sentences as the same text with plain "\n";
- a line of more than `MAX_LINE_BYTES` is never read into memory whole
  (it is no sentence: a file without line breaks, or a binary file).

Files ending in `.gz` are read through gzip (`decompressed`); a damaged
or truncated `.gz` file is an error naming it (`damaged_gzip`). Other
compressions and archives (`.bz2`, `.xz`, `.zst`, `.zip`, ...) are
refused by name (`check_compression`): read as plain text they would be
bytes, not sentences, and `tf.data`, which training reads through, takes
gzip only.
"""

import gzip
import os
import stat
import zlib

from elmo_core.errors import TextFileError
from elmo_core.files.paths import check_input_file

ON_BAD_LINE = ("error", "skip")
# The one compression the package reads, by the file's suffix.
GZIP_SUFFIX = ".gz"
# Suffixes of the compressions and archives it does not read -> their name.
UNREAD_COMPRESSIONS = {
    ".bz2": "bzip2",
    ".xz": "xz",
    ".lzma": "lzma",
    ".zst": "zstd",
    ".zstd": "zstd",
    ".deflate": "deflate",
    ".z": "compress",
    ".zip": "zip archive",
    ".7z": "7-Zip archive",
    ".tgz": "tar archive",
    ".tar": "tar archive",
}
# What a damaged gzip stream raises while it is read.
GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)
# A line longer than this is never held whole (16 MiB: some 8,000 times
# the longest sentence `embed-corpus` takes by default).
MAX_LINE_BYTES = 16 << 20
UTF8_BOM = b"\xef\xbb\xbf"
_SKIP_BYTES = 1 << 20


# The characters `str.split()` splits at: Python's whitespace (Unicode's
# space separators, the ASCII and Unicode line and paragraph separators,
# the file, group, record and unit separators), spelled out for readers
# that split a line outside Python (`tf.strings.split` alone splits at
# ASCII whitespace, so "a\u00a0b" would be one token there and two here).
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002"
    "\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f"
    "\u205f\u3000"
)
# `WHITESPACE` as a regular expression (Python's and RE2's syntax).
WHITESPACE_PATTERN = f"[{WHITESPACE}]"


def split_tokens(text):
    """The tokens of one line of a corpus (tokenised sentences, what
    training reads): its words between whitespace (`str.split()`, as
    written; raw text is read by `elmo_core.text.tokenizers`)."""
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


def check_compression(path, argument=None):
    """Refuses a file whose suffix names a compression or archive the
    package does not read (`UNREAD_COMPRESSIONS`), naming it, and a local
    `.gz` file of zero bytes (no gzip stream at all: what an interrupted
    compression leaves, which `gzip -t` calls truncated; Python's gzip
    would read it as empty text and lose the file silently); returns
    whether `path` is gzip (`.gz`)."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    kind = UNREAD_COMPRESSIONS.get(suffix)
    if kind is not None:
        raise TextFileError(
            f"{path} is named as a {kind} file ({suffix}); text is read "
            "plain or gzip-compressed (.gz) only. Decompress it, or "
            f"recompress it with gzip (e.g. `{_recompress(suffix)}`).",
            argument,
        )
    if suffix == GZIP_SUFFIX and _is_empty_file(path):
        raise TextFileError(
            f"{path} is empty (0 bytes): a .gz file holds a gzip header at "
            "least, even for empty text; this one was cut off or never "
            "written. Compress the text again (even an empty text gzips to "
            "20 bytes or more), or leave the file out.",
            argument,
        )
    return suffix == GZIP_SUFFIX


def _is_empty_file(path):
    """Whether a local regular file lies at `path` and holds 0 bytes."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size == 0


def _recompress(suffix):
    tools = {".bz2": "bzcat", ".xz": "xzcat", ".lzma": "xzcat"}
    tool = tools.get(suffix, "zstdcat" if suffix.startswith(".zst") else None)
    if tool is None:
        return "unpack it, then gzip each text file"
    return f"{tool} FILE | gzip > FILE.txt.gz"


def open_binary(path):
    """Opens a text file for reading bytes; `.gz` files are decompressed."""
    _check_file(path)
    if check_compression(path):
        return gzip.open(path, "rb")
    return open(path, "rb")


def decompressed(raw, path):
    """The text bytes of the open binary file `raw` (any file object, e.g.
    from a remote filesystem) named `path`: gunzipped for `.gz` (closing
    the result leaves `raw` open), else `raw` itself."""
    if check_compression(path):
        return gzip.GzipFile(fileobj=raw, mode="rb")
    return raw


def damaged_gzip(path, error):
    """What a `GZIP_ERRORS` error raised reading `path` means, in words."""
    if isinstance(error, EOFError):
        why = (
            "it is truncated (its gzip data ends before the gzip end "
            "marker: the file was cut short, e.g. by an interrupted copy or "
            "download)"
        )
    elif isinstance(error, gzip.BadGzipFile) and "Not a gzipped" in str(error):
        why = f"it is named .gz but is not gzip-compressed ({error})"
    else:
        why = f"it is damaged ({error})"
    return f"{path} is not a readable .gz file: {why}"


def numbered_lines(f):
    """Yields `(line_number, raw)` for each line of the binary file `f`,
    numbered from 1: `raw` is the line's bytes with its ending ("\n" or
    "\r\n") removed and, on line 1, a UTF-8 byte order mark removed; or
    None for a line longer than `MAX_LINE_BYTES`, which is read past
    without being held."""
    line_number = 0
    while True:
        raw = f.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        line_number += 1
        if line_number == 1 and raw.startswith(UTF8_BOM):
            raw = raw[len(UTF8_BOM) :]
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            _skip_line(f)
            yield line_number, None
            continue
        if raw.endswith(b"\n"):
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        yield line_number, raw


def _skip_line(f):
    while True:
        part = f.readline(_SKIP_BYTES)
        if not part or part.endswith(b"\n"):
            return


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
    decoded (see `numbered_lines`: its line ending and a leading byte
    order mark removed).

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
            for line_number, raw in numbered_lines(f):
                if raw is None:
                    raise _long_line_error(path, line_number)
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
    except GZIP_ERRORS as error:
        raise TextFileError(
            f"{damaged_gzip(path, error)}. Re-create or re-download it, or "
            "decompress it and pass the plain text file."
        ) from None


def _long_line_error(path, line_number):
    return TextFileError(
        f"{path}, line {line_number}: longer than {MAX_LINE_BYTES:,} bytes; "
        "no sentence is. Is it a text file of one sentence a line?"
    )


def iter_sentences(path, on_bad_line="error", skipped=None):
    """Yields each line of `path` as a list of tokens (see `read_lines`)."""
    for _, tokens in read_lines(path, on_bad_line, skipped):
        yield tokens


def file_version(path):
    """`(inode, size, modification time)` of `path`: what writing to it or
    replacing it changes; None where it cannot be read."""
    try:
        state = os.stat(path)
    except OSError:
        return None
    return state.st_ino, state.st_size, state.st_mtime_ns


def check_unchanged(path, version, lines_checked, lines_read):
    """Raises `TextFileError` if `path` changed since `file_version` gave
    `version`, or if it was read as another number of lines than when it
    was checked: a command that checks a file and then reads it again must
    not write what a different file would give."""
    if lines_read != lines_checked or file_version(path) != version:
        raise TextFileError(
            f"{path} changed while it was read ({lines_checked:,} lines "
            f"when checked, {lines_read:,} when read), so nothing was "
            "written. Run again when nothing writes to it, or on a copy."
        )


def count_lines(path, on_bad_line="error"):
    """Counts the lines of `path` that `read_lines` yields, checking the
    whole file (UTF-8, gzip) before any expensive work."""
    count = 0
    for count, _ in enumerate(read_lines(path, on_bad_line), start=1):
        pass
    return count
