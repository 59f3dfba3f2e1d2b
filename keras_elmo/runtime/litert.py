"""`LiteRTBiLM`: a biLM exported by `keras-elmo export-litert`, run by the
LiteRT interpreter (no TensorFlow)."""

import mmap
import os

from keras_elmo.errors import KerasElmoError
from keras_elmo.runtime.model_file import METADATA_KEY
from keras_elmo.runtime.model_file import CharacterInputs
from keras_elmo.runtime.model_file import bilm_outputs
from keras_elmo.runtime.model_file import character_ids
from keras_elmo.runtime.model_file import empty_outputs
from keras_elmo.runtime.model_file import parse_metadata


def _import_litert():
    try:
        from ai_edge_litert import schema_py_generated as schema
        from ai_edge_litert.interpreter import Interpreter
    except ImportError as error:
        raise KerasElmoError(
            f"LiteRTBiLM needs ai-edge-litert ({error}); install it with: "
            'pip install "keras-elmo[litert]"'
        ) from None
    return Interpreter, schema


def read_metadata(path, schema):
    """The keras_elmo metadata text of a `.tflite` file, or None; raises
    KerasElmoError when the file is not a TFLite flatbuffer."""
    with open(path, "rb") as f:
        try:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            data = b""
        try:
            if len(data) < 8 or data[4:8] != b"TFL3":
                raise KerasElmoError(
                    f"{path} is not a LiteRT (.tflite) model; expected a "
                    "file written by keras-elmo export-litert."
                )
            model = schema.Model.GetRootAs(data, 0)
            for i in range(model.MetadataLength()):
                entry = model.Metadata(i)
                if entry.Name() == METADATA_KEY.encode("utf-8"):
                    buffer = model.Buffers(entry.Buffer())
                    return buffer.DataAsNumpy().tobytes().decode("utf-8")
            return None
        finally:
            if isinstance(data, mmap.mmap):
                data.close()


class LiteRTBiLM:
    """A biLM exported to LiteRT (TensorFlow Lite), run by its interpreter.

    Takes what `keras_elmo.layers.BiLM` takes (character ids, or token
    lists, which it converts with `keras_elmo.runtime.batch_to_ids`) and
    returns the same dict, as NumPy arrays. Stateless: every sentence
    starts from a zero state. One instance is not thread-safe (the
    interpreter holds its tensors); use one per thread.

    Args:
        path: str. A `.tflite` file from `keras_elmo.export.to_litert`.
        num_threads: int or None. Threads of one call; None lets LiteRT
            choose. Defaults to `None`.

    Call arguments:
        inputs: list of token lists, or int array `(batch, time, 50)`.

    Returns:
        A dict with `"layer_outputs"` (`num_layers + 1` float32 arrays
        `(batch, time, 2 * projection_dim)`), `"token_embeddings"`
        `(batch, time, projection_dim)`, `"mask"` bool `(batch, time)`,
        and `"elmo"` when the export has a scalar mix.

    Attributes:
        metadata: dict. The options the file was exported with.
        num_layers, projection_dim, precision: from the metadata.
    """

    stateful = False
    encoder = CharacterInputs()

    def __init__(self, path, num_threads=None):
        Interpreter, schema = _import_litert()
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise KerasElmoError(
                f"{path} is not a file; expected a .tflite file written by "
                "keras-elmo export-litert."
            )
        text = read_metadata(path, schema)
        self.metadata = parse_metadata(text, path, "LiteRT", "export-litert")
        try:
            self.interpreter = Interpreter(
                model_path=path,
                num_threads=None if num_threads is None else int(num_threads),
            )
            self.runner = self.interpreter.get_signature_runner()
        except (ValueError, RuntimeError) as error:
            raise KerasElmoError(
                f"{path} could not be loaded by LiteRT "
                f"({str(error).strip()[:300]}); export it again with "
                "keras-elmo export-litert."
            ) from None
        self.path = path
        self.num_layers = int(self.metadata["num_layers"])
        self.projection_dim = int(self.metadata["projection_dim"])
        self.precision = self.metadata["precision"]
        self._input = self.metadata["input"]

    def __call__(self, inputs):
        ids = character_ids(inputs)
        if ids.size == 0:
            named = empty_outputs(ids, self.metadata)
        else:
            named = self.runner(**{self._input: ids})
        return bilm_outputs(named, self.num_layers, self.projection_dim)

    def __repr__(self):
        return (
            f"LiteRTBiLM({self.path!r}, precision={self.precision!r}, "
            f"num_layers={self.num_layers}, "
            f"projection_dim={self.projection_dim})"
        )
