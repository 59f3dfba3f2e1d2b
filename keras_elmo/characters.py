"""Deprecated: `elmo_core.characters` (importable without Keras or
TensorFlow, which this old name no longer is). This module will be
removed."""

import warnings

from elmo_core.characters import *  # noqa: F403
from elmo_core.characters import __all__  # noqa: F401

warnings.warn(
    "keras_elmo.characters moved to elmo_core.characters; the old name will "
    "be removed.",
    DeprecationWarning,
    stacklevel=2,
)
