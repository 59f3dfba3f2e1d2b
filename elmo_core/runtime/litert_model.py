"""`LiteRTModel`: a whole Keras model holding ELMo, exported with
`keras_elmo.export.export_litert(model, ...)`, run by the LiteRT
interpreter (no TensorFlow)."""

from elmo_core.formats.exported_file import LITERT
from elmo_core.formats.exported_model import parse_metadata
from elmo_core.runtime.exported_model import ExportedModel
from elmo_core.runtime.litert import LiteRTFile


class LiteRTModel(ExportedModel):
    """A Keras model holding ELMo (e.g. a tagger), exported to LiteRT
    (TensorFlow Lite), run by its interpreter.

    It takes what the Keras model takes, by input name, token lists where
    it took string tokens (see `ExportedModel`: call arguments, outputs,
    attributes). One instance is not thread-safe (the
    interpreter holds its tensors); use one per thread.

    Args:
        path: str. A `.tflite` file from `keras_elmo.export.export_litert(
            model, ...)` (or `keras-elmo export-litert --model
            model.keras`).
        num_threads: int or None. Threads of one call; None lets LiteRT
            choose. Defaults to `None`.

    Example (a `Sequential` tagger around the test-fixture biLM, int8;
    string tokens in Keras, token lists here):

    >>> import os, tempfile
    >>> import keras_elmo.export  # the export needs TensorFlow
    >>> bilm = keras_elmo.load_bilm("tests/fixtures/bilm-tf/model")
    >>> tagger = keras.Sequential([
    ...     keras.Input((None,), dtype="string"),
    ...     keras_elmo.ELMoEmbedding(bilm, dropout=0.0),
    ...     keras.layers.Dense(4, activation="softmax")])
    >>> path = os.path.join(tempfile.mkdtemp(), "tagger-int8.tflite")
    >>> _ = keras_elmo.export.export_litert(tagger, path, precision="int8")
    >>> exported = elmo_core.runtime.LiteRTModel(path)
    >>> exported.precision, len(exported.input_names)
    ('int8', 1)
    >>> exported([["Hello", "world"]]).shape
    (1, 2, 4)
    """

    kind = LITERT

    def _open(self, path, num_threads):
        self.litert = LiteRTFile(path, num_threads, parse_metadata)
        return self.litert.metadata, self.litert.signature

    def _run(self, feeds):
        return self.litert(feeds)
