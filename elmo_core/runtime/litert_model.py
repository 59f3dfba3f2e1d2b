"""`LiteRTModel`: a whole Keras model holding ELMo, exported with
`keras_elmo.export.to_litert(model, ...)`, run by the LiteRT interpreter
(no TensorFlow)."""

from elmo_core.errors import check_threads
from elmo_core.formats.exported_file import LITERT
from elmo_core.formats.exported_file import check_signature
from elmo_core.formats.exported_file import fixed_batch
from elmo_core.formats.exported_model import expected_signature
from elmo_core.formats.exported_model import parse_metadata
from elmo_core.runtime.exported_model import ExportedModel
from elmo_core.runtime.litert import open_runner
from elmo_core.runtime.litert import read_file_metadata
from elmo_core.runtime.litert import run_rows
from elmo_core.runtime.litert import signature


class LiteRTModel(ExportedModel):
    """A Keras model holding ELMo (e.g. a tagger), exported to LiteRT
    (TensorFlow Lite), run by its interpreter.

    Takes what the Keras model takes, by input name, with token lists
    (or NumPy string arrays, `""` for padding) where the model took
    string tokens: it computes their ids with NumPy as `ELMoEmbedding`
    does in the graph. Returns the model's outputs as NumPy arrays, in
    the model's structure (one array, a list or a dict). One instance is
    not thread-safe (the interpreter holds its tensors); use one per
    thread.

    Args:
        path: str. A `.tflite` file from `keras_elmo.export.to_litert(
            model, ...)` (or `keras-elmo export-litert --model
            model.keras`).
        num_threads: int or None. Threads of one call; None lets LiteRT
            choose. Defaults to `None`.

    Call arguments:
        inputs: a dict `{input name: value}`; for a model of one input,
            the value itself; for a model of a list of inputs, a list.

    Returns:
        The model's outputs.

    Attributes:
        metadata: dict. The file's metadata (inputs, outputs, options).
        input_names, output_names: lists of str.
        precision: str.

    Example (a tagger around the test-fixture biLM, int8; string tokens
    in Keras, token lists here):

    >>> import os, tempfile
    >>> bilm = keras_elmo.load_bilm("tests/fixtures/bilm-tf/model")
    >>> tokens = keras.Input((None,), dtype="string", name="tokens")
    >>> elmo = keras_elmo.ELMoEmbedding(bilm, dropout=0.0)(tokens)
    >>> tags = keras.layers.Dense(4, activation="softmax", name="tags")(elmo)
    >>> tagger = keras.Model(tokens, tags)
    >>> path = os.path.join(tempfile.mkdtemp(), "tagger-int8.tflite")
    >>> _ = keras_elmo.export.to_litert(tagger, path, precision="int8")
    >>> exported = elmo_core.runtime.LiteRTModel(path)
    >>> exported.precision, exported.input_names
    ('int8', ['tokens'])
    >>> exported([["Hello", "world"]]).shape
    (1, 2, 4)
    """

    kind = LITERT

    def __init__(self, path, num_threads=None):
        num_threads = check_threads(num_threads)
        path = self._check_file(path)
        metadata = parse_metadata(read_file_metadata(path), path, self.kind)
        self.interpreter, self.runner = open_runner(path, num_threads)
        check_signature(
            path,
            metadata,
            *signature(self.runner),
            self.kind,
            expected=expected_signature(metadata),
        )
        self._read_metadata(path, metadata)
        self._by_rows = fixed_batch(metadata, path) is not None

    def _run(self, feeds):
        if self._by_rows:
            return run_rows(self.interpreter, self.runner, feeds)
        return self.runner(**feeds)
