"""The cache of downloaded files, in three questions:

- where a file lives (`location.py`): the cache directory and the path
  of a URL in it (of its unpacked folder, for an archive);
- what is recorded about it (`index.py`): `<cache>/index.json`, the size
  and SHA-256 of each file as it was verified after its download;
- whether it is whole (`integrity.py`): the cached copy checked against
  that record on every use (the size; the SHA-256 when asked), or, found
  without a record, checked in full once and then recorded.
"""

from elmo_core.pretrained.cache.index import read_index
from elmo_core.pretrained.cache.integrity import MISSING
from elmo_core.pretrained.cache.integrity import cache_problem
from elmo_core.pretrained.cache.location import CACHE_VARIABLE
from elmo_core.pretrained.cache.location import cache_dir
from elmo_core.pretrained.cache.location import cache_path
from elmo_core.pretrained.cache.location import check_url_scheme
from elmo_core.pretrained.cache.location import is_url
from elmo_core.pretrained.cache.location import local_path

__all__ = [
    "CACHE_VARIABLE",
    "MISSING",
    "cache_dir",
    "cache_path",
    "cache_problem",
    "check_url_scheme",
    "is_url",
    "local_path",
    "read_index",
]
