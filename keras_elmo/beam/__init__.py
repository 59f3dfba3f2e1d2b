"""Apache Beam adapters of the corpus embedder (the `beam` extra).

- `ELMoModelHandler` (`model_handler.py`): a `RunInference` model handler
  around a `keras_elmo.corpus.SentenceEmbedder`.
- `pipeline.py`: the ready pipeline, as three transforms (`ReadLines`,
  `EmbedSentences`, `WriteEmbeddings`) and one function, `embed_corpus`,
  which `keras-elmo embed-corpus` runs.

Importing this package does not import Beam; its modules do (`require_beam`
says which extra to install when it is missing).
"""

import importlib

from keras_elmo.errors import KerasElmoError

_EXPORTS = {
    "ELMoModelHandler": "keras_elmo.beam.model_handler",
    "EmbedSentences": "keras_elmo.beam.pipeline",
    "ReadLines": "keras_elmo.beam.pipeline",
    "WriteEmbeddings": "keras_elmo.beam.pipeline",
    "embed_corpus": "keras_elmo.beam.pipeline",
}


def require_beam():
    """Raises `KerasElmoError` naming the extra when Beam is missing."""
    if importlib.util.find_spec("apache_beam") is None:
        raise KerasElmoError(
            "Embedding a corpus on Apache Beam needs Beam: pip install "
            "'keras-elmo[beam]' (apache-beam)."
        )


def __getattr__(name):
    if name in _EXPORTS:
        require_beam()
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'keras_elmo.beam' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = sorted(_EXPORTS)
