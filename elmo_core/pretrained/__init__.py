"""Pretrained biLMs by name or URL, downloaded once into a local cache.

`PRESETS` is the one table of published models (`preset_table.py`);
`get_preset` the one place that turns a name into a preset (and suggests
close names for a typo); `presets()` lists them with what the cache holds
(`keras-elmo presets`), and `download` fetches them ahead of use
(`keras-elmo download`, `remote.py`). A
preset name, or an `http(s)://` URL of one file, given to
`keras_elmo.load_bilm`, `ELMoEmbedding` or the command line is resolved
here to local files: they are downloaded on first use into the cache
directory and read from there afterwards, without network.

A download is resumable (HTTP `Range`), retried with back-off on transient
answers (`downloader.py`), written atomically (the cached name appears only
when the file is complete and verified) and verified: its size, its
SHA-256 where the table records one, that it is not an HTML page, and that
it loads (the JSON parses, the HDF5 file opens and every dataset reads,
the zip archive passes its bounds and CRC checks, `archive.py`). Its size
and SHA-256 then go into the cache's own index; every use checks the size
against it, `keras-elmo download --verify` the hash, and a damaged copy is
fetched again (`cache/`: where a file lives, what is recorded about it,
whether it is whole).

The cache directory is `$KERAS_ELMO_HOME` when that is set, else
`keras_elmo/` under the Keras home (`$KERAS_HOME`, default `~/.keras`),
following `keras.utils.get_file`'s rules. A URL
`https://host/a/b/file.hdf5` is cached at `<cache>/host/a/b/file.hdf5`, so a
preset and the same URL share one copy, and a file can be put there by hand.
Behind a firewall, `$KERAS_ELMO_MIRROR` or `set_mirror` fetch the
publishers' files from a mirror or a local folder (`mirror.py`); the cache
location stays that of the publisher's URL.
"""

from elmo_core.pretrained.cache import CACHE_VARIABLE
from elmo_core.pretrained.cache import cache_dir
from elmo_core.pretrained.cache import cache_path
from elmo_core.pretrained.cache import check_url_scheme
from elmo_core.pretrained.cache import is_url
from elmo_core.pretrained.listing import presets
from elmo_core.pretrained.local_files import cached_file
from elmo_core.pretrained.local_files import cached_files
from elmo_core.pretrained.local_files import fetch
from elmo_core.pretrained.local_files import local_file
from elmo_core.pretrained.mirror import MIRROR_VARIABLE
from elmo_core.pretrained.mirror import mirror_url
from elmo_core.pretrained.mirror import set_mirror
from elmo_core.pretrained.preset_table import PRESETS
from elmo_core.pretrained.preset_table import Preset
from elmo_core.pretrained.preset_table import PresetFile
from elmo_core.pretrained.preset_table import get_preset
from elmo_core.pretrained.remote import download

__all__ = [
    "CACHE_VARIABLE",
    "MIRROR_VARIABLE",
    "PRESETS",
    "Preset",
    "PresetFile",
    "cache_dir",
    "cache_path",
    "cached_file",
    "cached_files",
    "check_url_scheme",
    "download",
    "fetch",
    "get_preset",
    "is_url",
    "local_file",
    "mirror_url",
    "presets",
    "set_mirror",
]
