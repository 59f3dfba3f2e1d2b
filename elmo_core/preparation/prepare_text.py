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
  `keras-elmo train` records with the biLM it trains, and the proof of
  each file it wrote (`outputs`: size and SHA-256). It is what makes a
  folder a prepare run's: a rerun replaces only the files it proves, and
  `train` believes its tokenisation only of them; a file of these names
  that it does not prove (a user's own `prepare.json`, a corpus copied
  in) is refused, never replaced.

Each document's sentences are kept on disk until it ends (the held-out
draw needs its length), so memory stays bounded whatever the size of a
file; the output files are written to temporary names and renamed when
all are complete. The gzip files carry no name or time, so the same input
and settings give the same bytes.
"""

import contextlib
import hashlib
import itertools
import os
import tempfile

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_flag
from elmo_core.errors import check_fraction
from elmo_core.errors import check_integer
from elmo_core.errors import check_strings
from elmo_core.errors import check_verbose
from elmo_core.errors.blame import blame
from elmo_core.preparation.documents import DEFAULT_DOCUMENTS
from elmo_core.preparation.documents import DOCUMENTS
from elmo_core.preparation.documents import LineCounts
from elmo_core.preparation.documents import check_encodings
from elmo_core.preparation.documents import check_stop_at
from elmo_core.preparation.documents import paragraphs
from elmo_core.preparation.output_folder import HELD_OUT_FILE  # noqa: F401
from elmo_core.preparation.output_folder import OUTPUT_FILES  # noqa: F401
from elmo_core.preparation.output_folder import RECORD_FILE  # noqa: F401
from elmo_core.preparation.output_folder import TRAIN_FILE  # noqa: F401
from elmo_core.preparation.output_folder import Outputs
from elmo_core.preparation.output_folder import check_output
from elmo_core.progress import Progress
from elmo_core.text.lines import check_on_bad_line
from elmo_core.text.lines import check_unchanged
from elmo_core.text.lines import file_version
from elmo_core.text.patterns import resolve_files
from elmo_core.text.tokenizers import DEFAULT_LANGUAGE
from elmo_core.text.tokenizers import DEFAULT_PREPARE_TOKENIZATION
from elmo_core.text.tokenizers import tokenizer

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
            (which are replaced: its `prepare.json` proves them). Other
            files in it are left alone.
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
        The record written to `prepare.json` (a dict: the summary, the
        settings, the tokenisation and the proofs of the files).

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
    check_output(output, files)
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
    with Outputs(output, settings["held_out"] > 0) as out:
        _prepare_files(files, words, settings, out, summary, progress)
        record = summary.record()
        _check_result(record, settings, summary)
        record = out.record(record)
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
            lines=not words.splits_sentences,
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


def _check_result(record, settings, summary):
    """Refuses a corpus without a training part, or without the held-out
    part asked for, saying what would give one."""
    if record["train"]["sentences"] == 0:
        if record["held_out"]["sentences"] == 0:
            raise KerasElmoError(_no_sentence(summary), "inputs")
        raise KerasElmoError(
            "Every document was held out, so no sentence went to the "
            f"training part ({_count(record['documents'], 'document')}, "
            f"`held_out` {settings['held_out']}). Pass a smaller "
            "`held_out`.",
            "held_out",
            received=settings["held_out"],
        )
    if not settings["held_out"] or record["held_out"]["sentences"]:
        return
    tail = (
        "Pass `held_out` 0 (no held-out part), or more text."
        if summary.most_sentences < 2
        else "Pass `held_out_by` 'tail' (the last sentences of every "
        "document), or `held_out` 0."
    )
    if settings["held_out_by"] == "tail":
        raise KerasElmoError(
            f"No sentence was held out: no document has two sentences. {tail}",
            "held_out",
            received=settings["held_out"],
        )
    raise KerasElmoError(
        "No document was drawn for the held-out part "
        f"({_count(record['documents'], 'document')}, `held_out` "
        f"{settings['held_out']}): too few to hold out whole ones. {tail}",
        "held_out_by",
        received=settings["held_out_by"],
    )


def _named(files):
    """The input files, in words: each name, for up to three."""
    if len(files) == 1:
        return files[0]
    if len(files) <= 3:
        return f"{', '.join(files[:-1])} and {files[-1]}"
    return f"the {len(files):,} input files ({', '.join(files[:3])}, ...)"


def _no_sentence(summary):
    """The message of inputs that hold no sentence: which, and why."""
    files = summary.files
    why = f"{_count(summary.lines, 'line')} read"
    if summary.lines:
        why += ", each empty or blank once normalised"
    if summary.stopped:
        why += (
            f", and `stop_at` {summary.settings['stop_at'].pattern!r} left "
            f"out the rest of {_count(summary.stopped, 'file')} from the "
            "first line it found"
        )
    return (
        f"{_named(files)} {_holds(files)} no sentence: {why}. Pass text files."
    )


def _holds(files):
    return "holds" if len(files) == 1 else "hold"


def _count(number, word):
    return f"{number:,} {word}{'' if number == 1 else 's'}"


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
        self.most_sentences = 0  # of a document
        self.lines = self.changed = 0
        self.skipped = 0
        self.stopped = 0  # files that `stop_at` cut
        self.skipped_lines = []
        self.longest = {"tokens": 0, "file": None}
        self.digests = set()

    def document(self, count, kept):
        self.documents += 1
        self.most_sentences = max(self.most_sentences, count)
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
        self.stopped += counts.stopped
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


def _mebibytes(count):
    return f"{count / 2**20:,.1f} MiB"
