"""Hostile and damaged PyTorch weight files (issue 18, section 1; issue
24, class 3: pickles that build more than they seem to).

The reader of `torch.save` files must refuse, naming the file and the
tensor, every layout that would read outside a buffer or allocate more
than the file can back, and read a good file written the same way back
exactly (so the builders in tests/hostile_files.py write what the reader
reads).
"""

import os
import resource
import subprocess
import sys
import time

import numpy as np
import pytest

from elmo_core.errors import WeightFileError
from elmo_core.errors.shown import shown
from elmo_core.formats.torch_pickle import read_state_dict
from tests import hostile_files
from tests.helpers import assert_words_in
from tests.helpers import named_cases

VALUES = np.arange(12, dtype="float32").reshape(3, 4)


def _tensor(**changes):
    return {"w": dict({"values": VALUES}, **changes)}


@pytest.mark.parametrize("layout", ["legacy", "zip"])
@pytest.mark.parametrize("byteorder", ["little", "big"])
def test_good_files_read_back_exactly(tmp_path, layout, byteorder):
    tensors = {
        "w": {"values": VALUES},
        # A transposed view: strides that are not contiguous.
        "t": {"values": VALUES, "size": (4, 3), "stride": (1, 4)},
        "b": {"values": np.array([1.5, -2.0], "float64")},
        "empty": {"values": np.zeros((0, 3), "float32")},
    }
    path = hostile_files.torch_file(
        str(tmp_path / "w.pkl"), tensors, layout, byteorder
    )
    state = read_state_dict(path)
    np.testing.assert_array_equal(state["w"], VALUES)
    np.testing.assert_array_equal(state["t"], VALUES.T)
    np.testing.assert_array_equal(state["b"], [1.5, -2.0])
    assert state["empty"].shape == (0, 3)


@pytest.mark.parametrize("layout", ["legacy", "zip"])
@pytest.mark.parametrize("byteorder", ["little", "big"])
def test_bfloat16_storages_read_as_float32_exactly(tmp_path, layout, byteorder):
    # Real checkpoints are saved in bfloat16: each value is the upper half
    # of a float32, so reading them as float32 loses nothing.
    random = np.random.default_rng(0).standard_normal(12).astype("float32")
    values = (random.view("uint32") & 0xFFFF0000).view("float32")
    values = values.reshape(3, 4)
    tensors = {
        "w": {"values": values, "storage_type": "BFloat16Storage"},
        "t": {
            "values": values,
            "storage_type": "BFloat16Storage",
            "size": (4, 3),
            "stride": (1, 4),
        },
    }
    path = hostile_files.torch_file(
        str(tmp_path / "w.pkl"), tensors, layout, byteorder
    )
    state = read_state_dict(path)
    assert state["w"].dtype == np.float32
    np.testing.assert_array_equal(state["w"], values)
    np.testing.assert_array_equal(state["t"], values.T)


def test_other_storage_types_are_unsupported_not_hostile(tmp_path):
    tensors = _tensor(storage_type="ComplexFloatStorage")
    path = hostile_files.torch_file(str(tmp_path / "w.pkl"), tensors)
    with pytest.raises(WeightFileError) as raised:
        read_state_dict(path)
    message = str(raised.value)
    assert "torch.ComplexFloatStorage, which keras_elmo does not read" in (
        message
    )
    assert "BFloat16Storage" in message and "v.float()" in message
    assert "run code" not in message


