"""Raw text files -> a corpus of one tokenised sentence a line.

`prepare` reads the files as documents of paragraphs
(`elmo_core.preparation.documents`, normalised), splits each paragraph
into tokenised sentences (`elmo_core.text.tokenizers`), and writes, in
the output folder:

- `train.txt.gz`: the training part, one sentence a line, tokens joined
  by single spaces (what `keras-elmo train` and `embed` read);
- `valid.txt.gz`: the held-out part (unless `held_out=0`), drawn by
  document: whole documents (`held_out_by="document"`, a seeded draw of
  each document's name), or the last sentences of every document
  (`"tail"`, for a corpus of a few long documents such as books);
  `"auto"` (the default) draws documents, but for fewer than 20 files
  each a document, where it takes the tail;
- `prepare.json`: the summary, the settings and the tokenisation, which
  `keras-elmo train` records with the biLM it trains.

Each document's sentences are kept on disk until it ends (the held-out
draw needs its length), so memory stays bounded whatever the size of a
file; the output files are written to temporary names and renamed when
all are complete. The gzip files carry no name or time, so the same input
and settings give the same bytes.
"""

import contextlib
import gzip
import hashlib
import io
import itertools
import json
import os
import tempfile

from elmo_core.errors import KerasElmoError
from elmo_core.errors import OutputPathError
from elmo_core.errors import check_choice
from elmo_core.errors import check_flag
from elmo_core.errors import check_fraction
from elmo_core.errors import check_integer
from elmo_core.errors import check_strings
from elmo_core.errors import check_verbose
from elmo_core.errors.blame import blame
from elmo_core.files import atomic_output
from elmo_core.files import check_output_directory
from elmo_core.files import check_output_file
from elmo_core.preparation.documents import DEFAULT_DOCUMENTS
from elmo_core.preparation.documents import DOCUMENTS
from elmo_core.preparation.documents import LineCounts
from elmo_core.preparation.documents import check_encodings
from elmo_core.preparation.documents import check_stop_at
from elmo_core.preparation.documents import paragraphs
from elmo_core.progress import Progress
from elmo_core.text.lines import check_on_bad_line
from elmo_core.text.lines import check_unchanged
from elmo_core.text.lines import file_version
from elmo_core.text.patterns import resolve_files
from elmo_core.text.tokenization_record import PREPARE_RECORD
from elmo_core.text.tokenizers import DEFAULT_LANGUAGE
from elmo_core.text.tokenizers import DEFAULT_PREPARE_TOKENIZATION
from elmo_core.text.tokenizers import tokenizer

TRAIN_FILE = "train.txt.gz"
HELD_OUT_FILE = "valid.txt.gz"
RECORD_FILE = PREPARE_RECORD
OUTPUT_FILES = (TRAIN_FILE, HELD_OUT_FILE, RECORD_FILE)
HELD_OUT_BY = ("auto", "document", "tail")
DEFAULT_HELD_OUT = 0.05
DEFAULT_HELD_OUT_BY = "auto"
# `auto` draws whole documents from this many files on (or documents
# that are blocks or lines), else holds out the tail of each file: a draw
# of 5 % from a few books would often draw none.
MIN_FILES_TO_DRAW = 20
# The lines left out as not UTF-8 that the record names (it counts all).
SKIPPED_SHOWN = 20


