"""The pretrained-model table, the cache and downloads, as Keras code names
them (`keras_elmo.pretrained`): the names of `elmo_core.pretrained`, where
they are defined (importable without Keras), re-exported whole."""

from elmo_core.pretrained import *  # noqa: F403
from elmo_core.pretrained import __all__  # noqa: F401
