"""PyTorch state dicts (`torch.save` files) read without PyTorch.

ELMoForManyLangs ships its weights as `torch.save` pickles of state dicts
(an ordered dict of parameter name -> tensor). This module reads both
layouts PyTorch writes, with NumPy only:

- the zip layout (PyTorch >= 1.6): `<name>/data.pkl` holds the pickle,
  `<name>/data/<key>` the raw bytes of each storage, `<name>/byteorder`
  their byte order;
- the legacy layout (PyTorch 0.4 to 1.5, the layout of the published
  ELMoForManyLangs models): five consecutive pickles in one file (magic
  number, protocol version, system info, the state dict itself, the list of
  storage keys), then each storage as an int64 element count followed by
  its raw bytes, in the order of that list.

Unpickling runs code named by the file, so the unpickler here resolves only
the few names a state dict needs (`collections.OrderedDict`, PyTorch's
tensor-rebuild functions and storage types), each mapped to a NumPy
stand-in; any other name is refused with `WeightFileError`. Nothing from
the file is imported or called.
"""

import collections
import io
import os
import pickle
import struct
import zipfile

import numpy as np

from keras_elmo.errors import WeightFileError

# torch.save's legacy header: magic number and protocol version.
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001

_STORAGE_DTYPES = {
    "FloatStorage": "f4",
    "DoubleStorage": "f8",
    "HalfStorage": "f2",
    "LongStorage": "i8",
    "IntStorage": "i4",
    "ShortStorage": "i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "?",
}


class _StorageType:
    def __init__(self, name):
        self.name = name
        self.dtype = np.dtype(_STORAGE_DTYPES[name])


class _StorageRef:
    """A storage named by the pickle; its bytes are read afterwards."""

    def __init__(self, storage_type, key, numel, view=None):
        self.dtype = storage_type.dtype
        self.key = key
        self.numel = numel
        self.view = view  # (offset, numel) into the root storage


class _TensorRef:
    def __init__(self, storage, offset, size, stride):
        self.storage = storage
        self.offset = int(offset)
        self.size = tuple(int(s) for s in size)
        self.stride = tuple(int(s) for s in stride)


def _rebuild_tensor(storage, storage_offset, size, stride, *unused):
    # Stand-in for torch._utils._rebuild_tensor(_v2): the arguments after
    # the stride (requires_grad, backward hooks, metadata) do not matter
    # for the values.
    return _TensorRef(storage, storage_offset, size, stride)


def _rebuild_parameter(data, *unused):
    return data


_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, path):
        super().__init__(file)
        self.path = path

    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise WeightFileError(
            f"{self.path} names `{module}.{name}`, which a PyTorch state "
            "dict of tensors never needs; refusing to load it (unpickling "
            "can run code). Is it an ELMoForManyLangs weight file?"
        )

    def persistent_load(self, saved_id):
        if not isinstance(saved_id, tuple) or saved_id[:1] != ("storage",):
            raise WeightFileError(
                f"{self.path} holds an unexpected object reference "
                f"{saved_id!r:.60}; expected PyTorch tensor storages."
            )
        storage_type, key, _, numel = saved_id[1:5]
        if not isinstance(storage_type, _StorageType):
            raise WeightFileError(
                f"{self.path} names storage type {storage_type!r:.60}; "
                "expected a PyTorch storage class such as FloatStorage."
            )
        view = None
        if len(saved_id) > 5 and saved_id[5] is not None:
            # Legacy layout: (view key, offset, size) of a view into the
            # root storage `key`.
            _, offset, size = saved_id[5]
            view = (int(offset), int(size))
        return _StorageRef(storage_type, str(key), int(numel), view)


def read_state_dict(path):
    """Reads a `torch.save` file of a state dict into NumPy arrays.

    Args:
        path: str, the `.pkl` / `.pt` file.

    Returns:
        A dict, parameter name -> `np.ndarray` (in the file's order).

    Raises:
        WeightFileError: the file is missing, damaged, not a state dict of
            tensors, or names anything a state dict does not need.
    """
    if not os.path.isfile(path):
        raise WeightFileError(
            f"Weight file not found: {path}. An ELMoForManyLangs model "
            "folder holds token_embedder.pkl and encoder.pkl."
        )
    try:
        if zipfile.is_zipfile(path):
            state, storages = _read_zip(path)
        else:
            state, storages = _read_legacy(path)
    except WeightFileError:
        raise
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        struct.error,
        zipfile.BadZipFile,
    ) as e:
        raise WeightFileError(
            f"Could not read {path} as a PyTorch state dict "
            f"({type(e).__name__}: {e}). Is it a complete download?"
        ) from None
    if not isinstance(state, dict):
        raise WeightFileError(
            f"{path} holds a {type(state).__name__}; expected a state dict "
            "(parameter name -> tensor), as torch.save(module.state_dict())"
            " writes."
        )
    arrays = {}
    for name, value in state.items():
        if not isinstance(value, _TensorRef):
            raise WeightFileError(
                f"{path}: entry {name!r} is a {type(value).__name__}, not a "
                "tensor."
            )
        arrays[str(name)] = _tensor_values(value, storages, path, name)
    return arrays


