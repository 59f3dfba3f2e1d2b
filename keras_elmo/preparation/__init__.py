"""Raw text in: normalised, split into sentences, tokenised, and written
as the corpus the package trains on (`prepare`, `keras-elmo prepare`)."""

from keras_elmo.preparation.normalization import normalize  # noqa: F401
from keras_elmo.preparation.prepare_text import prepare  # noqa: F401
