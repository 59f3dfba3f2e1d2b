"""Raw text files as documents of paragraphs, read in bounded memory.

A *document* is the unit the held-out part is drawn by: a whole file
(`"file"`, e.g. a book), each block between blank lines
(`"blank-line"`, e.g. a dump of articles), or each line (`"line"`, e.g.
one web page a line). A *paragraph* is the unit sentences are split in:
the lines between blank lines joined with spaces (hard-wrapped text
reads as it was written), and in `"line"` documents, or for a
tokenisation that reads a line as one sentence (`whitespace`: `lines`),
each line.

Every file is untrusted: a line is read in pieces of at most
`PIECE_BYTES`, and a paragraph longer than `MAX_PARAGRAPH_CHARACTERS`
goes on in pieces cut at a space (or, with none, at the limit), so a
file of any size, with or without line breaks, is read in bounded
memory. Text is normalised line by line (`normalization.normalize`).

A file is read in the first of the `encodings` that decodes all of it
(UTF-8 by default; `"utf-8,latin-1"` reads each file as UTF-8 if it is,
else as Latin-1, which decodes any bytes).
"""

import codecs
import dataclasses
import re

from elmo_core.errors import KerasElmoError
from elmo_core.errors import TextFileError
from elmo_core.errors import check_strings
from elmo_core.text.lines import GZIP_ERRORS
from elmo_core.text.lines import UTF8_BOM
from elmo_core.text.lines import damaged_gzip
from elmo_core.text.lines import open_binary
from elmo_core.text.normalization import normalize
from elmo_core.text.tokenizers import MAX_TEXT

DOCUMENTS = ("file", "blank-line", "line")
DEFAULT_ENCODINGS = ("utf-8",)
DEFAULT_DOCUMENTS = "file"
MAX_PARAGRAPH_CHARACTERS = MAX_TEXT
PIECE_BYTES = 1 << 20


@dataclasses.dataclass
class Paragraph:
    """Normalised text of one document (`document`: its number in the
    file, from 0) that starts on `line` (from 1)."""

    document: int
    line: int
    text: str


@dataclasses.dataclass
class LineCounts:
    """What reading saw: lines read, lines the normal form changed, the
    (file, line) of each line left out as not UTF-8, and whether
    `stop_at` left out the rest of the file."""

    lines: int = 0
    changed: int = 0
    skipped: list = dataclasses.field(default_factory=list)
    stopped: bool = False


def paragraphs(
    path,
    documents=DEFAULT_DOCUMENTS,
    counts=None,
    on_bad_line="error",
    done=None,
    encodings=DEFAULT_ENCODINGS,
    stop_at=None,
    lines=False,
):
    """Yields the `Paragraph`s of the raw text file `path` (`.gz`
    allowed), in order.

    Args:
        path: str. A text file, UTF-8.
        documents: one of `DOCUMENTS`.
        counts: `LineCounts` or None, updated while reading.
        on_bad_line: `"error"`: a line that is not UTF-8 raises
            `TextFileError` naming it; `"skip"`: it is left out (and
            counted).
        done: callable or None, called with the bytes of `path` read so
            far (its size on disk), for progress.
        encodings: list of str (codec names, see `check_encodings`).
        stop_at: compiled regular expression or None: the first line in
            which it is found (normalised), and all after it, are left
            out (a licence footer, say).
        lines: bool. Each line is a paragraph of its own (never joined
            to the next), whatever `documents` is.
    """
    counts = counts if counts is not None else LineCounts()
    encoding = _encoding_of(path, encodings)
    joined = _Joined()
    document, started = 0, False
    pieces = _pieces(path, encoding, on_bad_line, counts, done)
    for number, text, ends in pieces:
        if stop_at is not None and stop_at.search(text):
            counts.stopped = True
            pieces.close()
            break
        if documents == "line":
            document = number - 1
        if text:
            started = True
            yield from joined.add(document, number, text)
        if not ends:
            continue
        if documents == "line" or lines or not text:
            yield from joined.flush(document)
        if documents == "blank-line" and not text and started:
            document, started = document + 1, False
    yield from joined.flush(document)


class _Joined:
    """The paragraph being read: its lines, cut into pieces of at most
    `MAX_PARAGRAPH_CHARACTERS`."""

    def __init__(self):
        self.parts = []
        self.size = 0
        self.line = None

    def add(self, document, line, text):
        if self.line is None:
            self.line = line
        self.parts.append(text)
        self.size += len(text) + 1
        while self.size > MAX_PARAGRAPH_CHARACTERS:
            whole = " ".join(self.parts)
            cut = whole.rfind(" ", 0, MAX_PARAGRAPH_CHARACTERS + 1)
            cut = cut if cut > 0 else MAX_PARAGRAPH_CHARACTERS
            head, rest = whole[:cut].strip(), whole[cut:].strip()
            self.parts, self.size = [rest], len(rest) + 1
            yield Paragraph(document, self.line, head)
            self.line = line

    def flush(self, document):
        text = " ".join(self.parts)
        if text:
            yield Paragraph(document, self.line, text)
        self.parts, self.size, self.line = [], 0, None


