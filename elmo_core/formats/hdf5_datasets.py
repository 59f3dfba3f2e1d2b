"""Datasets of an untrusted HDF5 weight file, checked before they are read.

An HDF5 file can hold more than arrays of its own: a link to a dataset
of another file (external link), a soft link, a virtual dataset assembled
from other files, a dataset whose bytes lie in external raw files, and
values of any type (complex, strings, compounds). A weight file holds
none of these, and reading one would read another file or lose data
silently (a complex weight cast to float drops its imaginary part). So a
weight dataset must be reached through hard links only, store its own
bytes, hold real numbers, and (once read) finite values; anything else is
refused by dataset name.
"""

import h5py
import numpy as np

from elmo_core.errors import WeightFileError

# NumPy kinds of real numbers (float, signed and unsigned integer).
_NUMERIC_KINDS = "fiu"


def link_problem(f, name):
    """None if every link on the way to `name` is a hard link inside the
    file, else what the first other one is."""
    parts = [p for p in name.split("/") if p]
    for i in range(1, len(parts) + 1):
        path = "/".join(parts[:i])
        link = f.get(path, getlink=True)
        if link is None:
            return None  # missing: the caller says what it expected
        if isinstance(link, h5py.ExternalLink):
            return (
                f"{path!r} is an external link to {link.path!r} in "
                f"{link.filename!r}"
            )
        if isinstance(link, h5py.SoftLink):
            return f"{path!r} is a soft link to {link.path!r}"
    return None


def checked_dataset(f, name, path):
    """`f[name]` if it is a dataset a weight may be read from, None if
    the file has no dataset `name`; `WeightFileError` for a link, a
    virtual or externally stored dataset, or values that are not real
    numbers. `path`: the file's name, for messages."""
    problem = link_problem(f, name)
    if problem is not None:
        raise WeightFileError(
            f"{path}: {problem}; a weight file holds its datasets itself. "
            "Refusing to read it (it would read another file)."
        )
    item = f.get(name)
    if not isinstance(item, h5py.Dataset):
        return None
    if item.is_virtual or item.external:
        how = "virtual" if item.is_virtual else "stored in external files"
        raise WeightFileError(
            f"{path}: dataset {name!r} is {how}; a weight file holds its "
            "datasets' values itself. Refusing to read it."
        )
    if item.dtype.kind not in _NUMERIC_KINDS:
        raise WeightFileError(
            f"{path}: dataset {name!r} holds {item.dtype} values; expected "
            "real numbers (float32). The file is damaged or not a weight "
            "file."
        )
    return item


def read_weights(item, name, path):
    """The values of a checked dataset as float32, refused if any is NaN
    or infinite."""
    try:
        value = np.asarray(item[...], dtype="float32")
    except (OSError, ValueError) as e:
        raise WeightFileError(
            f"Could not read dataset {name!r} of {path} ({e}); the file "
            "looks damaged."
        ) from None
    finite = np.isfinite(value)
    if not finite.all():
        raise WeightFileError(
            f"{path}: dataset {name!r} holds {value.size - finite.sum():,} "
            "NaN or infinite values; a weight must be finite. The file is "
            "damaged (or comes from a diverged training run)."
        )
    return value