def prepare(
    inputs,
    output,
    tokenize=DEFAULT_PREPARE_TOKENIZATION,
    language=DEFAULT_LANGUAGE,
    documents=DEFAULT_DOCUMENTS,
    held_out=DEFAULT_HELD_OUT,
    held_out_by=DEFAULT_HELD_OUT_BY,
    deduplicate=False,
    seed=0,
    encoding="utf-8",
    stop_at=None,
    on_bad_line="error",
    verbose=1,
):
    """Prepares raw text files as a training corpus (see the module).

    Args:
        inputs: str or list of str. Text files or globs (UTF-8, `.gz`
            allowed).
        output: str. The folder to write; new, or one that holds no
            file of `OUTPUT_FILES` but those a `prepare` wrote before
            (which are replaced). Other files in it are left alone.
        tokenize: str. The tokenisation, one of
            `elmo_core.text.tokenizers.TOKENIZATIONS`.
        language: str. The language code of the text, e.g. `"en"`.
        documents: one of `DOCUMENTS`: what a document is.
        held_out: float in [0, 1). The share of the sentences held out.
        held_out_by: one of `HELD_OUT_BY` (see the module).
        deduplicate: bool. Keep each distinct sentence once (where it
            first appears).
        seed: int. The seed of the draw of held-out documents.
        encoding: str or list of str. The text encoding of the files, or
            several tried in order, each file read in the first that
            decodes all of it (`"utf-8,latin-1"`).
        stop_at: str or None. A regular expression: in each file, the
            first line in which it is found, and all after it, are left
            out (a licence footer, say).
        on_bad_line: `"error"` or `"skip"`: a line the encoding does not
            decode.
        verbose: 0 (silent) or 1 (progress lines).

    Returns:
        The summary (a dict, also in `prepare.json`).

    Example:

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> summary = keras_elmo.prepare(
    ...     "tests/fixtures/bilm-tf/train/data.txt", folder,
    ...     held_out_by="tail", verbose=0)
    >>> summary["train"]["sentences"], summary["held_out"]["sentences"]
    (4, 1)
    >>> sorted(os.listdir(folder))
    ['prepare.json', 'train.txt.gz', 'valid.txt.gz']
    """
    settings = _check_settings(
        documents, held_out, held_out_by, deduplicate, seed, on_bad_line
    )
    verbose = check_verbose(verbose)
    settings["encoding"] = check_encodings(encoding)
    settings["stop_at"] = check_stop_at(stop_at)
    files = _input_files(inputs)
    _check_output(output, files)
    settings["held_out_by"] = _held_out_by(settings, files)
    words = tokenizer(tokenize, language)
    summary = _Summary(files, words, settings)
    progress = Progress(
        sum(os.path.getsize(path) for path in files),
        "byte",
        verbose,
        label="prepare",
        amount=_mebibytes,
    )
    with _Outputs(output, settings["held_out"] > 0) as out:
        _prepare_files(files, words, settings, out, summary, progress)
        record = summary.record()
        _check_result(record, settings)
        out.record(record)
    return record


def _check_settings(
    documents, held_out, held_out_by, deduplicate, seed, on_bad_line
):
    return dict(
        documents=check_choice(documents, "documents", choices=DOCUMENTS),
        held_out=check_fraction(held_out, "held_out"),
        held_out_by=check_choice(
            held_out_by, "held_out_by", choices=HELD_OUT_BY
        ),
        deduplicate=check_flag(deduplicate, "deduplicate"),
        seed=check_integer(seed, "seed", minimum=0),
        on_bad_line=check_on_bad_line(on_bad_line),
    )


def _input_files(inputs):
    """The files `inputs` (a path or glob, or a list of them) names."""
    patterns = [inputs] if isinstance(inputs, (str, os.PathLike)) else inputs
    if isinstance(patterns, list):
        patterns = [
            os.fspath(p) if isinstance(p, os.PathLike) else p for p in patterns
        ]
    patterns = check_strings(patterns, "inputs")
    if not patterns:
        raise KerasElmoError(
            "`inputs` names no file; pass a raw text file or a glob such as "
            "'books/*.txt'.",
            "inputs",
            received=inputs,
        )
    if "-" in patterns and not os.path.exists("-"):
        raise KerasElmoError(
            "`inputs` '-' would be standard input; prepare reads files "
            "(each one is a document, read twice when it is not UTF-8). "
            "Save the text to a file first, e.g. `cat ... > raw.txt`.",
            "inputs",
            received=inputs,
        )
    try:
        return resolve_files(patterns)
    except KerasElmoError as error:
        blame(error, "inputs")
        raise


def _held_out_by(settings, files):
    """`held_out_by`, `auto` resolved for these `files`."""
    if settings["held_out_by"] != "auto":
        return settings["held_out_by"]
    few = settings["documents"] == "file" and len(files) < MIN_FILES_TO_DRAW
    return "tail" if few else "document"


