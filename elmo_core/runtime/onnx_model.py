"""`ONNXModel`: a whole Keras model holding ELMo, exported with
`keras_elmo.export.export_onnx(model, ...)`, run by ONNX Runtime (no
TensorFlow)."""

from elmo_core.formats.exported_file import ONNX
from elmo_core.formats.exported_model import parse_metadata
from elmo_core.runtime.exported_model import ExportedModel
from elmo_core.runtime.onnx import onnxruntime_run_options
from elmo_core.runtime.onnx import open_session
from elmo_core.runtime.onnx import signature


class ONNXModel(ExportedModel):
    """A Keras model holding ELMo (e.g. a tagger), exported to ONNX, run
    by ONNX Runtime on the CPU.

    It takes what the Keras model takes, by input name, token lists where
    it took string tokens (see `ExportedModel`: call arguments, outputs,
    attributes).

    Args:
        path: str. A `.onnx` file from `keras_elmo.export.export_onnx(
            model, ...)` (or `keras-elmo export-onnx --model model.keras`).
        num_threads: int or None. Threads of one call (ONNX Runtime's
            intra-op threads); None lets ONNX Runtime choose. Defaults to
            `None`.

    Example (a tagger around the test-fixture biLM; string tokens in
    Keras, token lists here):

    >>> import os, tempfile
    >>> import keras_elmo.export  # the export needs TensorFlow
    >>> bilm = keras_elmo.load_bilm("tests/fixtures/bilm-tf/model")
    >>> tokens = keras.Input((None,), dtype="string", name="tokens")
    >>> elmo = keras_elmo.ELMoEmbedding(bilm, dropout=0.0)(tokens)
    >>> tags = keras.layers.Dense(4, activation="softmax", name="tags")(elmo)
    >>> tagger = keras.Model(tokens, tags)
    >>> path = os.path.join(tempfile.mkdtemp(), "tagger.onnx")
    >>> _ = keras_elmo.export.export_onnx(tagger, path)
    >>> exported = elmo_core.runtime.ONNXModel(path, num_threads=1)
    >>> exported.input_names, exported.output_names
    (['tokens'], ['tags'])
    >>> probabilities = exported([["The", "cat", "sat"], ["Hello"]])
    >>> probabilities.shape
    (2, 3, 4)
    >>> expected = tagger(np.array([["The", "cat", "sat"], ["Hello", "", ""]]))
    >>> float(np.abs(probabilities - np.asarray(expected)).max()) < 1e-5
    True
    """

    kind = ONNX

    def _open(self, path, num_threads):
        self.session, text = open_session(path, num_threads)
        # A failed run is reported in the error `__call__` raises, not
        # also logged by ONNX Runtime.
        self._run_options = onnxruntime_run_options(fatal_only=True)
        return parse_metadata(text, path, self.kind), signature(self.session)

    def _run(self, feeds):
        options = self._run_options
        values = self.session.run(self.output_names, feeds, options)
        return dict(zip(self.output_names, values))
