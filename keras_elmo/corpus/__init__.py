"""Embedding corpora on a distributed engine, engine-neutral part.

`SentenceEmbedder` embeds batches of sentences (lines or token lists) with
a biLM it loads once per worker process; `sentences` holds the rules for
what a sentence is and which lines are bad. The sharded Parquet output
(names, schema, summary) and its reader `read_embeddings` are
`keras_elmo.embedding_files.parquet_layout`. The
engines' adapters sit beside this folder: `keras_elmo.beam` (Apache Beam
`RunInference`); a Ray Data recipe is in docs/corpus.md. Importing this
package loads neither TensorFlow nor an engine.
"""

from keras_elmo.utils.lazy import lazy_exports

_EXPORTS = {
    "SentenceEmbedder": "keras_elmo.corpus.sentence_embedder",
    "BadLine": "keras_elmo.corpus.sentences",
    "read_embeddings": "keras_elmo.embedding_files.parquet_layout",
}


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

__all__ = sorted(_EXPORTS)