def _check_output(output, files):
    """`output` may be new, or hold anything but a file it would write
    that no `prepare` wrote (no `prepare.json` beside it)."""
    check_output_directory(output, argument="output")
    for name in OUTPUT_FILES:
        check_output_file(os.path.join(output, name), files, "output")
    ours = os.path.isfile(os.path.join(output, RECORD_FILE))
    theirs = [
        name
        for name in OUTPUT_FILES
        if os.path.lexists(os.path.join(output, name))
    ]
    if theirs and not ours:
        raise OutputPathError(
            f"`output` already holds {theirs[0]}, which no prepare run wrote "
            f"(there is no {RECORD_FILE} beside it); it is left alone. "
            "Choose a new folder, or move that file away.",
            "output",
            received=output,
        )


def _prepare_files(files, words, settings, out, summary, progress):
    finished = 0
    for path in files:
        size, version = os.path.getsize(path), file_version(path)
        counts = LineCounts()
        read = paragraphs(
            path,
            settings["documents"],
            counts,
            settings["on_bad_line"],
            # Until it ends, a file is short of its end (gzip reads ahead).
            done=lambda position: progress.update(
                finished + min(position, size - 1)
            ),
            encodings=settings["encoding"],
            stop_at=settings["stop_at"],
        )
        found = 0
        for document, paragraphs_of in itertools.groupby(read, _document_of):
            name = f"{os.path.basename(path)}:{document}"
            with _spooled(words, paragraphs_of) as (spool, count):
                _route(spool, count, name, settings, out, summary, path)
            found += 1
        if not found and settings["documents"] == "file":
            summary.document(0, 0)  # a file is a document, even empty
        # Nothing of a file that changed while it was read is kept.
        check_unchanged(path, version, counts.lines, counts.lines)
        summary.lines_read(counts)
        finished += size
        progress.update(finished)


def _document_of(paragraph):
    return paragraph.document


@contextlib.contextmanager
def _spooled(words, paragraphs_of):
    """A temporary file of the document's sentences (one a line, tokens
    joined by spaces), rewound, and their count."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        count = 0
        for paragraph in paragraphs_of:
            for tokens in words.sentences(paragraph.text):
                spool.write(" ".join(tokens) + "\n")
                count += 1
        spool.seek(0)
        yield spool, count


def _route(spool, count, name, settings, out, summary, path):
    """Writes the document's `count` sentences to the training or the
    held-out part."""
    held_out = settings["held_out"]
    if settings["held_out_by"] == "tail":
        kept = count - _tail(count, held_out)
    else:
        kept = 0 if _drawn(name, settings["seed"]) < held_out else count
    summary.document(count, kept)
    for number, line in enumerate(spool):
        sentence = line.rstrip("\n")
        part = "train" if number < kept else "held_out"
        if settings["deduplicate"] and summary.seen(sentence):
            continue
        summary.sentence(sentence, part, path)
        out.write(part, line)


def _tail(count, held_out):
    """The sentences held out at the end of a document of `count`: the
    share `held_out`, at least one of a document of two or more."""
    if not held_out or count < 2:
        return 0
    return max(1, round(count * held_out))


def _drawn(name, seed):
    """A number in [0, 1) drawn from the document's name and the seed."""
    digest = hashlib.blake2b(f"{seed}\0{name}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big") / 2.0**64


def _check_result(record, settings):
    if record["train"]["sentences"] == 0:
        raise KerasElmoError(
            "No sentence went to the training part: the input holds no "
            "text, or every document was held out. Check the input files, "
            "or pass a smaller `held_out`.",
            "inputs",
        )
    if settings["held_out"] and record["held_out"]["sentences"] == 0:
        if settings["held_out_by"] == "tail":
            raise KerasElmoError(
                "No sentence was held out: no document has two sentences. "
                "Pass `held_out` 0, or more text.",
                "held_out",
                received=settings["held_out"],
            )
        raise KerasElmoError(
            f"No document was drawn for the held-out part "
            f"({record['documents']} documents, held_out="
            f"{settings['held_out']}): there are too few documents to hold "
            "out whole ones. Pass `held_out_by` 'tail' (the last sentences "
            "of every document), or `held_out` 0.",
            "held_out_by",
            received=settings["held_out_by"],
        )


