"""A package's public names, imported on first use.

The packages of keras_elmo re-export names whose modules load TensorFlow,
beside TensorFlow-free modules that the command line's `--help` and the
NumPy-only readers import. A package's `__init__` therefore names its
exports as strings, and `lazy_exports` gives it the module `__getattr__`
and `__dir__` (PEP 562) that import each on first use.
"""

import importlib


def lazy_exports(namespace, exports, submodules=()):
    """`(__getattr__, __dir__)` for a package that loads its names late.

    Args:
        namespace: dict. The package's `globals()`; a name, once loaded,
            is kept there.
        exports: dict. Public name -> the module that defines it.
        submodules: tuple of str. Subpackages reached as attributes.

    Returns:
        The functions to bind as the package's `__getattr__` and
        `__dir__`.

    Example:

    >>> namespace = {"__name__": "example"}
    >>> getattr_, dir_ = lazy_exports(namespace, {"sqrt": "math"})
    >>> getattr_("sqrt")(4.0), "sqrt" in namespace
    (2.0, True)
    >>> dir_()
    ['__name__', 'sqrt']
    """
    package = namespace["__name__"]

    def __getattr__(name):
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted({*namespace, *exports, *submodules})

    return __getattr__, __dir__