def _read_zip(path):
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("data.pkl")]
        if len(pickles) != 1:
            raise WeightFileError(
                f"{path} is a zip file without exactly one data.pkl; not a "
                "PyTorch (>= 1.6) state dict file."
            )
        prefix = pickles[0][: -len("data.pkl")]
        byteorder = "little"
        if prefix + "byteorder" in names:
            byteorder = archive.read(prefix + "byteorder").decode().strip()
        unpickler = _Unpickler(io.BytesIO(archive.read(pickles[0])), path)
        state = unpickler.load()
        storages = {}
        for ref in _storage_refs(state):
            if ref.key not in storages:
                data = archive.read(f"{prefix}data/{ref.key}")
                storages[ref.key] = _storage_array(
                    data, ref, byteorder, ref.numel
                )
    return state, storages


def _read_legacy(path):
    with open(path, "rb") as f:
        magic = _Unpickler(f, path).load()
        if magic != _LEGACY_MAGIC:
            raise WeightFileError(
                f"{path} is neither a zip nor a legacy PyTorch file (its "
                "first pickle is not torch.save's magic number). Is it a "
                "complete download of an ELMoForManyLangs .pkl file?"
            )
        protocol = _Unpickler(f, path).load()
        if protocol != _LEGACY_PROTOCOL:
            raise WeightFileError(
                f"{path} has PyTorch file protocol {protocol!r}; expected "
                f"{_LEGACY_PROTOCOL}."
            )
        info = _Unpickler(f, path).load()
        little = not isinstance(info, dict) or info.get("little_endian", True)
        byteorder = "little" if little else "big"
        state = _Unpickler(f, path).load()
        keys = _Unpickler(f, path).load()
        refs = {}
        for ref in _storage_refs(state):
            refs.setdefault(ref.key, ref)
        storages = {}
        for key in keys:
            ref = refs.get(str(key))
            if ref is None:
                raise WeightFileError(
                    f"{path} stores data for storage {key!r} that no tensor "
                    "uses; the file looks damaged."
                )
            (numel,) = struct.unpack("<q" if little else ">q", f.read(8))
            data = f.read(numel * ref.dtype.itemsize)
            storages[ref.key] = _storage_array(data, ref, byteorder, numel)
    return state, storages


def _storage_refs(state):
    if isinstance(state, dict):
        for value in state.values():
            if isinstance(value, _TensorRef):
                yield value.storage


def _storage_array(data, ref, byteorder, numel):
    dtype = ref.dtype.newbyteorder("<" if byteorder == "little" else ">")
    if len(data) < numel * dtype.itemsize:
        raise WeightFileError(
            f"storage {ref.key} holds {len(data)} bytes, fewer than its "
            f"{numel} elements need; the file is truncated."
        )
    array = np.frombuffer(data, dtype=dtype, count=numel)
    return array.astype(ref.dtype.newbyteorder("="))


def _tensor_values(tensor, storages, path, name):
    storage = storages[tensor.storage.key]
    if tensor.storage.view is not None:
        offset, numel = tensor.storage.view
        storage = storage[offset : offset + numel]
    size, stride = tensor.size, tensor.stride
    extent = tensor.offset + sum((n - 1) * s for n, s in zip(size, stride))
    if len(size) != len(stride) or (
        all(n > 0 for n in size) and extent >= storage.size
    ):
        raise WeightFileError(
            f"{path}: tensor {name!r} of shape {size} does not fit its "
            f"storage of {storage.size} elements; the file looks damaged."
        )
    if any(n == 0 for n in size):
        return np.zeros(size, storage.dtype)
    itemsize = storage.dtype.itemsize
    return np.lib.stride_tricks.as_strided(
        storage[tensor.offset :],
        shape=size,
        strides=[s * itemsize for s in stride],
        writeable=False,
    ).copy()