def _pieces(path, encoding, on_bad_line, counts, done):
    """Yields `(line_number, normalised_text, ends_line)` for each piece
    of each line of `path`; a line of more than `PIECE_BYTES` comes in
    several pieces."""
    try:
        with open_binary(path) as f:
            yield from _read_pieces(
                path, f, encoding, on_bad_line, counts, done
            )
    except GZIP_ERRORS as error:
        raise _damaged(path, error) from None


def _damaged(path, error):
    return TextFileError(
        f"{damaged_gzip(path, error)}. Re-create or re-download it, or "
        "decompress it and pass the plain text file."
    )


def _read_pieces(path, f, encoding, on_bad_line, counts, done):
    raw_file = getattr(f, "fileobj", f)
    number, bad, ends, position, carry = 1, False, True, 0, ""
    decoder = _decoder(encoding)
    while piece := f.readline(PIECE_BYTES):
        if number == 1 and piece.startswith(UTF8_BOM):
            piece = piece[len(UTF8_BOM) :]
        ends = piece.endswith(b"\n")
        text, bad = _decoded(
            decoder, piece, ends, bad, path, number, on_bad_line
        )
        text, carry = _at_a_space(carry + text, ends)
        if not bad:
            yield number, _normal(text, counts), ends
        if ends:
            _line_read(counts, path, number, bad)
            number, bad, decoder = number + 1, False, _decoder(encoding)
            if done is not None and raw_file.tell() != position:
                position = raw_file.tell()
                done(position)
    if not ends:  # a last line without a line break
        text, bad = _decoded(decoder, b"", True, bad, path, number, on_bad_line)
        if not bad:
            yield number, _normal(carry + text, counts), True
        _line_read(counts, path, number, bad)


def _at_a_space(text, ends):
    """`(piece, carry)`: a piece of a line that goes on is cut after its
    last whitespace, so that no word is cut in two (a piece without any
    is no text of words, and is cut where it ends)."""
    if ends:
        return text, ""
    cut = max(text.rfind(" "), text.rfind("\t"))
    if cut <= 0:
        return text, ""
    return text[:cut], text[cut:]


def _decoded(decoder, piece, final, bad, path, number, on_bad_line):
    """`(text, bad)`: `piece` decoded, or `""` once its line is bad."""
    if bad:
        return "", True
    try:
        return decoder.decode(piece, final=final), False
    except UnicodeDecodeError as error:
        if on_bad_line == "error":
            raise _not_decoded(path, number, error) from None
        return "", True


def _line_read(counts, path, number, bad):
    counts.lines += 1
    if bad:
        counts.skipped.append((path, number))


def _decoder(encoding):
    return codecs.getincrementaldecoder(encoding)()


def check_stop_at(pattern):
    """`pattern` (a regular expression, or None) compiled."""
    if pattern is None:
        return None
    (pattern,) = check_strings([pattern], "stop_at")
    try:
        return re.compile(pattern)
    except re.error as error:
        raise KerasElmoError(
            f"`stop_at` is not a regular expression Python reads ({error}); "
            "e.g. '^End of the Project Gutenberg'.",
            "stop_at",
            received=pattern,
        ) from None


def check_encodings(encodings):
    """`encodings` (a list, or one string of names joined by commas) as a
    tuple of known codec names."""
    if isinstance(encodings, str):
        encodings = encodings.split(",")
    names = tuple(name.strip() for name in check_strings(encodings, "encoding"))
    for name in names:
        try:
            codecs.getincrementaldecoder(name)
        except (LookupError, ValueError):
            raise KerasElmoError(
                "`encoding` must name text encodings Python knows, e.g. "
                "'utf-8', 'latin-1' or 'utf-8,latin-1' (each file in the "
                "first that decodes all of it).",
                "encoding",
                received=",".join(names),
            ) from None
    if not names:
        raise KerasElmoError("`encoding` names no encoding.", "encoding")
    return names


def _encoding_of(path, encodings):
    """The first of `encodings` that decodes all of `path`."""
    if len(encodings) == 1:
        return encodings[0]
    for encoding in encodings[:-1]:
        if _decodes(path, encoding):
            return encoding
    return encodings[-1]


def _decodes(path, encoding):
    decoder = _decoder(encoding)
    try:
        with open_binary(path) as f:
            while block := f.read(PIECE_BYTES):
                decoder.decode(block)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    except GZIP_ERRORS as error:
        raise _damaged(path, error) from None
    return True


def _normal(text, counts):
    clean = normalize(text)
    if clean != text.strip():
        counts.changed += 1
    return clean


def _not_decoded(path, number, error):
    return TextFileError(
        f"{path}, line {number}: not valid {error.encoding} (byte "
        f"0x{error.object[error.start]:02x}). Pass the file's `encoding` "
        "(e.g. 'latin-1', or 'utf-8,latin-1': each file in the first that "
        "decodes all of it), or `on_bad_line` 'skip' to leave such lines "
        "out (they are counted in the summary).",
        "encoding",
    )
