"""Run a function once a module has been imported, whoever imports it.

`import keras_elmo` must make the package's Keras classes loadable by
`keras.saving.load_model` without importing Keras itself: the command
line's `--help`, `keras_elmo.characters` and `keras_elmo.runtime` run
without TensorFlow. So the package registers its classes as soon as Keras
is there: at once when it already is, else right after Keras is imported.

"Right after" waits for every import of the package's own modules that
is running in this thread: when one of them imports Keras first
(`import keras_elmo.layers.bilm` in a new process), the classes are
imported once that module is complete, never from inside its partly run
body (a cycle would find its names missing).
"""

import importlib.abc
import sys
import threading


class _Watcher(importlib.abc.MetaPathFinder):
    """Counts the imports of watched modules that are running in each
    thread; calls `callback` once `trigger` is imported and none runs."""

    def __init__(self, trigger, package, callback):
        self.trigger = trigger
        self.package = package
        self.callback = callback
        self.running = threading.local()
        self.done = False

    def watches(self, name):
        return name == self.trigger or name.startswith(self.package + ".")

    def find_spec(self, name, path, target=None):
        if self.done or not self.watches(name):
            return None
        spec = _find_spec_elsewhere(self, name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _CountingLoader(spec.loader, self)
        return spec

    def enter(self):
        self.running.depth = getattr(self.running, "depth", 0) + 1

    def leave(self):
        self.running.depth -= 1
        if self.running.depth == 0 and self.trigger in sys.modules:
            self.fire()

    def fire(self):
        if self.done:
            return
        self.done = True
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self.callback()


def _find_spec_elsewhere(watcher, name, path, target):
    """The spec the other finders of `sys.meta_path` give `name`."""
    for finder in list(sys.meta_path):
        if finder is watcher or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(name, path, target)
        if spec is not None:
            return spec
    return None


class _CountingLoader(importlib.abc.Loader):
    """A module's own loader, its body's run counted by the watcher; every
    other attribute (source, resources) is the original loader's."""

    def __init__(self, loader, watcher):
        self._loader = loader
        self._watcher = watcher

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # The module's own loader is what it keeps (`__loader__`,
        # `__spec__.loader`): source lookups, `reload` and pickling see
        # no trace of the count.
        module.__spec__.loader = self._loader
        module.__loader__ = self._loader
        self._watcher.enter()
        try:
            self._loader.exec_module(module)
        finally:
            self._watcher.leave()


def when_imported(trigger, package, callback):
    """Calls `callback()` once, when module `trigger` is imported and no
    module of `package` is being imported in this thread.

    At once when `trigger` is already imported; else after the import of
    `trigger`, or of the last module of `package` running when it came.

    Args:
        trigger: str. The module to wait for (`"keras"`).
        package: str. The package whose imports must complete first.
        callback: callable. Called once, without arguments.

    Example:

    >>> import math
    >>> calls = []
    >>> when_imported("math", "nothing", lambda: calls.append("now"))
    >>> calls
    ['now']
    """
    if trigger in sys.modules:
        callback()
        return
    sys.meta_path.insert(0, _Watcher(trigger, package, callback))
