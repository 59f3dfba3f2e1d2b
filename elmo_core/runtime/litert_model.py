"""`LiteRTModel`: a whole Keras model holding ELMo, exported with
`keras_elmo.export.export_litert(model, ...)`, run by the LiteRT
interpreter (no TensorFlow)."""

from elmo_core.formats.exported_file import LITERT
from elmo_core.formats.exported_model import parse_metadata
from elmo_core.runtime.exported_model import ExportedModel
from elmo_core.runtime.litert import open_runner
from elmo_core.runtime.litert import read_file_metadata
from elmo_core.runtime.litert import signature


class LiteRTModel(ExportedModel):
    """A Keras model holding ELMo (e.g. a tagger), exported to LiteRT
    (TensorFlow Lite), run by its interpreter.

    Called as every `ExportedModel` is: on what the Keras model takes, by
    input name, token lists where it took string tokens, returning its
    outputs as NumPy arrays; its call arguments, outputs and attributes
    are documented there. One instance is not thread-safe (the
    interpreter holds its tensors); use one per thread.

    Args:
        path: str. A `.tflite` file from `keras_elmo.export.export_litert(
            model, ...)` (or `keras-elmo export-litert --model
            model.keras`).
        num_threads: int or None. Threads of one call; None lets LiteRT
            choose. Defaults to `None`.

    Example (a tagger around the test-fixture biLM, int8; string tokens
    in Keras, token lists here):

    >>> import os, tempfile
    >>> bilm = keras_elmo.load_bilm("tests/fixtures/bilm-tf/model")
    >>> tokens = keras.Input((None,), dtype="string", name="tokens")
    >>> elmo = keras_elmo.ELMoEmbedding(bilm, dropout=0.0)(tokens)
    >>> tags = keras.layers.Dense(4, activation="softmax", name="tags")(elmo)
    >>> tagger = keras.Model(tokens, tags)
    >>> path = os.path.join(tempfile.mkdtemp(), "tagger-int8.tflite")
    >>> _ = keras_elmo.export.export_litert(tagger, path, precision="int8")
    >>> exported = elmo_core.runtime.LiteRTModel(path)
    >>> exported.precision, exported.input_names
    ('int8', ['tokens'])
    >>> exported([["Hello", "world"]]).shape
    (1, 2, 4)
    """

    kind = LITERT

    def _open(self, path, num_threads):
        # The metadata first: a damaged file, or one that is not ours, is
        # refused before the interpreter opens it.
        metadata = parse_metadata(read_file_metadata(path), path, self.kind)
        self.interpreter, self.runner = open_runner(path, num_threads)
        return metadata, signature(self.runner)

    def _run(self, feeds):
        return self.runner(**feeds)
