"""Apache Beam adapters of the corpus embedder (the `beam` extra).

- `ELMoModelHandler` (`model_handler.py`): a `RunInference` model handler
  around a `keras_elmo.corpus.SentenceEmbedder`.
- `pipeline.py`: the ready pipeline, as three transforms (`ReadLines`,
  `EmbedSentences`, `WriteEmbeddings`); `corpus_run.py`: the function
  that checks and runs it, `embed_corpus`, which `keras-elmo
  embed-corpus` runs.
- `corpus_paths.py`, `output_directory.py`, `pipeline_options.py`: what
  `embed_corpus` checks before the pipeline starts (the inputs and the
  output against them, who owns the output directory, Beam's options).

Importing this package imports Apache Beam (the `beam` extra: pip
install 'keras-elmo[beam]').
"""

from keras_elmo.beam.corpus_run import embed_corpus
from keras_elmo.beam.model_handler import ELMoModelHandler
from keras_elmo.beam.pipeline import EmbedSentences
from keras_elmo.beam.pipeline import ReadLines
from keras_elmo.beam.pipeline import WriteEmbeddings

__all__ = [
    "ELMoModelHandler",
    "EmbedSentences",
    "ReadLines",
    "WriteEmbeddings",
    "embed_corpus",
]
