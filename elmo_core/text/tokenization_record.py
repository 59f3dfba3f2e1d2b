"""Which tokenisation a corpus, and a biLM trained on it, had.

`keras-elmo prepare` writes `prepare.json` beside the corpus it makes;
`keras-elmo train` reads it beside its training files
(`corpus_tokenization`) and records it in the run folder as
`tokenization.json` (`write_record`), which `export-weights` copies to
the export folder. `embed` reads it there (`recorded_tokenization`) to
warn when raw sentences are tokenised another way than the biLM's
corpus (`differs`).

Every record is untrusted: one of more than `MAX_RECORD_BYTES`, or one
that is not JSON of a known tokenisation and a language code, counts as
none (the tokenisation is unknown, as for a corpus made by hand).
"""

import json
import os

from elmo_core.files import atomic_output
from elmo_core.text.tokenizers import TOKENIZATIONS

PREPARE_RECORD = "prepare.json"
TOKENIZATION_FILE = "tokenization.json"
MAX_RECORD_BYTES = 1 << 20
_MAX_LANGUAGE = 16


def read_record(path):
    """`{"tokenization": str, "language": str}` from the JSON file `path`
    (a `prepare.json` or a `tokenization.json`), or None."""
    try:
        if os.path.getsize(path) > MAX_RECORD_BYTES:
            return None
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict):
        return None
    name, language = value.get("tokenization"), value.get("language")
    if name not in TOKENIZATIONS or not isinstance(language, str):
        return None
    if not 0 < len(language) <= _MAX_LANGUAGE:
        return None
    return {"tokenization": name, "language": language}


def corpus_tokenization(files):
    """The tokenisation of the corpus `files`: the one the `prepare.json`
    beside each of them records, when all do and agree; else None."""
    records = {
        json.dumps(read_record(os.path.join(folder, PREPARE_RECORD)))
        for folder in {os.path.dirname(os.path.abspath(f)) for f in files}
    }
    if len(records) != 1:
        return None
    return json.loads(records.pop())


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
    export folder, or a file in one), or None."""
    if not isinstance(model, str) or not model:
        return None
    folder = model if os.path.isdir(model) else os.path.dirname(model)
    return read_record(os.path.join(folder, TOKENIZATION_FILE))


def differs(recorded, tokenize, language):
    """Whether raw sentences tokenised by `tokenize` (for `language`) go
    into a biLM whose corpus was tokenised as `recorded` another way.
    `whitespace` reads sentences as they are (tokenised before), so it
    never differs; nor does an unknown record (None)."""
    wanted = {"tokenization": tokenize, "language": language}
    return not (
        recorded is None or tokenize == "whitespace" or recorded == wanted
    )
