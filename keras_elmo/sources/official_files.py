"""`OfficialFiles`: bilm-tf's options.json + hdf5 weights, given as a pair."""

import os

from elmo_core.errors import BiLMSourceError
from elmo_core.errors.blame import about
from keras_elmo.sources.bilm_data import BiLMData
from keras_elmo.sources.bilm_source import BiLMSource
from keras_elmo.sources.bilm_source import real_files
from keras_elmo.sources.bilm_source import register_source_kind


@register_source_kind
class OfficialFiles(BiLMSource):
    """Official `options.json` + hdf5 weights (bilm-tf's format).

    Given as two paths or URLs, or one string `OPTIONS.json,WEIGHTS.hdf5`
    (URLs are downloaded into the cache first, `fetch`). A `vocab.txt`
    beside the options is the vocabulary of a word-input biLM; with a
    `softmax.hdf5` beside it too (what `keras-elmo export-weights`
    writes), it brings the language model's softmax.

    Args:
        options: str (a local path) or dict (the parsed options).
        weights: str. The local path of the hdf5 weights.
        description: str. The source in words.
    """

    kind = "bilm-tf"
    summary = "OPTIONS.json,WEIGHTS.hdf5 (official files, paths or URLs)"
    order = 60
    local = False

    def __init__(self, options, weights, description):
        super().__init__(description)
        self.options = options
        self.weights = weights

    @classmethod
    def matches(cls, source):
        """Two paths or URLs in one string, split at the first comma."""
        return "," in source

    @classmethod
    def open(cls, source, progress=True, argument=None):
        """The source of the str `OPTIONS,WEIGHTS` (paths or URLs)."""
        name = f"`{argument or 'source'}` {source!r}"
        options, weights = cls.split(source, name, argument)
        return cls.fetch(options, weights, progress)

    @staticmethod
    def split(source, name, argument=None):
        """`(options, weights)` of the str `OPTIONS,WEIGHTS`; an empty part
        is an error naming it (`name` says how the user gave `source`;
        `argument`, the Python argument it came in, is carried on it)."""
        options, weights = source.split(",", 1)
        for part, value, where in (
            ("options", options, "before"),
            ("weights", weights, "after"),
        ):
            if not value.strip():
                raise BiLMSourceError(
                    f"{name}: no {part} file {where} the comma; "
                    "OPTIONS.json,WEIGHTS.hdf5 names the options file before "
                    "it and the hdf5 weights after it.",
                    argument,
                )
        return options, weights

    @classmethod
    def fetch(cls, options, weights, progress=True):
        """The source of `options` (a path, a URL or a dict) and `weights`
        (a path or a URL); URLs are downloaded into the cache if needed."""
        from elmo_core import pretrained
        from elmo_core.formats.bilm_tf_options import check_options_file
        from elmo_core.formats.bilm_tf_options import check_weight_file

        if isinstance(options, dict):
            description = f"the options dict + {weights}"
        else:
            description = f"{options} + {weights}"
            options = pretrained.local_file(os.fspath(options), progress)
            check_options_file(options)
        with about("weights"):
            weights = pretrained.local_file(os.fspath(weights), progress)
            check_weight_file(weights)
        return cls(options, weights, description)

    def _beside(self):
        """The `(softmax, vocabulary)` files beside the options (None for
        an options dict)."""
        from elmo_core.formats.run_layout import EXPORT_SOFTMAX
        from elmo_core.formats.run_layout import VOCAB_FILE

        if isinstance(self.options, dict):
            return None, None
        directory = os.path.dirname(self.options)
        return (
            os.path.join(directory, EXPORT_SOFTMAX),
            os.path.join(directory, VOCAB_FILE),
        )

    def inputs(self):
        options = None if isinstance(self.options, dict) else self.options
        return real_files(options, self.weights, *self._beside())

    def _read(self):
        from elmo_core.formats.run_layout import read_softmax
        from elmo_core.ids.vocabulary import Vocabulary
        from keras_elmo.formats.bilm_tf import read_bilm

        bilm = read_bilm(self.options, self.weights)
        softmax_file, vocab_file = self._beside()
        softmax = vocabulary = None
        if vocab_file is not None and os.path.isfile(vocab_file):
            if os.path.isfile(softmax_file):
                softmax = read_softmax(softmax_file)
                vocabulary = Vocabulary.from_file(vocab_file)
            elif bilm.encoder.needs_vocabulary:
                vocabulary = Vocabulary.from_file(vocab_file)
        return BiLMData(bilm, softmax, vocabulary, self.description)

    def load_bilm(self, vocabulary=None, **kwargs):
        from keras_elmo.formats.bilm_tf import read_bilm

        return self.read_straight(
            lambda: read_bilm(self.options, self.weights, vocabulary, **kwargs),
            vocabulary,
            kwargs,
        )
