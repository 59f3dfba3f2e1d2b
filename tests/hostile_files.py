"""Builders of hostile and damaged input files (issue 18), so that each
class of bad file stays covered: PyTorch `torch.save` files with bad
offsets, strides, sizes, byte orders and storage lists (written without
PyTorch), zip bombs, and model configurations with absurd values.

`torch_file` writes both layouts `elmo_core.formats.torch_pickle` reads:
the legacy one (five pickles, then each storage as an int64 count and its
bytes) and the zip one (`archive/data.pkl`, `archive/data/<key>`,
`archive/byteorder`). Each tensor is a dict: its `values` (a NumPy array,
flattened into its own storage) and optionally the `offset`, `size`,
`stride` and `storage` key the pickle declares instead of the true ones.
"""

import collections
import contextlib
import io
import json
import pickle
import struct
import sys
import types
import zipfile
import zlib

import numpy as np

from tests.helpers import with_changes

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
_STORAGE_NAMES = {
    np.dtype("float32"): "FloatStorage",
    np.dtype("float64"): "DoubleStorage",
    np.dtype("int64"): "LongStorage",
}
# Storage types a spec may name instead (`storage_type`): bfloat16, whose
# bytes are the upper halves of the float32 `values`, and one no reader
# of ELMo weights needs.
_OTHER_STORAGES = ("BFloat16Storage", "ComplexFloatStorage")


def _rebuild_tensor_v2(*args):
    raise AssertionError("only pickled, never called")


