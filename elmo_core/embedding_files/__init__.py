"""The files that embedding commands write and read, in one place.

- `hdf5_layout`: the hdf5 layouts of `keras-elmo embed` (AllenNLP's
  `allennlp elmo` layout) and `dump-token-embeddings` (bilm-tf's), and of
  protein FASTA input;
- `runtime_dump`: an exported `.onnx` / `.tflite` biLM run over a text
  file into those layouts, without Keras or TensorFlow (`embed`,
  `dump_token_embeddings`: the twins of `keras_elmo.embed` and
  `keras_elmo.dump_token_embeddings` for such a file);
- `inputs`: what an embedding run reads (lines or FASTA) and the
  settings of each;
- `parquet_layout`: the sharded Parquet output of a corpus run
  (`keras-elmo embed-corpus`) and its reader, `read_embeddings`;
- `sentences`, `token_batches`: what a sentence of a corpus run is and
  which lines are bad, and batches planned by length.
"""

from elmo_core.embedding_files.parquet_layout import read_embeddings
from elmo_core.embedding_files.runtime_dump import dump_token_embeddings
from elmo_core.embedding_files.runtime_dump import embed
from elmo_core.embedding_files.sentences import BadLine

__all__ = ["BadLine", "dump_token_embeddings", "embed", "read_embeddings"]