# (id, tensors, torch_file arguments, words of the message)
HOSTILE = [
    ("negative-offset", _tensor(offset=-1), {},
     ["tensor 'w' storage offset is -1"]),
    ("negative-stride", _tensor(offset=11, stride=(-4, -1)), {},
     ["tensor 'w' stride is -4"]),
    ("negative-size", _tensor(size=(-3, 4)), {}, ["tensor 'w' size is -3"]),
    ("size-past-storage", _tensor(size=(4, 4)), {},
     ["tensor 'w' of shape (4, 4)", "reaches outside its storage of 12"]),
    ("offset-past-storage", _tensor(offset=1), {},
     ["tensor 'w'", "(offset 1", "outside its storage"]),
    ("stride-past-storage", _tensor(stride=(5, 1)), {},
     ["tensor 'w'", "stride (5, 1)", "outside its storage"]),
    ("zero-stride-billions", _tensor(size=(10**12,), stride=(0,)), {},
     ["tensor 'w' of shape (1000000000000,)", "outside its storage"]),
    ("element-count-overflow",
     _tensor(size=(2**40, 2**40, 2**40), stride=(0, 0, 0)), {},
     ["tensor 'w'", "outside its storage"]),
    ("empty-tensor-huge-dims", _tensor(size=(0, 2**62), stride=(1, 1)), {},
     ["tensor 'w' has size (0, 4611686018427387904)"]),
    ("size-not-a-tuple", _tensor(size="12"), {},
     ["tensor 'w' has size '12'"]),
    ("size-is-string", _tensor(size=("3", 4)), {},
     ["tensor 'w' size is '3'"]),
    ("fewer-strides", _tensor(stride=(4,)), {},
     ["tensor 'w' has 2 sizes but 1 strides"]),
    ("storage-count-past-file", _tensor(numel=10**12), {},
     ["storage '0' needs 4,000,000,000,000 bytes but the file has 48"]),
    ("negative-storage-count", _tensor(numel=-5), {},
     ["storage '0' size is -5"]),
    ("storage-list-omits-one", _tensor(), {"omit_storages": ["0"]},
     ["tensor 'w' uses storage '0', which the file's storage list omits"]),
    ("view-past-storage", _tensor(view=("v", 8, 8)), {},
     ["tensor 'w' reads a view of elements 8..16 of a storage of 12"]),
    ("view-negative-offset", _tensor(view=("v", -8, 8)), {},
     ["view of storage '0' offset is -8"]),
    ("zip-unknown-byte-order", _tensor(),
     {"layout": "zip", "byteorder": "middle"},
     ["declares byte order 'middle'"]),
    ("zip-member-missing", _tensor(), {"layout": "zip", "omit_storages": "0"},
     ["no member archive/data/0 for storage '0'"]),
    ("zip-storage-past-member", _tensor(numel=10**12), {"layout": "zip"},
     ["storage 0 holds 48 bytes, fewer than its 1000000000000 elements"]),
    ("zip-negative-offset", _tensor(offset=-2), {"layout": "zip"},
     ["tensor 'w' storage offset is -2"]),
]  # fmt: skip


@pytest.mark.parametrize("tensors, arguments, words", named_cases(HOSTILE))
def test_hostile_layouts_are_refused(tmp_path, tensors, arguments, words):
    path = hostile_files.torch_file(
        str(tmp_path / "w.pkl"), tensors, **arguments
    )
    with pytest.raises(WeightFileError) as raised:
        read_state_dict(path)
    message = str(raised.value)
    assert path in message, message
    assert_words_in(message, words)


def _memory_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_declared_lengths_are_not_allocated(tmp_path):
    """A pickle that declares a 1 TiB bytes object (holding 3 bytes)."""
    path = hostile_files.raw_legacy_file(
        str(tmp_path / "w.pkl"), hostile_files.huge_bytes_pickle()
    )
    before = _memory_mib()
    with pytest.raises(WeightFileError, match="Could not read .*w.pkl"):
        read_state_dict(path)
    assert _memory_mib() - before < 100


def test_truncated_storage_is_refused(tmp_path):
    path = hostile_files.torch_file(str(tmp_path / "w.pkl"), _tensor())
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size - 8)
    with pytest.raises(WeightFileError) as raised:
        read_state_dict(path)
    assert "storage '0' needs 48 bytes but the file has 40 left" in str(
        raised.value
    )


def test_zip_bomb_is_refused_before_decompression(tmp_path):
    path = hostile_files.zip_bomb(str(tmp_path / "bomb.pt"))
    assert os.path.getsize(path) < 2**20  # 40 MiB inside
    before = _memory_mib()
    with pytest.raises(WeightFileError) as raised:
        read_state_dict(path)
    message = str(raised.value)
    assert "zip member archive/data/0 declares 41,943,040 bytes" in message
    assert "refusing to decompress" in message
    assert _memory_mib() - before < 30


# === Pickles that build more than they seem to (issue 24, class 3) ===