@contextlib.contextmanager
def _fake_torch():
    """Modules `torch` and `torch._utils` holding the names a state dict
    pickle refers to, so that pickle can write them without PyTorch."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")
    _rebuild_tensor_v2.__module__ = "torch._utils"
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    torch._utils = utils
    for name in (*_STORAGE_NAMES.values(), *_OTHER_STORAGES):
        storage = type(name, (), {"__module__": "torch"})
        setattr(torch, name, storage)
    saved = {name: sys.modules.get(name) for name in ("torch", "torch._utils")}
    sys.modules.update({"torch": torch, "torch._utils": utils})
    try:
        yield torch
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


class _Storage:
    def __init__(self, key, dtype, numel, view=None, name=None):
        self.key, self.dtype, self.numel, self.view = key, dtype, numel, view
        self.name = name or _STORAGE_NAMES[dtype]


class _Tensor:
    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride)

    def __reduce__(self):
        return _rebuild_tensor_v2, (
            *self.args,
            False,
            collections.OrderedDict(),
        )


class _Pickler(pickle.Pickler):
    def __init__(self, file, torch, legacy):
        super().__init__(file, protocol=2)
        self.torch, self.legacy = torch, legacy

    def persistent_id(self, obj):
        if not isinstance(obj, _Storage):
            return None
        kind = getattr(self.torch, obj.name)
        if self.legacy:
            return ("storage", kind, obj.key, "cpu", obj.numel, obj.view)
        return ("storage", kind, obj.key, "cpu", obj.numel)


def _contiguous_stride(shape):
    stride, step = [], 1
    for n in reversed(shape):
        stride.insert(0, step)
        step *= n
    return tuple(stride)


def _state(tensors, byteorder="little"):
    """(state dict of _Tensor, {key: (dtype, bytes, declared numel)})."""
    state, storages = collections.OrderedDict(), {}
    order = ">" if byteorder == "big" else "<"
    for index, (name, spec) in enumerate(tensors.items()):
        values = np.asarray(spec["values"])
        key = str(spec.get("storage", index))
        numel = spec.get("numel", values.size)
        stored = values
        if spec.get("storage_type") == "BFloat16Storage":
            stored = bfloat16_bits(values)
        data = stored.astype(stored.dtype.newbyteorder(order)).tobytes()
        storages[key] = (stored.dtype, data, numel)
        storage = _Storage(
            key, values.dtype, numel, spec.get("view"), spec.get("storage_type")
        )
        state[name] = _Tensor(
            storage,
            spec.get("offset", 0),
            spec.get("size", values.shape),
            spec.get("stride", _contiguous_stride(values.shape)),
        )
    return state, storages


def torch_file(
    path,
    tensors,
    layout="legacy",
    byteorder="little",
    omit_storages=(),
    compress=False,
):
    """Writes a `torch.save`-like file of `tensors` (see the module doc);
    `omit_storages` are storage keys left out of the storage list (legacy)
    or of the archive (zip). Returns `path`."""
    state, storages = _state(tensors, byteorder)
    with _fake_torch() as torch:
        pickled = io.BytesIO()
        _Pickler(pickled, torch, layout == "legacy").dump(state)
    kept = [k for k in storages if k not in omit_storages]
    if layout == "legacy":
        with open(path, "wb") as f:
            for value in (
                LEGACY_MAGIC,
                LEGACY_PROTOCOL,
                {"little_endian": byteorder == "little"},
            ):
                pickle.dump(value, f, protocol=2)
            f.write(pickled.getvalue())
            pickle.dump(kept, f, protocol=2)
            order = "<" if byteorder == "little" else ">"
            for key in kept:
                dtype, data, numel = storages[key]
                f.write(struct.pack(order + "q", numel))
                f.write(data)
        return path
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", method) as archive:
        archive.writestr("archive/data.pkl", pickled.getvalue())
        archive.writestr("archive/byteorder", byteorder)
        for key in kept:
            archive.writestr(f"archive/data/{key}", storages[key][1])
    return path


def bfloat16_bits(values):
    """The bfloat16 bits (uint16) of float32 `values`: their upper halves
    (the lower halves are dropped, so pass values that fit bfloat16)."""
    return (np.asarray(values, "float32").view("uint32") >> 16).astype("uint16")


def raw_legacy_file(path, state_pickle, protocol_pickle=None):
    """A legacy file whose state-dict pickle is the raw bytes given (and
    its protocol-version pickle, if given)."""
    with open(path, "wb") as f:
        pickle.dump(LEGACY_MAGIC, f, protocol=2)
        if protocol_pickle is None:
            pickle.dump(LEGACY_PROTOCOL, f, protocol=2)
        else:
            f.write(protocol_pickle)
        pickle.dump({"little_endian": True}, f, protocol=2)
        f.write(state_pickle)
        pickle.dump([], f, protocol=2)
    return path


def huge_bytes_pickle(length=2**40):
    """A pickle (protocol 4) declaring a bytes object of `length` bytes,
    holding 3."""
    return b"\x80\x04\x8e" + struct.pack("<Q", length) + b"abc"


def zip_bomb(path, size=40 * 2**20):
    """A zip-layout weight file whose storage member inflates from a few
    kB to `size` zero bytes (declared in the pickle as that many floats)."""
    tensors = {"w": {"values": np.zeros(2, "float32"), "numel": size // 4}}
    state, _ = _state(tensors)
    with _fake_torch() as torch:
        pickled = io.BytesIO()
        _Pickler(pickled, torch, False).dump(state)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", pickled.getvalue())
        archive.writestr("archive/data/0", bytes(size))
    return path


def edited_json(source, target, changes):
    """Copies JSON file `source` to `target` with `changes` applied:
    {"a.b": value} sets options["a"]["b"] (`tests.helpers.with_changes`; a
    raw string value replaces the whole text when the key is "")."""
    with open(source) as f:
        text = f.read()
    if "" in changes:
        text = changes[""]
    else:
        values = with_changes(json.loads(text), changes)
        text = json.dumps(values)
    with open(target, "w") as f:
        f.write(text)
    return target


# Absurd values for the size keys of a model configuration: each would
# take minutes or all memory if layers were built from it.
ABSURD_SIZES = {
    "billion": 10**9,
    "string": "512",
    "nan": float("nan"),
    "infinity": float("inf"),
    "fraction": 2.5,
}


def hdf5_with_declared_shapes(source, target, shapes):
    """A copy of hdf5 file `source` whose datasets `shapes` ({name:
    shape}) are replaced by chunked ones of that shape: a tiny file that
    declares gigabytes (their chunks are never written)."""
    import shutil

    import h5py

    shutil.copy(source, target)
    with h5py.File(target, "a") as f:
        for name, shape in shapes.items():
            del f[name]
            f.create_dataset(
                name, shape=shape, dtype="float32", chunks=(1,) * len(shape)
            )
    return target


# === Paths that are not regular files (issue 24) ===


def special_paths(root):
    """`{name: path}` of things a reader must not open as a file, made in
    the folder `root`: a FIFO (opening it blocks), a symbolic link loop, a
    broken link, a folder, a character device that never ends
    (`/dev/zero`) and one that is always empty (`/dev/null`)."""
    import os

    paths = {
        "fifo": os.path.join(root, "fifo"),
        "loop": os.path.join(root, "loop"),
        "broken_link": os.path.join(root, "broken_link"),
        "folder": os.path.join(root, "folder"),
        "dev_zero": "/dev/zero",
        "dev_null": "/dev/null",
    }
    os.mkfifo(paths["fifo"])
    os.symlink(paths["loop"], paths["loop"])
    os.symlink(os.path.join(root, "nowhere"), paths["broken_link"])
    os.makedirs(paths["folder"])
    return paths


def forged_onnx(source, target, dtype="float"):
    """An ONNX graph unrelated to a biLM (one Identity of an input `x`)
    carrying the keras_elmo metadata of the export `source`."""
    import onnx
    from onnx import helper

    exported = onnx.load(source)
    kind = {"float": onnx.TensorProto.FLOAT, "int32": onnx.TensorProto.INT32}
    x = helper.make_tensor_value_info("x", kind[dtype], [None, 4])
    y = helper.make_tensor_value_info("y", kind[dtype], [None, 4])
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "forged", [x], [y]
    )
    model = helper.make_model(graph, opset_imports=exported.opset_import)
    model.ir_version = exported.ir_version
    helper.set_model_props(
        model, {p.key: p.value for p in exported.metadata_props}
    )
    onnx.save(model, target)
    return target


def renamed_onnx(source, target, renames):
    """A copy of the ONNX export `source` whose graph inputs and outputs
    `renames` ({old: new}) are renamed (the metadata is kept)."""
    import onnx

    model = onnx.load(source)
    for node in model.graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    for value in (*model.graph.input, *model.graph.output):
        value.name = renames.get(value.name, value.name)
    onnx.save(model, target)
    return target


# === Pickles that build more than they seem to (issue 24, class 3) ===
# Each builder returns opcodes that push one value; `as_pickle` makes a
# whole protocol-2 pickle of them (for `raw_legacy_file`).

_GET = [b"h" + bytes([i]) for i in range(256)]  # BINGET i
_PUT = [b"q" + bytes([i]) for i in range(256)]  # BINPUT i


def as_pickle(*values):
    """A pickle of the opcodes `values` (one value, or a tuple of them)."""
    body = b"".join(values)
    if len(values) > 1:
        body = b"(" + body + b"t"
    return b"\x80\x02" + body + b"."


def text(value):
    """Opcodes pushing the str `value`."""
    data = value.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def nested_key_dict(depth=200_000):
    """A dict whose key is a tuple nested `depth` deep: hashing it
    overflows the C stack (SIGSEGV) in Python's own unpickler."""
    return b"}K\x01" + b"\x85" * depth + b"K\x01s"


