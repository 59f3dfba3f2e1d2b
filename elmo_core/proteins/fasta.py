"""Reading protein FASTA files: one record a protein, one residue a token.

`read_fasta` streams the records of a file (`.gz` allowed, opened and
checked as `elmo_core.text.lines` opens text), parsed by Biopython's
`SimpleFastaParser` (the `proteins` extra) over a bounded line reader:
a line longer than `text_lines.MAX_LINE_BYTES` is never held whole, and a
record's lines stop being kept once it has more than `max_residues`
residues, so memory holds one record at most, whatever the file.

Each record is normalised (upper case, whitespace removed, one `*` stop
at the end dropped) and checked; a record that cannot be embedded keeps
its header line number and carries a `reason` (`elmo_core.text.
bad_lines`) and a `detail` in words, for the caller to stop or to list
it. What is no FASTA at all (text before the first `>`, no record, a
damaged `.gz`) raises `TextFileError` naming the file and line.

The id of a record is the first word of its header (UniProt's
`sp|P69905|HBA_HUMAN`, UniRef's `UniRef50_Q6GZX4`); `sequence_hash` is the
md5 of the sequence, as in bio_embeddings' mapping file.
"""

import collections
import hashlib
import os

from elmo_core.errors import KerasElmoError
from elmo_core.errors import TextFileError
from elmo_core.errors import check_integer
from elmo_core.errors.blame import about
from elmo_core.files.paths import check_path
from elmo_core.text import lines as text_lines
from elmo_core.text.bad_lines import BAD_ID
from elmo_core.text.bad_lines import BAD_RESIDUE
from elmo_core.text.bad_lines import EMPTY
from elmo_core.text.bad_lines import NOT_UTF8
from elmo_core.text.bad_lines import TOO_LONG

# The file suffixes read as FASTA (before a `.gz`).
FASTA_SUFFIXES = (".fasta", ".fa", ".faa", ".fas")
INPUT_FORMATS = ("lines", "fasta")
# The 20 standard amino acids and the IUPAC extras UniRef50 (SeqVec's
# training set) holds: B (D or N), Z (E or Q), X (any), U (selenocysteine),
# O (pyrrolysine).
RESIDUES = frozenset("ACDEFGHIKLMNPQRSTVWY" + "BZXUO")
# Longer records are bad (too_long): the char CNN of an original-size
# biLM takes memory in proportion to the length (under 4 GB at 5,000
# residues), and UniProt has few proteins over 10,000 residues.
DEFAULT_MAX_RESIDUES = 10_000
EXTRA = "proteins"


class FastaRecord(
    collections.namedtuple(
        "FastaRecord", "line id sequence reason detail", defaults=(None, None)
    )
):
    """One record: `line` (its header's, from 1), `id`, the normalised
    `sequence`; for a record that cannot be embedded, `reason` (one of
    `elmo_core.text.bad_lines.BAD_LINE_REASONS`) and `detail`."""


def is_fasta(path):
    """Whether `path` is named as a FASTA file (`.fasta`, `.fa`, `.faa`,
    `.fas`, each also `.gz`)."""
    name = os.fspath(path).lower()
    if name.endswith(text_lines.GZIP_SUFFIX):
        name = name[: -len(text_lines.GZIP_SUFFIX)]
    return name.endswith(FASTA_SUFFIXES)


def input_format_of(paths, input_format=None, argument="input_format"):
    """`input_format` checked, or by the suffix of `paths` when None: all
    FASTA is `"fasta"`, none `"lines"`, a mix an error."""
    if input_format is not None:
        if input_format not in INPUT_FORMATS:
            raise KerasElmoError(
                f"`{argument}` must be one of {INPUT_FORMATS}.",
                argument,
                received=input_format,
            )
        return input_format
    kinds = {is_fasta(path) for path in paths}
    if len(kinds) > 1:
        raise KerasElmoError(
            "The inputs mix FASTA files (by suffix: "
            f"{', '.join(FASTA_SUFFIXES)}) and text files; embed them in two "
            f"runs, or give `{argument}`.",
            argument,
            received=input_format,
        )
    return "fasta" if kinds == {True} else "lines"


def sequence_hash(sequence):
    """The md5 of a sequence (hex), as bio_embeddings keyed it."""
    return hashlib.md5(sequence.encode("ascii")).hexdigest()


def simple_fasta_parser():
    """Biopython's `SimpleFastaParser`, or an error naming the extra."""
    try:
        from Bio.SeqIO.FastaIO import SimpleFastaParser
    except ImportError:
        raise KerasElmoError(
            "Reading FASTA files needs Biopython: pip install "
            f"'keras-elmo[{EXTRA}]' (biopython)."
        ) from None
    return SimpleFastaParser


