"""Embedding text with a Keras biLM: a corpus on a distributed engine,
engine-neutral (`SentenceEmbedder` embeds batches of sentences with a
biLM it loads once per worker process), and text files into the hdf5
layouts of `keras-elmo embed` (`bilm_dump`).

What a sentence is and which lines are bad (`BadLine`), and the sharded
Parquet output with its reader `read_embeddings`, are
`elmo_core.embedding_files`. The engines' adapters sit beside this
folder: `keras_elmo.beam` (Apache Beam `RunInference`); a Ray Data recipe
is in docs/corpus.md.
"""

from elmo_core.embedding_files.parquet_layout import read_embeddings
from elmo_core.embedding_files.sentences import BadLine
from keras_elmo.corpus.sentence_embedder import SentenceEmbedder

__all__ = ["BadLine", "SentenceEmbedder", "read_embeddings"]
