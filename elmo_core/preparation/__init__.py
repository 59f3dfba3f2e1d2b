"""Raw text in: split into sentences, tokenised, and written as the
corpus the package trains on (`prepare`, `keras-elmo prepare`)."""

from elmo_core.preparation.prepare_text import prepare

__all__ = ["prepare"]
