"""Deprecated: `elmo_core.runtime` (importable without Keras or
TensorFlow, which this old name no longer is). This module will be
removed."""

import warnings

from elmo_core.runtime import *  # noqa: F403
from elmo_core.runtime import __all__  # noqa: F401

warnings.warn(
    "keras_elmo.runtime moved to elmo_core.runtime; the old name will be "
    "removed.",
    DeprecationWarning,
    stacklevel=2,
)
