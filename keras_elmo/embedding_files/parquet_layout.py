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

Parquet because the readers a corpus of that size meets (pandas, pyarrow,
Spark, DuckDB, BigQuery, Dask, Ray Data) read it without TensorFlow, by
column (the keys without the vectors), compressed, with a schema. NumPy
and pyarrow only, imported when used; no engine.
"""

import json
import os

from keras_elmo.errors import KerasElmoError

EMBEDDINGS_PREFIX = "embeddings"
EMBEDDINGS_SUFFIX = ".parquet"
BAD_LINES_PREFIX = "bad_lines"
BAD_LINES_SUFFIX = ".jsonl"
SUMMARY_FILE = "summary.json"
FORMAT = "keras-elmo-corpus/1"
EMPTY = "empty"
TOO_LONG = "too_long"
NOT_UTF8 = "not_utf8"
# Why a line was not embedded -> what that means, for reports.
BAD_LINE_REASONS = {
    EMPTY: "no tokens (an empty or blank line)",
    TOO_LONG: "more tokens than max_sentence_tokens",
    NOT_UTF8: "not valid UTF-8",
}


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


def embedding_record(key, array):
    """The Parquet row of one sentence: `key` is `(file, line)`."""
    return {
        "file": key[0],
        "line": key[1],
        "shape": list(array.shape),
        "embedding": array.reshape(-1),
    }


def bad_line_record(key, reason):
    """The JSON line of one bad line."""
    return json.dumps({"file": key[0], "line": key[1], "reason": reason})


def summary(counts, settings, embedding_files, bad_line_files):
    """The `summary.json` text: `counts` {"sentences", "tokens", reason:
    lines}, `settings` as given, and the shard names (base names)."""
    return json.dumps(
        {
            "format": FORMAT,
            "sentences": counts.get("sentences", 0),
            "tokens": counts.get("tokens", 0),
            "bad_lines": {
                reason: counts.get(reason, 0) for reason in BAD_LINE_REASONS
            },
            "settings": settings,
            "embedding_files": sorted(embedding_files),
            "bad_line_files": sorted(bad_line_files),
        },
        indent=1,
    )


def read_summary(directory):
    """The parsed `summary.json` of a complete output directory."""
    path = os.path.join(directory, SUMMARY_FILE)
    if not os.path.isfile(path):
        raise KerasElmoError(
            f"{directory} has no {SUMMARY_FILE}: it is not the output of a "
            "finished corpus run (a run writes it last). Run the corpus "
            "embedding again, over the old output, to redo it."
        )
    if os.path.getsize(path) > 1 << 30:
        raise KerasElmoError(f"{path} is larger than 1 GiB; it is not ours.")
    with open(path, encoding="utf-8") as f:
        try:
            value = json.load(f)
        except json.JSONDecodeError as error:
            raise KerasElmoError(f"{path} is not valid JSON ({error}).")
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise KerasElmoError(
            f"{path} is not a keras-elmo corpus summary (expected "
            f'"format": "{FORMAT}").'
        )
    return value


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
    names = read_summary(directory)["embedding_files"]
    pq = _pyarrow_parquet()
    for name in names:
        shard = pq.ParquetFile(os.path.join(directory, os.path.basename(name)))
        for batch in shard.iter_batches():
            yield from _rows(batch)


def _rows(batch):
    """`(file, line, array)` of each row of a Parquet record batch, the
    arrays in the stored dtype."""
    embeddings = batch.column("embedding")
    offsets = embeddings.offsets.to_numpy()
    values = embeddings.values.to_numpy(zero_copy_only=False)
    rows = zip(
        batch.column("file").to_pylist(),
        batch.column("line").to_pylist(),
        batch.column("shape").to_pylist(),
    )
    for i, (file, line, shape) in enumerate(rows):
        yield file, line, values[offsets[i] : offsets[i + 1]].reshape(shape)