def shared_tuples(levels=40):
    """A tuple of two copies of a tuple of two copies of ... (memo
    references), `levels` deep: 2**levels items to any walk over it, from
    5 bytes a level."""
    body = b"K\x01" + _PUT[0]
    for level in range(levels):
        body += _GET[level] + b"\x86" + _PUT[level + 1]
    return body


def shared_lists(levels=40):
    """`shared_tuples` built so that sizes tracked as objects are made
    miss it: every list is empty when put in its tuple and filled
    afterwards (T[k] = (L[k], L[k]); then L[k].append(T[k-1]))."""
    body = b""
    for k in range(levels):  # memo[k] = L[k] = []
        body += b"]" + _PUT[k] + b"0"
    for k in range(levels):  # memo[100 + k] = T[k] = (L[k], L[k])
        body += _GET[k] + _GET[k] + b"\x86" + _PUT[100 + k] + b"0"
    for k in range(1, levels):  # L[k].append(T[k - 1])
        body += _GET[k] + _GET[99 + k] + b"a0"
    return body + _GET[99 + levels]


def storage_reference(storage_type):
    """A state dict {"w": a storage whose type is the opcodes given}."""
    pid = text("storage") + storage_type + text("0") + text("cpu") + b"K\x04"
    return b"}" + text("w") + b"(" + pid + b"tQs"


