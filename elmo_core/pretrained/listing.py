"""The pretrained models and what the cache holds of each: `presets()`
(what `keras-elmo presets` lists)."""

import os

from elmo_core.pretrained.cache import read_index
from elmo_core.pretrained.local_files import cached_files
from elmo_core.pretrained.preset_table import PRESETS


def presets():
    """The pretrained models of `PRESETS`, each with its download size and
    what the cache holds of it.

    Returns:
        A list of dicts, one a preset in the table's order: `name`,
        `kind`, `language` and `description` (as in `Preset`); `size`,
        the download size in bytes (from the table, the cache index or
        the cached copy, else the table's estimate; None where nothing
        tells it); `approximate`, whether `size` is that estimate (exact
        once downloaded); `cached`, `"yes"`, `"no"` or `"partly"`; and
        `files`, `{role: cached path or None}`.

    Example (an empty cache):

    >>> import os, tempfile, unittest.mock
    >>> cache = {elmo_core.pretrained.CACHE_VARIABLE: tempfile.mkdtemp()}
    >>> with unittest.mock.patch.dict(os.environ, cache):
    ...     listing = elmo_core.pretrained.presets()
    >>> small = next(row for row in listing if row["name"] == "small")
    >>> small["kind"], small["language"], small["cached"]
    ('bilm-tf', 'en', 'no')
    """
    recorded = read_index()
    listing = []
    for name, preset in PRESETS.items():
        files = cached_files(name)
        count = sum(path is not None for path in files.values())
        size, approximate = _size(preset, files, recorded)
        listing.append(
            {
                "name": name,
                "kind": preset.kind,
                "language": preset.language,
                "description": preset.description,
                "size": size,
                "approximate": approximate,
                "cached": {0: "no", len(files): "yes"}.get(count, "partly"),
                "files": files,
            }
        )
    return listing


def _size(preset, cached, recorded):
    """`(bytes, approximate)`: the download size of `preset`, each file's
    from the table, the cache index (`recorded`) or its cached copy, else
    its approximate size; `(None, False)` when a file (other than a small
    JSON file) has none of them."""
    total, approximate = 0, False
    for role, record in preset.files.items():
        if record.size is not None:
            total += record.size
        elif cached[role] is not None and record.url in recorded:
            total += recorded[record.url].get("size", 0)
        elif cached[role] is not None and os.path.isfile(cached[role]):
            total += os.path.getsize(cached[role])
        elif record.approximate_size is not None:
            total += record.approximate_size
            approximate = True
        elif not record.url.endswith(".json"):
            return None, False
    return total, approximate