def _legacy(tmp_path, state, protocol=None):
    return hostile_files.raw_legacy_file(
        str(tmp_path / "w.pkl"),
        hostile_files.as_pickle(state),
        None if protocol is None else hostile_files.as_pickle(protocol),
    )


def test_deeply_nested_pickle_does_not_kill_python(tmp_path):
    """A 200 KB pickle of a dict key nested 200,000 deep: Python's own
    unpickler dies on it with SIGSEGV; here it is refused, in a child
    process so that a crash fails this test instead of the run."""
    path = _legacy(tmp_path, hostile_files.nested_key_dict(200_000))
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from elmo_core.formats.torch_pickle import read_state_dict\n"
            "try:\n"
            "    read_state_dict(sys.argv[1])\n"
            "except ValueError as e:\n"
            "    print(type(e).__name__, e)\n",
            path,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, (child.returncode, child.stderr[-2000:])
    assert child.stdout.startswith("WeightFileError"), child.stdout
    assert "nested more than 100 levels deep" in child.stdout


@pytest.mark.parametrize(
    "where", ["protocol", "storage type", "state dict key"]
)
def test_billion_laughs_values_are_refused_quickly(tmp_path, where):
    """A value of 2**40 items through shared memo references, where the
    reader compares, hashes or shows it."""
    laughs = hostile_files.shared_tuples(40)
    if where == "protocol":
        path = _legacy(tmp_path, b"}", protocol=laughs)
    elif where == "storage type":
        path = _legacy(tmp_path, hostile_files.storage_reference(laughs))
    else:
        path = _legacy(tmp_path, b"}" + laughs + b"K\x01s")
    started = time.perf_counter()
    with pytest.raises(WeightFileError, match="more than 1,000,000 objects"):
        read_state_dict(path)
    assert time.perf_counter() - started < 10


@pytest.mark.parametrize("where", ["protocol", "storage type"])
def test_values_grown_after_use_are_shown_within_a_bound(tmp_path, where):
    """The same 2**40 items, built from lists filled after they were
    used (so the unpickler's tracking does not see them): the message
    that shows the value formats 60 characters of it, not all."""
    laughs = hostile_files.shared_lists(40)
    if where == "protocol":
        path = _legacy(tmp_path, b"}", protocol=laughs)
    else:
        path = _legacy(tmp_path, hostile_files.storage_reference(laughs))
    started = time.perf_counter()
    with pytest.raises(WeightFileError) as raised:
        read_state_dict(path)
    assert time.perf_counter() - started < 10
    message = str(raised.value)
    assert where in message and "([([([" in message, message
    assert len(message) < 400, message


@pytest.mark.parametrize("text_line", [True, False], ids=["LONG", "LONG4"])
def test_integers_of_thousands_of_digits_are_refused(tmp_path, text_line):
    path = _legacy(tmp_path, hostile_files.long_integer_dict(6_000, text_line))
    with pytest.raises(WeightFileError) as raised:
        read_state_dict(path)
    message = str(raised.value)
    assert path in message and "an integer of" in message, message
    assert ("6,000 digits" if text_line else "2,492 bytes") in message


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_tensors_are_refused_by_name(tmp_path, bad):
    values = VALUES.copy()
    values[1, 2] = bad
    path = hostile_files.torch_file(
        str(tmp_path / "w.pkl"), {"encoder.weight": {"values": values}}
    )
    with pytest.raises(WeightFileError) as raised:
        read_state_dict(path)
    message = str(raised.value)
    assert "tensor 'encoder.weight' holds 1 NaN or infinite values" in message


def test_messages_format_hostile_values_within_a_bound():
    laughs = []
    for _ in range(60):
        laughs = [laughs, laughs]
    text = shown(laughs)  # 2**60 items; formatted: 60 characters
    assert (
        text
        == "[[[[[[..., ...], [..., ...]], [[..., ...], [..., ...]]], " + ("...")
    )
    assert shown(10**6000) == "<an integer of about 6,001 digits>"
    assert shown(-(10**70)) == "<a negative integer of about 71 digits>"
    assert shown("x" * 10**7) == "'" + "x" * 56 + "..."
    assert shown((1,)) == "(1,)" and shown({"a": [1, 2]}) == "{'a': [1, 2]}"
