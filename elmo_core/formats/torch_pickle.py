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

Unpickling runs code named by the file, so the unpickler
(`elmo_core.formats.torch_unpickler`) resolves only the few names a state
dict needs (`collections.OrderedDict`, PyTorch's tensor-rebuild functions
and storage types), each mapped to a NumPy stand-in; any other name is
refused with `WeightFileError`. Nothing from the file is imported or
called. The unpickler bounds depth, object count and integer size
(`bounded_unpickler`), and every value of the file a message shows is
formatted within a bound (`elmo_core.errors.shown`). Tensors of floats
must hold finite values.
"""

import io
import math
import os
import pickle
import struct
import zipfile

import numpy as np

from elmo_core.errors import Described
from elmo_core.errors import InputPathError
from elmo_core.errors import WeightFileError
from elmo_core.errors.shown import shown
from elmo_core.files.paths import check_input_file
from elmo_core.formats.torch_unpickler import BoundedReader
from elmo_core.formats.torch_unpickler import StorageRef
from elmo_core.formats.torch_unpickler import TensorRef
from elmo_core.formats.torch_unpickler import TorchUnpickler
from elmo_core.formats.torch_unpickler import check_count
from elmo_core.formats.torch_unpickler import storage_key

# torch.save's legacy header: magic number and protocol version.
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001
_BYTE_ORDERS = {"little": "<", "big": ">"}
# A zip member may decompress to at most this many times its compressed
# size (PyTorch stores its members uncompressed; float weights compress
# by less than 2x), so a small hostile zip cannot become gigabytes.
MAX_COMPRESSION_RATIO = 20


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
    try:
        check_input_file(
            path,
            "Weight file",
            expected="a PyTorch state dict file (an ELMoForManyLangs model "
            "folder holds token_embedder.pkl and encoder.pkl)",
        )
    except InputPathError as error:
        raise error.within(kind=WeightFileError) from None
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
        MemoryError,
        OverflowError,
        RecursionError,
        UnicodeDecodeError,
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
        if not isinstance(name, str) or not isinstance(value, TensorRef):
            raise WeightFileError(
                f"{path}: each entry must map a parameter name (str) to a "
                "tensor.",
                received={name: Described(type(value).__name__)},
            )
        arrays[name] = _finite(
            _tensor_values(value, storages, path, name), path, name
        )
    return arrays


def _finite(array, path, name):
    """`array`, if it holds no NaN or infinity (a weight never does)."""
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        raise WeightFileError(
            f"{path}: tensor {shown(name)} holds {bad:,} NaN or infinite "
            "values; a weight must be finite. The file is damaged (or "
            "comes from a diverged training run)."
        )
    return array


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
            text = _member(archive, prefix + "byteorder", path, limit=16)
            byteorder = text.decode("ascii", "replace").strip()
        _check_byteorder(byteorder, path)
        pickled = _member(archive, pickles[0], path)
        state = TorchUnpickler(io.BytesIO(pickled), path).load()
        storages = {}
        for ref in _storage_refs(state):
            if ref.key not in storages:
                name = f"{prefix}data/{ref.key}"
                if name not in names:
                    raise WeightFileError(
                        f"{path} has no member {name} for storage "
                        f"{ref.key!r}, which a tensor uses; the file is "
                        "damaged."
                    )
                data = _member(
                    archive, name, path, limit=ref.numel * ref.dtype.itemsize
                )
                storages[ref.key] = _storage_array(
                    data, ref, byteorder, ref.numel, path
                )
    return state, storages


def _member(archive, name, path, limit=None):
    """The bytes of a zip member, once its declared size was checked:
    at most the archive's size (times `MAX_COMPRESSION_RATIO` for a
    compressed member) and, with `limit`, at most what is needed."""
    info = archive.getinfo(name)
    bound = info.compress_size
    if info.compress_type != zipfile.ZIP_STORED:
        bound *= MAX_COMPRESSION_RATIO
    bound = min(bound, os.path.getsize(path) * MAX_COMPRESSION_RATIO)
    if info.file_size > bound:
        raise WeightFileError(
            f"{path}: zip member {name} declares {info.file_size:,} bytes "
            f"from {info.compress_size:,} compressed bytes, more than "
            f"{MAX_COMPRESSION_RATIO}x; refusing to decompress it (no "
            "PyTorch weight file compresses that well)."
        )
    if limit is not None and info.file_size > limit:
        raise WeightFileError(
            f"{path}: zip member {name} declares {info.file_size:,} bytes; "
            f"the tensors that use it need {limit:,}. The file is damaged."
        )
    with archive.open(name) as member:
        return member.read(info.file_size)


def _check_byteorder(byteorder, path):
    if byteorder not in _BYTE_ORDERS:
        raise WeightFileError(
            f"{path} declares byte order {shown(byteorder)}; expected "
            "'little' or 'big'. The file is damaged."
        )


def _read_legacy(path):
    with open(path, "rb") as raw:
        f = BoundedReader(raw)
        magic = TorchUnpickler(f, path).load()
        if magic != _LEGACY_MAGIC:
            raise WeightFileError(
                f"{path} is neither a zip nor a legacy PyTorch file (its "
                "first pickle is not torch.save's magic number). Is it a "
                "complete download of an ELMoForManyLangs .pkl file?"
            )
        protocol = TorchUnpickler(f, path).load()
        if protocol != _LEGACY_PROTOCOL:
            raise WeightFileError(
                f"{path} has PyTorch file protocol {shown(protocol)}; "
                f"expected {_LEGACY_PROTOCOL}."
            )
        info = TorchUnpickler(f, path).load()
        little = (
            info.get("little_endian", True) if isinstance(info, dict) else True
        )
        if not isinstance(little, bool):
            _check_byteorder(little, path)
        byteorder = "little" if little else "big"
        state = TorchUnpickler(f, path).load()
        keys = TorchUnpickler(f, path).load()
        if not isinstance(keys, list):
            raise WeightFileError(
                f"{path}: its storage list is a {type(keys).__name__}, not "
                "a list; the file is damaged."
            )
        refs = {}
        for ref in _storage_refs(state):
            refs.setdefault(ref.key, ref)
        storages = {}
        for key in keys:
            ref = refs.get(storage_key(key, path))
            if ref is None or ref.key in storages:
                raise WeightFileError(
                    f"{path} stores data for storage {shown(key)} that no "
                    "tensor uses (or twice); the file looks damaged."
                )
            header = f.read(8)
            if len(header) < 8:
                raise WeightFileError(
                    f"{path} ends before storage {ref.key!r}; the file is "
                    "truncated."
                )
            (numel,) = struct.unpack(_BYTE_ORDERS[byteorder] + "q", header)
            if numel != ref.numel:
                raise WeightFileError(
                    f"{path}: storage {ref.key!r} declares {numel} "
                    f"elements in the data but {ref.numel} in the pickle; "
                    "the file is damaged."
                )
            size = numel * ref.dtype.itemsize
            if size > f.left():
                raise WeightFileError(
                    f"{path}: storage {ref.key!r} needs {size:,} bytes but "
                    f"the file has {f.left():,} left; it is truncated."
                )
            data = f.read(size)
            storages[ref.key] = _storage_array(
                data, ref, byteorder, numel, path
            )
    return state, storages


def _storage_refs(state):
    if isinstance(state, dict):
        for value in state.values():
            if isinstance(value, TensorRef):
                if not isinstance(value.storage, StorageRef):
                    raise WeightFileError(
                        "a tensor's storage is a "
                        f"{type(value.storage).__name__}, not a PyTorch "
                        "storage; the file is damaged."
                    )
                yield value.storage


def _storage_array(data, ref, byteorder, numel, path):
    dtype = ref.dtype.newbyteorder(_BYTE_ORDERS[byteorder])
    if len(data) < numel * dtype.itemsize:
        raise WeightFileError(
            f"{path}: storage {ref.key} holds {len(data)} bytes, fewer than "
            f"its {numel} elements need; the file is truncated."
        )
    array = np.frombuffer(data, dtype=dtype, count=numel)
    array = array.astype(ref.dtype.newbyteorder("="))
    if ref.bfloat16:
        # A bfloat16 is the upper half of a float32: widening is exact.
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


def _layout(tensor, path, name):
    """(offset, size, stride) of a tensor, checked: integers >= 0, as many
    strides as sizes, and an element count that cannot overflow."""
    what = f"tensor {shown(name)}"
    if not isinstance(tensor.size, (tuple, list)) or not isinstance(
        tensor.stride, (tuple, list)
    ):
        raise WeightFileError(
            f"{path}: {what} has size {shown(tensor.size)} and stride "
            f"{shown(tensor.stride)}; expected tuples of integers."
        )
    offset = check_count(tensor.offset, f"{what} storage offset", path)
    size = tuple(check_count(n, f"{what} size", path) for n in tensor.size)
    stride = tuple(
        check_count(s, f"{what} stride", path) for s in tensor.stride
    )
    if len(size) != len(stride):
        raise WeightFileError(
            f"{path}: {what} has {len(size)} sizes but {len(stride)} "
            "strides; the file is damaged."
        )
    return offset, size, stride


def _tensor_values(tensor, storages, path, name):
    offset, size, stride = _layout(tensor, path, name)
    if tensor.storage.key not in storages:
        raise WeightFileError(
            f"{path}: tensor {shown(name)} uses storage "
            f"{tensor.storage.key!r}, which the file's storage list omits; "
            "the file is damaged."
        )
    storage = storages[tensor.storage.key]
    if tensor.storage.view is not None:
        view_offset, view_size = tensor.storage.view
        if view_offset + view_size > storage.size:
            raise WeightFileError(
                f"{path}: tensor {shown(name)} reads a view of elements "
                f"{view_offset}..{view_offset + view_size} of a storage of "
                f"{storage.size}; the file is damaged."
            )
        storage = storage[view_offset : view_offset + view_size]
    numel = math.prod(size)
    if numel == 0:
        if len(size) > 32 or any(n > 2**31 for n in size):
            raise WeightFileError(
                f"{path}: tensor {shown(name)} has size {shown(size)}; no "
                "dimension of a weight is that large. The file is damaged."
            )
        return np.zeros(size, storage.dtype)
    # The last element read: inside the storage, and no more elements
    # than the storage holds (a weight never repeats its elements).
    extent = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if extent >= storage.size or numel > storage.size:
        raise WeightFileError(
            f"{path}: tensor {shown(name)} of shape {shown(size)} (offset "
            f"{offset}, stride {shown(stride)}) reaches outside its storage of "
            f"{storage.size} elements; the file looks damaged."
        )
    itemsize = storage.dtype.itemsize
    return np.lib.stride_tricks.as_strided(
        storage[offset:],
        shape=size,
        strides=[s * itemsize for s in stride],
        writeable=False,
    ).copy()
