"""The unpickler of PyTorch state dicts: what a `torch.save` pickle may
name, as NumPy stand-ins.

Unpickling runs code named by the file, so this unpickler resolves only
the few names a state dict needs (`collections.OrderedDict`, PyTorch's
tensor-rebuild functions and storage types); any other name is refused
with `WeightFileError`. Nothing from the file is imported or called. A
tensor comes out as a `TensorRef` and a storage as a `StorageRef`, whose
values `elmo_core.formats.torch_pickle` reads afterwards.
"""

import collections
import os

import numpy as np

from elmo_core.errors import WeightFileError
from elmo_core.errors.shown import shown
from elmo_core.formats.bounded_unpickler import BoundedUnpickler

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
    # Read as its raw 16 bits, then widened to float32 (`_storage_array`):
    # NumPy has no bfloat16.
    "BFloat16Storage": "u2",
}
_BFLOAT16 = "BFloat16Storage"


class StorageType:
    def __init__(self, name):
        self.name = name
        self.dtype = np.dtype(_STORAGE_DTYPES[name])
        self.bfloat16 = name == _BFLOAT16


class StorageRef:
    """A storage named by the pickle; its bytes are read afterwards."""

    def __init__(self, storage_type, key, numel, view=None):
        self.dtype = storage_type.dtype
        self.bfloat16 = storage_type.bfloat16
        self.key = key
        self.numel = numel
        self.view = view  # (offset, numel) into the root storage


class TensorRef:
    """A tensor named by the pickle; its values are checked and read once
    the storages are."""

    def __init__(self, storage, offset, size, stride):
        self.storage = storage
        self.offset = offset
        self.size = size
        self.stride = stride


def _rebuild_tensor(storage, storage_offset, size, stride, *unused):
    # Stand-in for torch._utils._rebuild_tensor(_v2): the arguments after
    # the stride (requires_grad, backward hooks, metadata) do not matter
    # for the values.
    return TensorRef(storage, storage_offset, size, stride)


def _rebuild_parameter(data, *unused):
    return data


_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
}


class BoundedReader:
    """A file opened for the unpickler whose reads never ask for more
    bytes than the file has left: a length declared in the pickle is not
    allocated before it is known to be there."""

    def __init__(self, file):
        self.file = file
        self.size = os.fstat(file.fileno()).st_size

    def left(self):
        return max(0, self.size - self.file.tell())

    def read(self, n=-1):
        n = self.left() if n is None or n < 0 else min(n, self.left())
        return self.file.read(n)

    def readline(self, limit=-1):
        return self.file.readline(limit)

    def readinto(self, buffer):
        return self.file.readinto(buffer)


class TorchUnpickler(BoundedUnpickler):
    """The unpickler of a `torch.save` state dict: only the names of
    `_ALLOWED` and PyTorch's storage types, each a NumPy stand-in.

    The Python unpickler (not the C one), so that every length in the
    pickle goes through `read`, which gets no more than the file holds
    (open the file as a `BoundedReader`).
    """

    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return StorageType(name)
        if module == "torch" and name.endswith("Storage"):
            raise WeightFileError(
                f"{self.path} holds tensors of type torch.{name[:60]}, which "
                "keras_elmo does not read (it reads "
                f"{', '.join(_STORAGE_DTYPES)}). Convert the weights to "
                "float32 in PyTorch (state = {k: v.float() for k, v in "
                "state.items()}) and save them again."
            )
        raise WeightFileError(
            f"{self.path} names `{module}.{name}`, which a PyTorch state "
            "dict of tensors never needs; refusing to load it (unpickling "
            "can run code). Is it an ELMoForManyLangs weight file?"
        )

    def persistent_load(self, saved_id):
        if not isinstance(saved_id, tuple) or saved_id[:1] != ("storage",):
            raise WeightFileError(
                f"{self.path} holds an unexpected object reference "
                f"{shown(saved_id)}; expected PyTorch tensor storages."
            )
        storage_type, key, _, numel = saved_id[1:5]
        if not isinstance(storage_type, StorageType):
            raise WeightFileError(
                f"{self.path} names storage type {shown(storage_type)}; "
                "expected a PyTorch storage class such as FloatStorage."
            )
        key = storage_key(key, self.path)
        numel = check_count(numel, f"storage {key!r} size", self.path)
        view = None
        if len(saved_id) > 5 and saved_id[5] is not None:
            # Legacy layout: (view key, offset, size) of a view into the
            # root storage `key`.
            _, offset, size = saved_id[5]
            what = f"view of storage {key!r}"
            view = (
                check_count(offset, f"{what} offset", self.path),
                check_count(size, f"{what} size", self.path),
            )
        return StorageRef(storage_type, key, numel, view)


def storage_key(key, path):
    """A storage key as str: PyTorch writes str (zip) or int (legacy)."""
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        raise WeightFileError(
            f"{path}: a storage key must be a string or an integer. The file "
            "is damaged.",
            received=key,
        )
    return str(key)[:100]


def check_count(value, what, path):
    """A size, offset or stride read from the file: an int >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WeightFileError(
            f"{path}: {what} is {shown(value)}; expected an integer >= 0. "
            "The file is damaged or not a PyTorch weight file."
        )
    return value
