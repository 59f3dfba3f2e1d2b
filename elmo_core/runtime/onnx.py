"""`ONNXBiLM`: a biLM exported by `keras-elmo export-onnx`, run by ONNX
Runtime (no TensorFlow)."""

from elmo_core.errors import KerasElmoError
from elmo_core.formats.exported_file import METADATA_KEY
from elmo_core.formats.exported_file import ONNX
from elmo_core.formats.exported_file import parse_metadata
from elmo_core.runtime.exported_bilm import ExportedBiLM


def _import_onnxruntime():
    try:
        import onnxruntime
    except ImportError as error:
        raise KerasElmoError(
            f"ONNXBiLM needs onnxruntime ({error}); install it with: "
            'pip install "keras-elmo[onnx]"'
        ) from None
    return onnxruntime


# ONNX Runtime's tensor types -> NumPy dtype names.
_ONNX_DTYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(int16)": "int16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(bool)": "bool",
}


def _tensors(tensors):
    """`{name: (dtype name, shape)}` of ONNX Runtime's `NodeArg`s (a
    symbolic size becomes None)."""
    return {
        t.name: (
            _ONNX_DTYPES.get(t.type, t.type),
            tuple(n if isinstance(n, int) else None for n in t.shape or ()),
        )
        for t in tensors
    }


def signature(session):
    """`(inputs, outputs)` of a session, as `check_signature` takes them."""
    return _tensors(session.get_inputs()), _tensors(session.get_outputs())


def onnxruntime_run_options(fatal_only):
    """ONNX Runtime's `RunOptions`, logging fatal errors only (or its
    default)."""
    options = _import_onnxruntime().RunOptions()
    if fatal_only:
        options.log_severity_level = 4
    return options


def open_session(path, num_threads):
    """`(ONNX Runtime session on the CPU, keras_elmo metadata text or
    None)` of the file `path` (checked to exist), with `num_threads`
    threads a call (None: ONNX Runtime chooses)."""
    ort = _import_onnxruntime()
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: its warnings are ours
    if num_threads is not None:
        options.intra_op_num_threads = num_threads
        options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(
            path, options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # onnxruntime raises its own types
        raise KerasElmoError(
            f"{path} is not an ONNX model that ONNX Runtime can load "
            f"({str(error).strip()[:300]}); expected a file written by "
            "keras-elmo export-onnx."
        ) from None
    custom = session.get_modelmeta().custom_metadata_map
    return session, custom.get(METADATA_KEY)


class ONNXBiLM(ExportedBiLM):
    """A biLM exported to ONNX, run by ONNX Runtime on the CPU.

    Called as every `ExportedBiLM` is: on what `keras_elmo.layers.BiLM`
    takes, returning the same dict as NumPy arrays; its call arguments,
    outputs and attributes are documented there.

    Args:
        path: str. A `.onnx` file from `keras_elmo.export.export_onnx`.
        num_threads: int or None. Threads of one call (ONNX Runtime's
            intra-op threads); None lets ONNX Runtime choose. Defaults to
            `None`.

    Example (`onnx_file` is a biLM exported by `keras-elmo export-onnx`;
    here the test fixture biLM, whose Keras outputs it gives):

    >>> elmo = elmo_core.runtime.ONNXBiLM(onnx_file, num_threads=1)
    >>> out = elmo([["The", "cat", "sat"], ["Hello"]])
    >>> out["layer_outputs"][2].shape, out["mask"].tolist()[1]
    ((2, 3, 32), [True, False, False])
    >>> bilm = keras_elmo.load_bilm("tests/fixtures/bilm-tf/model")
    >>> ids = keras_elmo.batch_to_ids([["The", "cat", "sat"]])
    >>> expected = np.asarray(bilm(ids)["layer_outputs"][2])
    >>> float(np.abs(out["layer_outputs"][2][:1] - expected).max()) < 1e-5
    True
    """

    kind = ONNX

    def _open(self, path, num_threads):
        self.session, text = open_session(path, num_threads)
        self._outputs = [o.name for o in self.session.get_outputs()]
        return parse_metadata(text, path, self.kind), signature(self.session)

    def _run(self, ids):
        values = self.session.run(self._outputs, {self._input: ids})
        return dict(zip(self._outputs, values))
