"""`RuntimeFile`, what every class of the runtime shares: an exported file
opened by its runtime, with every check made before the first call."""

from elmo_core.errors import check_threads
from elmo_core.errors.blame import about
from elmo_core.files.paths import check_input_file
from elmo_core.files.paths import check_path
from elmo_core.formats.exported_file import check_signature


class RuntimeFile:
    """An exported file (ONNX or LiteRT) opened by its runtime: `path` and
    `num_threads` checked, the file opened (`_open`), the inputs and
    outputs of its graph checked against those its metadata declares
    (`_signature`), then the metadata read (`_read_metadata`). What goes
    wrong opening it is about `path`.

    A subclass (`ExportedBiLM`, `ExportedModel`, then one per runtime)
    says what the file should be (`_expected`) and implements `_open`
    and `_read_metadata`."""

    kind = None  # exported_file.ONNX, exported_file.LITERT

    def __init__(self, path, num_threads=None):
        with about("path"):
            num_threads = check_threads(num_threads)
            path = check_input_file(
                check_path(path, "path"),
                "Model file",
                expected=self._expected(),
                argument="path",
            )
            metadata, names = self._open(path, num_threads)
            expected = self._signature(metadata)
            check_signature(
                path, metadata, *names, self.kind, expected=expected
            )
            self._read_metadata(path, metadata)

    def _expected(self):
        """What the file should be, in words (for messages)."""
        raise NotImplementedError

    def _open(self, path, num_threads):
        """`(metadata, (inputs, outputs))` of the file `path`, opened with
        the runtime (`num_threads` threads a call; None: it chooses)."""
        raise NotImplementedError

    def _signature(self, metadata):
        """The `(inputs, outputs)` the metadata declares; None: a biLM's."""
        return None

    def _read_metadata(self, path, metadata):
        raise NotImplementedError
