"""The package's imports run one way: no cycle, and layers/ import nothing
above layers/, data/, characters and errors.

Every `import` of every module is read with `ast`, at module level and
inside functions alike. An import of `keras_elmo.a.b` depends on the
module `keras_elmo.a.b`, not on the package `keras_elmo.a` (its
`__init__` only re-exports); `from keras_elmo.a import name` depends on
`keras_elmo.a.name` when that is a module, else on the package.
"""

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(__file__)), "keras_elmo")
# What layers/ may import.
LAYER_IMPORTS = (
    "keras_elmo.layers",
    "keras_elmo.data",
    "keras_elmo.characters",
    "keras_elmo.errors",
)
# The one import above layers/: `ELMoEmbedding("original")` resolves a
# string through the one resolver, inside its constructor. The resolver
# imports the loaders, the loaders the layers; nothing imports
# elmo_embedding on the way, so it closes no cycle (checked below too).
LAYER_EXCEPTIONS = {("keras_elmo.layers.elmo_embedding", "keras_elmo.loading")}


def _module_names():
    names = {}
    for directory, _, files in os.walk(ROOT):
        for file in files:
            if not file.endswith(".py"):
                continue
            path = os.path.join(directory, file)
            relative = os.path.relpath(path, os.path.dirname(ROOT))
            parts = relative[: -len(".py")].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names[".".join(parts)] = path
    return names


MODULES = _module_names()


def _target(name):
    """The module an import of `name` depends on (the nearest module)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in MODULES else None


def _parse(module):
    with open(MODULES[module], encoding="utf-8") as f:
        return ast.parse(f.read())


def _re_exports(package):
    """`{name: module}` of what a package's `__init__` imports by name."""
    names = {}
    for node in _parse(package).body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = node.module
    return names


def _imports(module):
    tree = _parse(module)
    is_package = MODULES[module].endswith("__init__.py")
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rsplit(".", 1)[0]
                for _ in range(node.level - 1):
                    package = package.rsplit(".", 1)[0]
                base = f"{package}.{base}" if base else package
            names = [f"{base}.{alias.name}" for alias in node.names]
            if base in MODULES and MODULES[base].endswith("__init__.py"):
                # `from package import Name`: the module that defines it.
                exported = _re_exports(base)
                names = [
                    exported.get(alias.name, name)
                    for alias, name in zip(node.names, names)
                ]
        else:
            continue
        for name in names:
            if name.split(".")[0] != "keras_elmo":
                continue
            target = _target(name)
            if target is not None and target != module:
                found.add(target)
    return found


GRAPH = {module: _imports(module) for module in MODULES}


def _cycle(graph):
    """One import cycle of `graph` as a list of modules, or None."""
    state = {}

    def visit(module, path):
        state[module] = "open"
        path.append(module)
        for other in sorted(graph[module]):
            if state.get(other) == "open":
                return path[path.index(other) :] + [other]
            if other not in state:
                cycle = visit(other, path)
                if cycle:
                    return cycle
        state[module] = "done"
        path.pop()
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module, [])
            if cycle:
                return cycle
    return None


def _without_package_roots(graph):
    # A package's __init__ re-exports its modules (and the top package
    # loads its public names lazily): it is a door, not a dependency.
    packages = {m for m, p in MODULES.items() if p.endswith("__init__.py")}
    return {
        module: {t for t in targets if t not in packages}
        for module, targets in graph.items()
        if module not in packages
    }


def test_the_graph_sees_the_imports_inside_functions():
    # The source kinds import their formats inside functions only.
    assert (
        "keras_elmo.formats.bilm_tf"
        in GRAPH["keras_elmo.sources.official_files"]
    )
    assert "keras_elmo.loading" in GRAPH["keras_elmo.layers.elmo_embedding"]


def test_no_import_cycle():
    assert _cycle(_without_package_roots(GRAPH)) is None


def test_the_cycle_finder_finds_one():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert _cycle(graph) == ["a", "b", "c", "a"]


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if m.startswith("keras_elmo.layers"))
)
def test_layers_import_nothing_above_them(module):
    upward = {
        target
        for target in GRAPH[module]
        if not target.startswith(LAYER_IMPORTS)
        and (module, target) not in LAYER_EXCEPTIONS
    }
    assert not upward, f"{module} imports {sorted(upward)}"


def test_pretrained_imports_no_loader():
    for module in MODULES:
        if module.startswith("keras_elmo.pretrained"):
            above = {
                t
                for t in GRAPH[module]
                if t.startswith(("keras_elmo.formats", "keras_elmo.layers"))
            }
            assert not above, f"{module} imports {sorted(above)}"


def test_formats_do_not_call_up_into_the_resolver():
    for module in MODULES:
        if module.startswith(
            (
                "keras_elmo.formats",
                "keras_elmo.pretrained",
                "keras_elmo.sources",
            )
        ):
            assert "keras_elmo.loading" not in GRAPH[module], module


def test_the_resolver_loads_no_tensorflow_until_it_loads_a_bilm():
    import subprocess
    import sys

    from tests.helpers import subprocess_env

    code = (
        "import sys, keras_elmo.loading, keras_elmo.sources, "
        "keras_elmo.cli.pretrained; "
        "print('tensorflow' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        check=True,
    )
    assert out.stdout.strip() == "False"
