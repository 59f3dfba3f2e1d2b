"""The package's imports run one way: down a table of floors, no cycle.

`FLOORS` is the architecture, lowest first: a module imports modules of
its own floor or lower, never higher, except the pairs of `EXCEPTIONS`,
each with its reason; a module's floor is that of its top folder or
top-level module (`layers/backends/` is part of `layers/`). Same-floor
imports are free, and the cycle test keeps them one-way.

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
# The floors, lowest first: folders and top-level modules of keras_elmo.
FLOORS = (
    # Facts: the error family and checks of user values, which argument
    # an error is about and how a value shows in a message (errors/);
    # character ids (characters/); what lies at a user path, atomic
    # files, the checked zip reader (files/); the names loaded on first
    # use, the backend probe, progress lines, the version (utils/).
    # NumPy at most.
    ("errors", "characters", "files", "utils"),
    # Text, tokenisations and vocabularies; raw text prepared as a corpus;
    # sparse optimizers; the preset table and cache.
    ("data", "preparation", "optimizers", "pretrained"),
    # The Keras layers, their token encoders, backend seam and size
    # arithmetic.
    ("layers",),
    # The training model; files in and out (weights, the run and export
    # folder layout, the exported-file format).
    ("models", "formats"),
    # Runs: config, sizes, the recipe, the run directory, the fit loop;
    # the count baselines a run is measured against.
    ("training", "baselines"),
    # The one resolver and the kinds of biLM source it resolves.
    ("loading", "sources"),
    # What runs a biLM over files or writes it for serving: exports, the
    # runtimes of exported files, and the embedding files.
    ("export", "runtime", "embedding_files"),
    # Corpus embedding: the engine-neutral embedder, and the Apache Beam
    # adapters that run it.
    ("corpus", "beam"),
    # The command line.
    ("cli",),
)
# (importer, imported) pairs that go up, each with its reason.
EXCEPTIONS = {
    # `ELMoEmbedding("original")` resolves a string through the one
    # resolver inside its constructor, as keras-hub's `from_preset` does.
    # The resolver imports the loaders, the loaders the layers; nothing
    # imports elmo_embedding on the way, so it closes no cycle (checked
    # below too).
    ("keras_elmo.layers.elmo_embedding", "keras_elmo.loading"),
}


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


def floor(module):
    """The index in `FLOORS` of `module`; None for the package itself."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    for index, names in enumerate(FLOORS):
        if parts[1] in names:
            return index
    raise AssertionError(
        f"{module} is on no floor: add its folder to FLOORS (and to the "
        "floors table of docs/architecture.md)"
    )


def _upward(module, targets):
    """The imports of `module` (`targets`) above its floor, exceptions
    left out."""
    own = floor(module)
    if own is None:  # the package: its names load lazily
        return []
    return sorted(
        target
        for target in targets
        if floor(target) is not None
        and floor(target) > own
        and (module, target) not in EXCEPTIONS
    )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_floors(module):
    upward = _upward(module, GRAPH[module])
    assert not upward, f"{module} (floor {floor(module)}) imports {upward}"


def test_the_floor_check_finds_an_upward_import():
    # data/ is below layers/, layers/backends/ is layers/, sources/ is
    # beside loading.
    assert _upward(
        "keras_elmo.data.host_ids",
        {"keras_elmo.layers.token_encoders.word_encoder", "keras_elmo.errors"},
    ) == ["keras_elmo.layers.token_encoders.word_encoder"]
    assert (
        _upward("keras_elmo.layers.backends.gates", {"keras_elmo.layers.bilm"})
        == []
    )
    assert (
        _upward("keras_elmo.sources.run_folder", {"keras_elmo.loading"}) == []
    )
    assert _upward("keras_elmo.errors", {"keras_elmo.cli"}) == [
        "keras_elmo.cli"
    ]


def test_every_exception_is_still_needed():
    for module, target in EXCEPTIONS:
        assert target in GRAPH[module], (module, target)
        assert floor(target) > floor(module), (module, target)


def test_at_most_one_exception():
    # keras-hub has the one too: a layer that resolves a preset name.
    assert len(EXCEPTIONS) <= 1, sorted(EXCEPTIONS)


def _folder(module):
    """`keras_elmo.layers.backends.gates` -> `layers`."""
    return module.split(".")[1]


def test_the_folders_form_a_chain():
    # At folder level (every module of a folder taken as one), the
    # imports, the one exception left out, close no cycle.
    folders = {}
    for module, targets in _without_package_roots(GRAPH).items():
        if module.count(".") == 0:
            continue
        edges = folders.setdefault(_folder(module), set())
        for target in targets:
            if (module, target) in EXCEPTIONS or target.count(".") == 0:
                continue
            if _folder(target) != _folder(module):
                edges.add(_folder(target))
    for edges in list(folders.values()):
        for folder in edges:
            folders.setdefault(folder, set())
    assert _cycle(folders) is None


def test_the_source_kinds_never_call_the_resolver():
    # sources/ shares the resolver's floor (the table allows it); the
    # resolver imports the kinds, so a kind never imports it.
    for module in MODULES:
        if module.startswith("keras_elmo.sources"):
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


# === The floors table of the architecture page ===

ARCHITECTURE = os.path.join(os.path.dirname(ROOT), "docs", "architecture.md")
_SECTION = "## The floors"


def _layout_rows():
    """`[(floor, [entry, ...])]` of docs/architecture.md's floors table:
    entries such as `layers/backends/` (a folder) and `errors.py` (a
    module)."""
    with open(ARCHITECTURE, encoding="utf-8") as f:
        text = f.read()
    assert _SECTION in text, f"docs/architecture.md lacks {_SECTION!r}"
    section = text.split(_SECTION, 1)[1].split("\n#", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0][:1].isdigit():
            continue
        entries = cells[1].split("`")[1::2]
        rows.append((int(cells[0].split()[0]), entries))
    return rows


def _tree():
    """The folders (`layers/backends/`) and top-level modules
    (`loading.py`) of the package."""
    found = set()
    for directory, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        relative = os.path.relpath(directory, ROOT)
        if relative != "." and "__init__.py" in files:
            found.add(relative.replace(os.sep, "/") + "/")
        if relative == ".":
            found |= {f for f in files if f.endswith(".py")} - {"__init__.py"}
    return found


def test_the_page_lists_every_folder_and_top_level_module():
    listed = [entry for _, entries in _layout_rows() for entry in entries]
    assert len(listed) == len(set(listed)), f"listed twice: {listed}"
    tree = _tree()
    assert not tree - set(listed), f"not in the page: {tree - set(listed)}"
    assert not set(listed) - tree, f"not in the tree: {set(listed) - tree}"


def test_the_page_shows_each_on_its_floor():
    for index, entries in _layout_rows():
        for entry in entries:
            module = "keras_elmo." + entry.rstrip("/").removesuffix(".py")
            assert floor(module.replace("/", ".")) == index, entry
