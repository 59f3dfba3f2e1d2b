"""`LiteRTBiLM`: a biLM exported by `keras-elmo export-litert`, run by the
LiteRT interpreter (no TensorFlow)."""

import mmap
import struct

import numpy as np

from elmo_core.errors import KerasElmoError
from elmo_core.formats.exported_file import LITERT
from elmo_core.formats.exported_file import METADATA_KEY
from elmo_core.formats.exported_file import fixed_batch
from elmo_core.formats.exported_file import parse_metadata
from elmo_core.runtime.exported_bilm import ExportedBiLM


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


def _signature(details):
    """`{name: (dtype name, shape)}` of a signature runner's details (a
    dynamic size, -1, becomes None)."""
    return {
        name: (
            np.dtype(detail["dtype"]).name,
            tuple(
                None if n < 0 else int(n)
                for n in detail.get("shape_signature", detail["shape"])
            ),
        )
        for name, detail in details.items()
    }


def signature(runner):
    """`(inputs, outputs)` of a signature runner, as `check_signature`
    takes them."""
    return (
        _signature(runner.get_input_details()),
        _signature(runner.get_output_details()),
    )


def run_runner(interpreter, runner, feeds, by_rows):
    """`runner` on `feeds` (`{input name: array}`, the batch first); with
    `by_rows`, on each row in turn, stacked: a file of batch size 1 (its
    LSTMs fused). The fused kernel keeps its state in variables between
    calls, so each row starts from reset ones (zeros), as every sentence
    does."""
    if not by_rows:
        return runner(**feeds)
    results = []
    for row in range(len(next(iter(feeds.values())))):
        interpreter.reset_all_variables()
        results.append(
            runner(**{k: x[row : row + 1] for k, x in feeds.items()})
        )
    return {
        name: np.concatenate([result[name] for result in results])
        for name in results[0]
    }


def read_file_metadata(path):
    """The keras_elmo metadata text of the `.tflite` file `path` (checked
    to exist), or None; refuses a file that is not one."""
    _, schema = _import_litert()
    return read_metadata(path, schema)


def open_runner(path, num_threads):
    """`(interpreter, its default signature runner)` of the `.tflite` file
    `path`, whose metadata was read (`read_file_metadata`), checked whole
    first; `num_threads` threads a call (None: LiteRT chooses)."""
    Interpreter, schema = _import_litert()
    _check_complete(path, schema)
    try:
        interpreter = Interpreter(model_path=path, num_threads=num_threads)
        # Allocated before the runner (which holds the tensors): then
        # variables, a fused LSTM's state, can be reset (`run_runner`).
        interpreter.allocate_tensors()
        return interpreter, interpreter.get_signature_runner()
    except (ValueError, RuntimeError) as error:
        raise KerasElmoError(
            f"{path} could not be loaded by LiteRT "
            f"({str(error).strip()[:300]}); export it again with "
            "keras-elmo export-litert."
        ) from None


class LiteRTFile:
    """An open `.tflite` file of keras_elmo's, called on `{input name:
    array}` feeds (`run_runner`), what `LiteRTBiLM` and `LiteRTModel`
    run: its keras_elmo metadata read and parsed (`parse(text, path,
    LITERT)`) first, so that a damaged file, or one that is not ours, is
    refused before the interpreter opens it (`open_runner`).

    Attributes: `metadata`, `signature` (`(inputs, outputs)`),
    `interpreter`, `runner` and `by_rows` (a file of fixed batch size,
    run row by row).
    """

    def __init__(self, path, num_threads, parse):
        self.metadata = parse(read_file_metadata(path), path, LITERT)
        self.interpreter, self.runner = open_runner(path, num_threads)
        self.by_rows = fixed_batch(self.metadata, path) is not None
        self.signature = signature(self.runner)

    def __call__(self, feeds):
        return run_runner(self.interpreter, self.runner, feeds, self.by_rows)


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
            return _metadata_text(schema, data)
        except _DAMAGED as error:
            # flatbuffers reads offsets from the file: a damaged or
            # truncated file points outside it.
            raise _damaged(path, error) from None
        finally:
            if isinstance(data, mmap.mmap):
                data.close()


def _metadata_text(schema, data):
    model = schema.Model.GetRootAs(data, 0)
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        if entry.Name() == METADATA_KEY.encode("utf-8"):
            buffer = model.Buffers(entry.Buffer())
            return buffer.DataAsNumpy().tobytes().decode("utf-8")
    return None


def _check_complete(path, schema):
    """Every buffer of the model inside the file (the interpreter maps
    the file and trusts its offsets; a truncated file must not reach it)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        model = schema.Model.GetRootAs(data, 0)
        for i in range(model.BuffersLength()):
            buffer = model.Buffers(i)
            end = buffer.Offset() + buffer.Size()
            inline = buffer.DataLength()
            if end > len(data) or (inline and buffer.DataAsNumpy() is None):
                raise ValueError(f"buffer {i} ends past the file")
        for i in range(model.SubgraphsLength()):
            model.Subgraphs(i).TensorsLength()
    except _DAMAGED as error:
        raise _damaged(path, error) from None


# What flatbuffers raises on offsets that point outside the file.
_DAMAGED = (IndexError, ValueError, TypeError, struct.error)


def _damaged(path, error):
    return KerasElmoError(
        f"{path} is a damaged or truncated LiteRT (.tflite) file "
        f"({type(error).__name__}: {str(error)[:100]}); export it again "
        "with keras-elmo export-litert."
    )


class LiteRTBiLM(ExportedBiLM):
    """A biLM exported to LiteRT (TensorFlow Lite), run by its interpreter.

    Called as every `ExportedBiLM` is: on what `keras_elmo.layers.BiLM`
    takes, returning the same dict as NumPy arrays; its call arguments,
    outputs and attributes are documented there. One instance is not
    thread-safe (the interpreter holds its tensors); use one per thread.

    Args:
        path: str. A `.tflite` file from `keras_elmo.export.export_litert`.
        num_threads: int or None. Threads of one call; None lets LiteRT
            choose. Defaults to `None`.

    Example (`litert_file` is a biLM exported by `keras-elmo
    export-litert`; here the test fixture biLM, in float32):

    >>> elmo = elmo_core.runtime.LiteRTBiLM(litert_file)
    >>> elmo.precision, elmo.num_layers, elmo.projection_dim
    ('float32', 2, 16)
    >>> elmo([["Hello", "world"]])["layer_outputs"][1].shape
    (1, 2, 32)
    """

    kind = LITERT

    def _open(self, path, num_threads):
        self.litert = LiteRTFile(path, num_threads, parse_metadata)
        return self.litert.metadata, self.litert.signature

    def _run(self, ids):
        return self.litert({self._input: ids})