class _Summary:
    """The counts `prepare.json` holds."""

    def __init__(self, files, words, settings):
        self.files = files
        self.words = words
        self.settings = settings
        self.parts = {
            part: {"documents": 0, "sentences": 0, "tokens": 0}
            for part in ("train", "held_out")
        }
        self.documents = self.empty = self.duplicates = 0
        self.lines = self.changed = 0
        self.skipped = 0
        self.skipped_lines = []
        self.longest = {"tokens": 0, "file": None}
        self.digests = set()

    def document(self, count, kept):
        self.documents += 1
        self.empty += count == 0
        if kept:
            self.parts["train"]["documents"] += 1
        if kept < count:
            self.parts["held_out"]["documents"] += 1

    def seen(self, sentence):
        digest = hashlib.blake2b(sentence.encode(), digest_size=16).digest()
        if digest in self.digests:
            self.duplicates += 1
            return True
        self.digests.add(digest)
        return False

    def sentence(self, sentence, part, path):
        tokens = sentence.count(" ") + 1
        self.parts[part]["sentences"] += 1
        self.parts[part]["tokens"] += tokens
        if tokens > self.longest["tokens"]:
            self.longest = {"tokens": tokens, "file": path}

    def lines_read(self, counts):
        self.lines += counts.lines
        self.changed += counts.changed
        self.skipped += len(counts.skipped)
        room = max(0, SKIPPED_SHOWN - len(self.skipped_lines))
        self.skipped_lines += [
            f"{path}:{n}" for path, n in counts.skipped[:room]
        ]

    def record(self):
        return {
            "files": len(self.files),
            "documents": self.documents,
            "empty_documents": self.empty,
            "lines_read": self.lines,
            "lines_changed": self.changed,
            "lines_skipped": self.skipped,
            "lines_skipped_first": self.skipped_lines,
            "duplicates_dropped": self.duplicates,
            "longest_sentence": self.longest,
            **self.parts,
            **self.words.record(),
            "settings": {
                **self.settings,
                "encoding": ",".join(self.settings["encoding"]),
                "stop_at": getattr(self.settings["stop_at"], "pattern", None),
            },
        }


class _Outputs:
    """The output files, written to temporary names and renamed together
    when the block succeeds (the record last)."""

    def __init__(self, folder, held_out):
        self.folder = folder
        self.held_out = held_out
        self.stack = contextlib.ExitStack()

    def __enter__(self):
        self.made = not os.path.isdir(self.folder)
        os.makedirs(self.folder, exist_ok=True)
        stack = self.stack.__enter__()
        self.record_path = stack.enter_context(
            atomic_output(self._path(RECORD_FILE))
        )
        self.files = {"train": self._gzip(stack, TRAIN_FILE)}
        self.files["held_out"] = (
            self._gzip(stack, HELD_OUT_FILE) if self.held_out else None
        )
        return self

    def __exit__(self, *error):
        self.stack.__exit__(*error)
        if error[0] is not None and self.made:
            with contextlib.suppress(OSError):  # left as it was: none
                os.rmdir(self.folder)
        stale = self._path(HELD_OUT_FILE)  # a previous run's, not this one's
        if error[0] is None and not self.held_out and os.path.exists(stale):
            os.remove(stale)

    def _path(self, name):
        return os.path.join(self.folder, name)

    def _gzip(self, stack, name):
        temporary = stack.enter_context(atomic_output(self._path(name)))
        raw = stack.enter_context(open(temporary, "wb"))
        packed = stack.enter_context(
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
        )
        return stack.enter_context(
            io.TextIOWrapper(packed, encoding="utf-8", newline="\n")
        )

    def write(self, part, line):
        self.files[part].write(line)

    def record(self, record):
        with open(self.record_path, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
            f.write("\n")


def _mebibytes(count):
    return f"{count / 2**20:,.1f} MiB"
