"""The files that embedding commands write and read, in one place.

- `hdf5_layout`: the hdf5 layouts of `keras-elmo embed` (AllenNLP's
  `allennlp elmo` layout) and `dump-token-embeddings` (bilm-tf's), NumPy
  only;
- `bilm_dump`: a Keras `BiLM` run over a text file into those layouts;
- `runtime_dump`: an exported `.onnx` / `.tflite` biLM run over a text
  file into the same layouts, without TensorFlow;
- `parquet_layout`: the sharded Parquet output of a corpus run
  (`keras-elmo embed-corpus`) and its reader, `read_embeddings`.
"""
