"""`ONNXModel`: a whole Keras model holding ELMo, exported with
`keras_elmo.export.to_onnx(model, ...)`, run by ONNX Runtime (no
TensorFlow)."""

from elmo_core.errors import check_threads
from elmo_core.formats.exported_file import ONNX
from elmo_core.formats.exported_file import check_signature
from elmo_core.formats.exported_model import expected_signature
from elmo_core.formats.exported_model import parse_metadata
from elmo_core.runtime.exported_model import ExportedModel
from elmo_core.runtime.onnx import onnxruntime_run_options
from elmo_core.runtime.onnx import open_session
from elmo_core.runtime.onnx import signature


class ONNXModel(ExportedModel):
    """A Keras model holding ELMo (e.g. a tagger), exported to ONNX, run
    by ONNX Runtime on the CPU.

    Takes what the Keras model takes, by input name, with token lists
    (or NumPy string arrays, `""` for padding) where the model took
    string tokens: it computes their ids with NumPy as `ELMoEmbedding`
    does in the graph. Returns the model's outputs as NumPy arrays, in
    the model's structure (one array, a list or a dict).

    Args:
        path: str. A `.onnx` file from `keras_elmo.export.to_onnx(model,
            ...)` (or `keras-elmo export-onnx --model model.keras`).
        num_threads: int or None. Threads of one call (ONNX Runtime's
            intra-op threads); None lets ONNX Runtime choose. Defaults to
            `None`.

    Call arguments:
        inputs: a dict `{input name: value}`; for a model of one input,
            the value itself; for a model of a list of inputs, a list.

    Returns:
        The model's outputs.

    Attributes:
        metadata: dict. The file's metadata (inputs, outputs, options).
        input_names, output_names: lists of str.
        precision: str.

    Example (a tagger around the test-fixture biLM; string tokens in
    Keras, token lists here):

    >>> import os, tempfile
    >>> bilm = keras_elmo.load_bilm("tests/fixtures/bilm-tf/model")
    >>> tokens = keras.Input((None,), dtype="string", name="tokens")
    >>> elmo = keras_elmo.ELMoEmbedding(bilm, dropout=0.0)(tokens)
    >>> tags = keras.layers.Dense(4, activation="softmax", name="tags")(elmo)
    >>> tagger = keras.Model(tokens, tags)
    >>> path = os.path.join(tempfile.mkdtemp(), "tagger.onnx")
    >>> _ = keras_elmo.export.to_onnx(tagger, path)
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

    def __init__(self, path, num_threads=None):
        num_threads = check_threads(num_threads)
        path = self._check_file(path)
        self.session, text = open_session(path, num_threads)
        metadata = parse_metadata(text, path, self.kind)
        check_signature(
            path,
            metadata,
            *signature(self.session),
            self.kind,
            expected=expected_signature(metadata),
        )
        self._read_metadata(path, metadata)
        # A failed run is reported in the error `__call__` raises, not
        # also logged by ONNX Runtime.
        self._run_options = onnxruntime_run_options(fatal_only=True)

    def _run(self, feeds):
        options = self._run_options
        values = self.session.run(self.output_names, feeds, options)
        return dict(zip(self.output_names, values))
