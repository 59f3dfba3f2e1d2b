"""Which tokenisation a corpus, and a biLM trained on it, had.

`keras-elmo prepare` writes `prepare.json` beside the corpus it makes,
with the `proof` (size and SHA-256, `elmo_core.files.proofs`) of each
file it wrote; `keras-elmo train` believes it of its training files only
where it proves them (`corpus_tokenization`: a `prepare.json` of a
user's own, or one copied beside other files, proves nothing), and
records the tokenisation in the run folder as `tokenization.json`
(`write_record`), which `export-weights` copies to the export folder.
The commands that read text with a biLM read it there
(`recorded_tokenization`) and say when they read their input otherwise
than its corpus was read (`reading_note`), `whitespace` included.

Every record is untrusted: one of more than `MAX_RECORD_BYTES`, or one
that is not JSON of a known tokenisation and a language code, counts as
none (the tokenisation is unknown, as for a corpus made by hand).
"""

import json
import os
import sys

from elmo_core.files import atomic_output
from elmo_core.files.proofs import proven
from elmo_core.files.proofs import read_json_object
from elmo_core.text.tokenizers import TOKENIZATIONS

PREPARE_RECORD = "prepare.json"
# What a `prepare.json` of `keras-elmo prepare` says wrote it.
PREPARE_WRITER = "keras-elmo prepare"
TOKENIZATION_FILE = "tokenization.json"
MAX_RECORD_BYTES = 1 << 20
_MAX_LANGUAGE = 16


def read_record(path):
    """`{"tokenization": str, "language": str}` from the JSON file `path`
    (a `prepare.json` or a `tokenization.json`), or None."""
    value = read_json_object(path, MAX_RECORD_BYTES)
    return None if value is None else tokenization_of(value)


def prepare_record(folder):
    """The `prepare.json` of `folder` when `keras-elmo prepare` wrote it
    (its writer and the proofs of its files), else None."""
    value = read_json_object(
        os.path.join(folder, PREPARE_RECORD), MAX_RECORD_BYTES
    )
    if value is None or value.get("written_by") != PREPARE_WRITER:
        return None
    if not isinstance(value.get("outputs"), dict):
        return None
    return value


def vouches_for(record, path):
    """Whether the `prepare_record` `record` proves the file `path` (one
    it wrote, unchanged since)."""
    outputs = (record or {}).get("outputs") or {}
    return proven(path, outputs.get(os.path.basename(path)))


def corpus_tokenization(files):
    """The tokenisation of the corpus `files`: the one the `prepare.json`
    beside each of them records, when each proves its file and all
    agree; else None."""
    records = set()
    for path in files:
        record = prepare_record(os.path.dirname(os.path.abspath(path)))
        if not vouches_for(record, path):
            return None
        records.add(json.dumps(tokenization_of(record)))
    if len(records) != 1:
        return None
    return json.loads(records.pop())


def tokenization_of(value):
    """The `{"tokenization", "language"}` of a parsed record (a dict), or
    None."""
    name, language = value.get("tokenization"), value.get("language")
    if name not in TOKENIZATIONS or not isinstance(language, str):
        return None
    if not 0 < len(language) <= _MAX_LANGUAGE:
        return None
    return {"tokenization": name, "language": language}


def write_record(folder, record):
    """Writes `record` (or nothing, for None) as the folder's
    `tokenization.json`."""
    if record is None:
        return
    with atomic_output(os.path.join(folder, TOKENIZATION_FILE)) as temporary:
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
            f.write("\n")


def recorded_tokenization(model):
    """The tokenisation recorded with the biLM source `model` (a run or
    export folder, or a file in one), or None (for a name or a URL, which
    no folder here holds)."""
    if not isinstance(model, (str, os.PathLike)) or not os.fspath(model):
        return None
    model = os.fspath(model)
    if os.path.isdir(model):
        folder = model
    elif os.path.isfile(model):
        folder = os.path.dirname(os.path.abspath(model))
    else:
        return None
    return read_record(os.path.join(folder, TOKENIZATION_FILE))


def _described(record):
    if record["tokenization"] == "whitespace":
        return "whitespace (each line one sentence, its tokens as written)"
    return f"{record['tokenization']} ({record['language']})"


def reading_note(recorded, tokenize, language):
    """A note when text read by `tokenize` (for `language`) goes into a
    biLM whose corpus was read as `recorded` another way, `whitespace`
    included (its rule has no language); None when they agree or the
    record is unknown (None)."""
    wanted = {"tokenization": tokenize, "language": language}
    if recorded is None or recorded == wanted:
        return None
    if tokenize == recorded["tokenization"] == "whitespace":
        return None
    return (
        f"note: this biLM's corpus was read by {_described(recorded)}, "
        f"the input is read by {_described(wanted)}. To read it as the "
        f"biLM learned, pass tokenize={recorded['tokenization']!r}, "
        f"language={recorded['language']!r} (--tokenize "
        f"{recorded['tokenization']} --language {recorded['language']})."
    )


def note_reading(model, tokenize, language, label, verbose=1):
    """Prints `reading_note` for the biLM source `model` to standard
    error (with `verbose`), each line headed by `label`."""
    note = reading_note(recorded_tokenization(model), tokenize, language)
    if note and verbose:
        print(f"{label}: {note}", file=sys.stderr, flush=True)
