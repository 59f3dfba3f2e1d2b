"""The folder `prepare` writes, and who owns it.

`prepare` writes `train.txt.gz`, `valid.txt.gz` (unless nothing is held
out) and `prepare.json` into its output folder, each to a temporary name,
all renamed when all are complete (`Outputs`), the record last; the
record holds the proof of each corpus file (`elmo_core.files.proofs`:
size and SHA-256). `check_output` is the one rule for a folder a run is
to write: a file of these names is replaced only where the record beside
it is one of `keras-elmo prepare` and proves it; anything else (a user's
own `prepare.json`, a corpus copied in, a record copied from another
folder) is refused and left alone. Other files are never touched.
"""

import contextlib
import gzip
import io
import json
import os

from elmo_core.errors import OutputPathError
from elmo_core.files import atomic_output
from elmo_core.files import check_output_directory
from elmo_core.files import check_output_file
from elmo_core.files.proofs import proof
from elmo_core.text.tokenization_record import PREPARE_RECORD
from elmo_core.text.tokenization_record import PREPARE_WRITER
from elmo_core.text.tokenization_record import prepare_record
from elmo_core.text.tokenization_record import vouches_for

TRAIN_FILE = "train.txt.gz"
HELD_OUT_FILE = "valid.txt.gz"
RECORD_FILE = PREPARE_RECORD
OUTPUT_FILES = (TRAIN_FILE, HELD_OUT_FILE, RECORD_FILE)


def check_output(output, files):
    """`output` may be new, or hold anything but a file it would write
    that no `prepare` wrote: a `prepare.json` that is no record of
    `keras-elmo prepare`, or a corpus file that the record does not prove
    (by its size and SHA-256)."""
    check_output_directory(output, argument="output")
    for name in OUTPUT_FILES:
        check_output_file(os.path.join(output, name), files, "output")
    record = prepare_record(output) if os.path.isdir(output) else None
    for name in (RECORD_FILE, TRAIN_FILE, HELD_OUT_FILE):
        path = os.path.join(output, name)
        if not os.path.lexists(path):
            continue
        if name == RECORD_FILE and record is None:
            why = f"it is no record of {PREPARE_WRITER}"
        elif name != RECORD_FILE and record is None:
            why = f"no {RECORD_FILE} of {PREPARE_WRITER} is beside it"
        elif name != RECORD_FILE and not vouches_for(record, path):
            why = (
                f"the {RECORD_FILE} beside it does not prove it: its size "
                "or SHA-256 differs, so it changed since, or is another file"
            )
        else:
            continue
        raise OutputPathError(
            f"`output` already holds {name}, which no prepare run wrote "
            f"({why}); it is left alone. Choose a new folder, or move "
            "that file away.",
            "output",
            received=output,
        )


class Outputs:
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
        self.written = {}  # name -> (temporary path, raw file)
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
        self.written[name] = (temporary, raw)
        return stack.enter_context(
            io.TextIOWrapper(packed, encoding="utf-8", newline="\n")
        )

    def write(self, part, line):
        self.files[part].write(line)

    def record(self, record):
        """Closes the corpus files and writes `record` with their proofs
        (of the bytes that are renamed into place); returns it."""
        for text in self.files.values():
            if text is not None:
                text.close()  # the gzip stream ends: its trailer is out
        outputs = {}
        for name, (temporary, raw) in self.written.items():
            raw.flush()
            outputs[name] = proof(temporary)
        record = {"written_by": PREPARE_WRITER, **record, "outputs": outputs}
        with open(self.record_path, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
            f.write("\n")
        return record
