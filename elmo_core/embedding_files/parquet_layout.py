"""The output of a corpus run: sharded Parquet files keyed by (file, line).

An output directory holds:

- `embeddings-SSSSS-of-NNNNN.parquet`: one row per embedded sentence,
  columns `file` (the input path, as matched), `line` (int64, from 1),
  `shape` (list of int32: `(num_layers + 1, n, 2 * projection_dim)` for
  all layers, `(n, 2 * projection_dim)` for top, average or a mix) and
  `embedding` (the array, flat, float32 or float16). Row order means
  nothing; the key does.
- `bad_lines-SSSSS-of-NNNNN.jsonl`: one JSON object per line that was not
  embedded: `{"file", "line", "reason"}` (`BAD_LINE_REASONS`).
- `summary.json`, written last: the counts, the settings and the list of
  shards. A directory without it is the leftover of a run that did not
  finish, and `read_embeddings` refuses it.
- `keras-elmo-corpus.json` (`OUTPUT_MARKER`), written first: says that a
  corpus run owns the directory, by its content, not its name: the
  directory it was written into (a local one's device and inode, a
  remote one's path) and the id of the claim (`run`), which the
  summary repeats. Only a directory holding a marker written there, and
  nothing but a run's files, is ever deleted to run again
  (`--overwrite`); a marker copied in from elsewhere, or a summary of
  another run, proves nothing.

A line that is not embedded is a bad line with one of `BAD_LINE_REASONS`;
`unreadable` marks where a file could not be read on (a truncated or
damaged `.gz`, a file that is not a regular file), its record carrying a
`detail` in words, and `summary.json` lists such files under
`unreadable_files`.

`read_embeddings` trusts nothing it reads: `summary.json` is parsed
within bounds and checked key by key, each shard must be one the summary
lists, a whole Parquet file with the columns above, and each row's
`shape` must fit its values; anything else is a `KerasElmoError` naming
the file (and the row).

Parquet because the readers a corpus of that size meets (pandas, pyarrow,
Spark, DuckDB, BigQuery, Dask, Ray Data) read it without TensorFlow, by
column (the keys without the vectors), compressed, with a schema. NumPy
and pyarrow only, imported when used; no engine.
"""

import json
import math
import os
import re

from elmo_core.errors import KerasElmoError
from elmo_core.errors.blame import about
from elmo_core.errors.shown import shown
from elmo_core.files.paths import check_input_directory
from elmo_core.formats.json_text import read_json
from elmo_core.text.bad_lines import BAD_LINE_REASONS
from elmo_core.text.bad_lines import EMPTY  # noqa: F401 (the layout names)
from elmo_core.text.bad_lines import NOT_UTF8  # noqa: F401
from elmo_core.text.bad_lines import TOO_LONG  # noqa: F401
from elmo_core.text.bad_lines import UNREADABLE  # noqa: F401

EMBEDDINGS_PREFIX = "embeddings"
EMBEDDINGS_SUFFIX = ".parquet"
BAD_LINES_PREFIX = "bad_lines"
BAD_LINES_SUFFIX = ".jsonl"
SUMMARY_FILE = "summary.json"
OUTPUT_MARKER = "keras-elmo-corpus.json"
FORMAT = "keras-elmo-corpus/1"
# A summary.json is a few KiB per thousand shards.
MAX_SUMMARY_BYTES = 64 << 20
# Shard names as the sinks write them.
_SHARD_NAME = re.compile(
    rf"({EMBEDDINGS_PREFIX}|{BAD_LINES_PREFIX})-\d{{5,}}-of-\d{{5,}}"
    rf"({re.escape(EMBEDDINGS_SUFFIX)}|{re.escape(BAD_LINES_SUFFIX)})"
)


def marker_text(run, directory):
    """The content of `OUTPUT_MARKER`: the id of the claim (`run`, a str)
    and the identity of the `directory` it is written into (a dict)."""
    return json.dumps(
        {
            "format": FORMAT,
            "written_by": "keras-elmo embed-corpus",
            "run": run,
            "directory": directory,
            "note": "A corpus run owns this directory: a run with "
            "`overwrite` deletes its files (and only while this file, "
            "written here, is here; a copy elsewhere proves nothing).",
        },
        indent=1,
    )


def read_marker(data, directory):
    """The id of the claim that the `OUTPUT_MARKER` content `data` (bytes)
    records, when it is one of this package written into the directory
    of identity `directory`; else None."""
    value = parse_json_object(data)
    if value is None or value.get("format") != FORMAT:
        return None
    run = value.get("run")
    if value.get("directory") != directory or not isinstance(run, str):
        return None
    return run or None


