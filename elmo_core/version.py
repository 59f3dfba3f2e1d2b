"""The package version, in one place (setup.cfg reads it).

Example:

>>> keras_elmo.__version__ == elmo_core.version.__version__
True
>>> len(keras_elmo.__version__.split("."))
3
"""

__version__ = "0.1.0"