def read_fasta(path, max_residues=DEFAULT_MAX_RESIDUES):
    """Yields a `FastaRecord` for each record of the FASTA file `path`
    (`.gz` allowed); see the module docstring.

    Raises:
        TextFileError: the file is missing, damaged, or not FASTA (text
            before the first `>`, no record), naming the file and line.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "two.fasta")
    >>> with open(path, "w") as f:
    ...     _ = f.write(">P1 first protein\\nmkv\\nLA*\\n>P2\\nGG\\n")
    >>> [(r.id, r.sequence) for r in elmo_core.proteins.read_fasta(path)]
    [('P1', 'MKVLA'), ('P2', 'GG')]
    """
    max_residues = check_integer(max_residues, "max_residues", minimum=1)
    path = check_path(path, "path")
    parser = simple_fasta_parser()
    try:
        with about("path"), text_lines.open_binary(path) as f:
            yield from fasta_records(f, path, max_residues, parser)
    except text_lines.GZIP_ERRORS as error:
        raise TextFileError(
            f"{text_lines.damaged_gzip(path, error)}. Re-create or re-download "
            "it, or decompress it and pass the plain FASTA file."
        ) from None


class _Start:
    """What the line reader learnt of a record before the parser yields
    it: its header line, its residue count, its first problem."""

    def __init__(self, line):
        self.line = line
        self.residues = 0
        self.problem = None


def fasta_records(f, path, max_residues=DEFAULT_MAX_RESIDUES, parser=None):
    """`read_fasta` of the open binary file `f` (decompressed), named
    `path` in messages."""
    parser = parser or simple_fasta_parser()
    starts = collections.deque()
    count = 0
    for title, sequence in parser(
        _bounded_lines(f, path, max_residues, starts)
    ):
        count += 1
        yield _record(starts.popleft(), title, sequence, max_residues)
    if count == 0:
        raise TextFileError(
            f"{path} holds no FASTA record (no line starts with '>'). A FASTA "
            "file is records of a '>ID description' header line and the "
            "sequence on the lines below; for one sentence a line, give "
            "`input_format` 'lines'.",
            "input_format",
        )


def _bounded_lines(f, path, max_residues, starts):
    """The lines of `f` as `SimpleFastaParser` reads them, each ending
    with a newline, leaving out what no record keeps: the lines of a
    record past its problem (too long, not UTF-8)."""
    current = None
    for number, raw in text_lines.numbered_lines(f):
        if raw is not None and raw.startswith(b">"):
            current = _Start(number)
            starts.append(current)
            try:
                header = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                current.problem = (NOT_UTF8, _not_utf8(number, raw, error))
                header = ">"
            yield header + "\n"
            continue
        if current is None:
            if raw is None or raw.strip():
                raise TextFileError(
                    f"{path}, line {number}: text before the first '>' "
                    "header; a FASTA file starts with a '>ID description' "
                    "line. Remove what comes before it, or, for one "
                    "sentence a line, give `input_format` 'lines'.",
                    "input_format",
                )
            continue
        if current.problem is not None:
            continue
        if raw is None:
            current.problem = (TOO_LONG, _too_long(number, max_residues))
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            current.problem = (NOT_UTF8, _not_utf8(number, raw, error))
            continue
        current.residues += len("".join(line.split()))
        if current.residues > max_residues + 1:  # + 1: a stop '*'
            current.problem = (TOO_LONG, _too_long(number, max_residues))
            continue
        yield line + "\n"


def _not_utf8(number, raw, error):
    return (
        f"line {number} is not valid UTF-8 (byte 0x{raw[error.start]:02x} at "
        f"byte offset {error.start})"
    )


def _too_long(number, max_residues):
    return (
        f"more than {max_residues:,} residues by line {number} (`max_residues`)"
    )


def _record(start, title, sequence, max_residues):
    words = title.split()
    record_id = words[0] if words else ""
    if start.problem is not None:
        return FastaRecord(start.line, record_id, "", *start.problem)
    if not record_id:
        return FastaRecord(
            start.line, "", "", BAD_ID, "the header has no id (no word after "
            "'>')"
        )  # fmt: skip
    sequence = "".join(sequence.split()).upper()
    if sequence.endswith("*"):  # a stop codon's mark, not a residue
        sequence = sequence[:-1]
    if not sequence:
        return FastaRecord(
            start.line, record_id, "", EMPTY, "the record has no residues"
        )
    if len(sequence) > max_residues:
        return FastaRecord(
            start.line,
            record_id,
            "",
            TOO_LONG,
            f"{len(sequence):,} residues; at most {max_residues:,} are "
            "embedded (`max_residues`)",
        )
    for position, residue in enumerate(sequence, start=1):
        if residue not in RESIDUES:
            detail = (
                f"residue {position} is {residue!r}, not one of the amino "
                f"acids {''.join(sorted(RESIDUES))}"
            )
            return FastaRecord(start.line, record_id, "", BAD_RESIDUE, detail)
    return FastaRecord(start.line, record_id, sequence)
