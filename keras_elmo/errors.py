"""The error family, as Keras code names it (`keras_elmo.errors`): the
names of `elmo_core.errors`, where they are defined (importable without
Keras), re-exported whole."""

from elmo_core.errors import *  # noqa: F403
from elmo_core.errors import __all__  # noqa: F401