def long_integer_dict(digits=6_000, text_line=True):
    """{"w": an integer of `digits` digits}, as a protocol 0 LONG line
    (`text_line`) or a LONG4 of that many digits."""
    value = 10**digits - 1  # (int("9" * digits) hits Python's digit limit)
    if text_line:
        number = b"L" + b"9" * digits + b"L\n"
    else:
        data = value.to_bytes((value.bit_length() + 8) // 8, "little")
        number = b"\x8b" + struct.pack("<i", len(data)) + data
    return b"}" + text("w") + number + b"s"


# === HDF5 weight files with what a weight file never holds (issue 24) ===

CHAR_EMBED = "char_embed"


def _hdf5_copy(source, target):
    import shutil

    shutil.copy(source, target)
    return target


def hdf5_with_values(source, target, name, values):
    """A copy of `source` whose dataset `name` holds `values` instead (any
    dtype: complex, strings, NaN...)."""
    import h5py

    with h5py.File(_hdf5_copy(source, target), "a") as f:
        del f[name]
        f.create_dataset(name, data=values)
    return target


def hdf5_with_link(source, target, name, kind):
    """A copy of `source` whose dataset `name` is a link of `kind`:
    "external" (to the same dataset of a second copy, `target`.other),
    "soft" (to a copy elsewhere in the file), "virtual" (a virtual dataset
    mapping the second copy), "external-storage" (its bytes in a raw file
    beside it) or "external-group" (its group an external link)."""
    import h5py
    import numpy as np

    other = _hdf5_copy(source, target + ".other")
    with h5py.File(_hdf5_copy(source, target), "a") as f:
        values = f[name][...]
        del f[name]
        if kind == "external":
            f[name] = h5py.ExternalLink(other, name)
        elif kind == "soft":
            f.create_dataset("elsewhere", data=values)
            f[name] = h5py.SoftLink("/elsewhere")
        elif kind == "virtual":
            layout = h5py.VirtualLayout(values.shape, values.dtype)
            layout[...] = h5py.VirtualSource(other, name, values.shape)
            f.create_virtual_dataset(name, layout)
        elif kind == "external-storage":
            raw = target + ".raw"
            np.asarray(values).tofile(raw)
            f.create_dataset(
                name,
                shape=values.shape,
                dtype=values.dtype,
                external=[(raw, 0, values.nbytes)],
            )
        elif kind == "external-group":
            group = name.split("/")[0]
            del f[group]
            f[group] = h5py.ExternalLink(other, group)
    return target


# === Zip archives whose directory lies (issue 24, class 2) ===


def deflated(data):
    """`data` as a raw deflate stream (as a zip member holds it)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def raw_zip(path, members):
    """Writes a zip of `members` exactly as given, lies included: each a
    dict with `name`, `data` (the bytes stored), `method` (0 stored, 8
    deflated), `size` and `crc` (declared; default: those of `plain`, the
    unpacked bytes), and `offset` (where its local header is said to be;
    default: where it is). Returns `path`."""
    local, directory = b"", b""
    for member in members:
        name = member["name"].encode()
        plain = member.get("plain", member["data"])
        size = member.get("size", len(plain))
        crc = member.get("crc", zlib.crc32(plain))
        fields = (member.get("method", 0), 0, 0, crc, len(member["data"]))
        offset = member.get("offset", len(local))
        local += struct.pack(
            "<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, *fields, size, len(name), 0
        )
        local += name + member["data"]
        directory += struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            20,
            20,
            0,
            *fields,
            size,
            len(name),
            0,
            0,
            0,
            0,
            0,
            offset,
        )
        directory += name
    end = struct.pack(
        "<4sHHHHIIH",
        b"PK\x05\x06",
        0,
        0,
        len(members),
        len(members),
        len(directory),
        len(local),
        0,
    )
    with open(path, "wb") as f:
        f.write(local + directory + end)
    return path


def cut_deflate_member(name, data):
    """A member whose deflate stream is cut in the middle, its size and
    CRC those of what the cut stream gives: `zipfile` reads it without
    an error (it stops at the declared compressed size)."""
    stream = deflated(data)[: len(deflated(data)) // 2]
    plain = zlib.decompressobj(-zlib.MAX_WBITS).decompress(stream)
    return {"name": name, "data": stream, "method": 8, "plain": plain}


def short_member(name, data):
    """A deflated member that declares more bytes than it holds (its CRC
    that of what it holds): `zipfile` returns the short data silently."""
    return {
        "name": name,
        "data": deflated(data),
        "method": 8,
        "plain": data,
        "size": len(data) * 2,
    }


# === .keras files (issue 24, classes 3, 5 and 6) ===


def keras_file_with(source, target, change=None, config=None, deflate=False):
    """A copy of the `.keras` file `source` whose config.json is `config`
    (raw bytes), or the parsed one after `change(config)` (which edits it
    in place); members deflated with `deflate`. Returns `target`."""
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with zipfile.ZipFile(source) as original:
        with zipfile.ZipFile(target, "w", method) as copy:
            for info in original.infolist():
                data = original.read(info)
                if info.filename == "config.json":
                    if config is None:
                        parsed = json.loads(data)
                        change(parsed)
                        config = json.dumps(parsed).encode()
                    data = config
                copy.writestr(info.filename, data)
    return target


def layer_configs(config, class_name):
    """The `config` dicts of every layer `class_name` in a parsed Keras
    config (to edit them)."""
    found, pending = [], [config]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if item.get("class_name") == class_name:
                found.append(item["config"])
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return found


def keras_bomb(source, target, size=64 << 20, declared=None):
    """A copy of the `.keras` file `source` whose config.json is a deflate
    bomb: `size` bytes of spaces (about 1,000x smaller deflated), declared
    as `declared` bytes (default: truthfully)."""
    with zipfile.ZipFile(source) as original:
        members = [
            {"name": info.filename, "data": original.read(info)}
            for info in original.infolist()
            if info.filename != "config.json"
        ]
    spaces = b" " * size
    bomb = {"name": "config.json", "data": deflated(spaces), "method": 8}
    bomb.update(plain=spaces, size=size if declared is None else declared)
    return raw_zip(target, [bomb, *members])