def summary_run(data):
    """The claim id a `summary.json` (bytes) records, or None."""
    value = parse_json_object(data)
    if value is None or value.get("format") != FORMAT:
        return None
    return value.get("run")


def parse_json_object(data):
    """The JSON object of `data` (bytes), or None."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def is_run_file(name):
    """Whether a name in an output directory is one a corpus run writes
    (the marker, the summary and its temporary, the shards, Beam's
    temporary folders)."""
    return (
        name in (OUTPUT_MARKER, SUMMARY_FILE, f"{SUMMARY_FILE}.partial")
        or name.startswith(("beam-temp-", f"{OUTPUT_MARKER}."))
        or _SHARD_NAME.fullmatch(name) is not None
    )


def parquet_schema(dtype):
    """The pyarrow schema of the embedding shards, for `dtype` values."""
    _pyarrow_parquet()
    import pyarrow as pa

    value = {"float32": pa.float32(), "float16": pa.float16()}[dtype]
    return pa.schema(
        [
            ("file", pa.string()),
            ("line", pa.int64()),
            ("shape", pa.list_(pa.int32())),
            ("embedding", pa.list_(value)),
        ]
    )


def protein_schema(dtype, protein_vectors):
    """The schema of a corpus run over FASTA: `parquet_schema`'s columns
    (`line`: the record's header line), then `id` and `sequence_hash`
    (md5), and with `protein_vectors` "both" a `per_protein` column
    (`embedding` holds the per-residue array); with "per-protein" alone,
    `embedding` holds the per-protein vector, shape `(2 * projection_dim,)`."""
    import pyarrow as pa

    schema = parquet_schema(dtype)
    schema = schema.append(pa.field("id", pa.string()))
    schema = schema.append(pa.field("sequence_hash", pa.string()))
    if protein_vectors == "both":
        schema = schema.append(
            pa.field("per_protein", schema.field("embedding").type)
        )
    return schema


def protein_record(key, vectors):
    """The Parquet row of one protein: `key` is `(file, line, id,
    sequence_hash, residues)`, `vectors` the embedder's dict of
    `per_residue` and / or `per_protein`."""
    file, line, record_id, digest, _ = key
    array = vectors.get("per_residue", vectors.get("per_protein"))
    record = embedding_record((file, line), array)
    record["id"] = record_id
    record["sequence_hash"] = digest
    if len(vectors) == 2:
        record["per_protein"] = vectors["per_protein"]
    return record


def embedding_record(key, array):
    """The Parquet row of one sentence: `key` is `(file, line)`."""
    return {
        "file": key[0],
        "line": key[1],
        "shape": list(array.shape),
        "embedding": array.reshape(-1),
    }


def bad_line_record(key, reason, detail=None):
    """The JSON line of one bad line (`detail`: words, for `UNREADABLE`)."""
    record = {"file": key[0], "line": key[1], "reason": reason}
    if detail is not None:
        record["detail"] = detail
    return json.dumps(record)


def summary(
    counts, settings, embedding_files, bad_line_files, unreadable=(), run=None
):
    """The `summary.json` text: `counts` {"sentences", "tokens", reason:
    lines}, `settings` as given, the shard names (base names), the
    files that could not be read to their end (`unreadable`: `(file,
    line, detail)` each) and the id of the directory's claim (`run`, the
    marker's)."""
    return json.dumps(
        {
            "format": FORMAT,
            "run": run,
            "sentences": counts.get("sentences", 0),
            "tokens": counts.get("tokens", 0),
            "bad_lines": {
                reason: counts.get(reason, 0) for reason in BAD_LINE_REASONS
            },
            "unreadable_files": [
                {"file": file, "line": line, "detail": detail}
                for file, line, detail in sorted(unreadable)
            ],
            "settings": settings,
            "embedding_files": sorted(embedding_files),
            "bad_line_files": sorted(bad_line_files),
        },
        indent=1,
    )


def read_summary(directory):
    """The parsed `summary.json` of a complete output directory, checked:
    its format, its counts and its shard names (see the module
    docstring)."""
    path = os.path.join(os.fspath(directory), SUMMARY_FILE)
    if not os.path.isfile(path):
        raise KerasElmoError(
            f"{directory} has no {SUMMARY_FILE}: it is not the output of a "
            "finished corpus run (a run writes it last). Run the corpus "
            "embedding again, over the old output, to redo it."
        )
    value = read_json(path, MAX_SUMMARY_BYTES, what="Corpus summary")
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise KerasElmoError(
            f"{path} is not a keras-elmo corpus summary (expected "
            f'"format": "{FORMAT}").'
        )
    for key in ("embedding_files", "bad_line_files"):
        value[key] = _shard_names(value.get(key), path, key)
    return value


def _shard_names(names, path, key):
    """The shard names a summary lists under `key`: a list of the names a
    run writes (never a path, never another file)."""
    if not isinstance(names, list):
        raise KerasElmoError(
            f"{path}: `{key}` must be a list of shard names; found "
            f"{type(names).__name__} {shown(names)}. The file is damaged: "
            "run the corpus embedding again."
        )
    for name in names:
        if not isinstance(name, str) or not _SHARD_NAME.fullmatch(name):
            raise KerasElmoError(
                f"{path}: `{key}` lists {shown(name)}, which is not the name "
                "of a shard a corpus run writes (e.g. "
                f"{EMBEDDINGS_PREFIX}-00000-of-00002{EMBEDDINGS_SUFFIX}). The "
                "file is damaged: run the corpus embedding again."
            )
    return names


def _pyarrow_parquet():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise KerasElmoError(
            "Reading the Parquet shards needs pyarrow: pip install pyarrow "
            "(the beam extra, 'keras-elmo[beam]', brings it)."
        ) from None
    return pq


def read_embeddings(directory):
    """Yields `(file, line, array)` for every sentence of a complete output
    directory (local), shard by shard.

    Example (pandas instead, one shard: `pd.read_parquet(shard)`, then
    `np.reshape(row.embedding, row.shape)`):

        for file, line, array in read_embeddings("out/"):
            ...
    """
    with about("directory"):
        directory = check_input_directory(
            directory, "`directory`", argument="directory"
        )
        names = read_summary(directory)["embedding_files"]
        pq = _pyarrow_parquet()
        for name in names:
            path = os.path.join(directory, name)
            for batch in _batches(pq, path):
                yield from _rows(batch, path)


def _batches(pq, path):
    """The record batches of the shard at `path`, its damage in words."""
    import pyarrow as pa

    if not os.path.isfile(path):
        raise KerasElmoError(
            f"{path} is missing, though {SUMMARY_FILE} lists it: the output "
            "is incomplete. Run the corpus embedding again."
        )
    try:
        shard = pq.ParquetFile(path)
        _check_columns(shard.schema_arrow, path)
        yield from shard.iter_batches()
    except (pa.ArrowException, OSError) as error:
        raise KerasElmoError(
            f"{path} is not a whole Parquet shard ({error}); it is truncated "
            "or damaged. Run the corpus embedding again."
        ) from None


def _check_columns(schema, path):
    """Refuses a shard without the columns of `parquet_schema`, by type
    (whatever a writer named a list's items)."""
    import pyarrow as pa

    def kind(name):
        index = schema.get_field_index(name)
        return None if index < 0 else schema.field(index).type

    def list_of(*items):
        return lambda t: pa.types.is_list(t) and t.value_type in items

    expected = {
        "file": (lambda t: t == pa.string(), "string"),
        "line": (lambda t: t == pa.int64(), "int64"),
        "shape": (list_of(pa.int32()), "a list of int32"),
        "embedding": (
            list_of(pa.float32(), pa.float16()),
            "a list of float32 or float16",
        ),
    }
    for name, (fits, words) in expected.items():
        found = kind(name)
        if found is None or not fits(found):
            raise KerasElmoError(
                f"{path} is not an embedding shard: its column {name!r} is "
                f"{found or 'missing'}, expected {words}."
            )


def _rows(batch, path):
    """`(file, line, array)` of each row of a Parquet record batch, the
    arrays in the stored dtype; a row whose `shape` does not fit its
    values is an error naming it."""
    embeddings = batch.column("embedding")
    offsets = embeddings.offsets.to_numpy()
    values = embeddings.values.to_numpy(zero_copy_only=False)
    rows = zip(
        batch.column("file").to_pylist(),
        batch.column("line").to_pylist(),
        batch.column("shape").to_pylist(),
    )
    for i, (file, line, shape) in enumerate(rows):
        size = int(offsets[i + 1] - offsets[i])
        if not _fits(shape, size):
            raise KerasElmoError(
                f"{path}: the row of {file!r}, line {line}, has shape "
                f"{shown(shape)} for {size:,} values; the shard is damaged. "
                "Run the corpus embedding again."
            )
        yield file, line, values[offsets[i] : offsets[i + 1]].reshape(shape)


def _fits(shape, size):
    return (
        isinstance(shape, list)
        and all(isinstance(n, int) and n >= 0 for n in shape)
        and math.prod(shape) == size
    )
