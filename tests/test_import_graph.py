"""The packages' imports run one way: down a table of floors, no cycle.

`FLOORS` is the architecture, lowest first, across the three packages
(`elmo_core` below `keras_elmo` below `keras_elmo_cli`): a module imports
modules of its own floor or lower, never higher, except the pairs of
`EXCEPTIONS`, each with its reason; a module's floor is that of its top
folder or top-level module (`layers/backends/` is part of `layers/`).
Same-floor imports are free, and the cycle test keeps them one-way.

Every `import` of every module is read with `ast`, at module level and
inside functions alike. An import of `keras_elmo.a.b` depends on the
module `keras_elmo.a.b`, not on the package `keras_elmo.a` (its
`__init__` only re-exports); `from keras_elmo.a import name` depends on
`keras_elmo.a.name` when that is a module, else on the package.
"""

import ast
import os

import pytest

REPOSITORY = os.path.dirname(os.path.dirname(__file__))
# The three packages: elmo_core (no Keras, no TensorFlow) at the bottom,
# keras_elmo on it, the command line on both.
PACKAGES = ("elmo_core", "keras_elmo", "keras_elmo_cli")
# The floors, lowest first: the folders and top-level modules of the
# packages (the command line is one floor, whole).
FLOORS = (
    # Facts: the error family and the checks of user values, character
    # ids, what lies at a user path and atomic files, the version,
    # progress lines. NumPy at most.
    (
        "elmo_core.errors",
        "elmo_core.characters",
        "elmo_core.files",
        "elmo_core.version",
        "elmo_core.progress",
    ),
    # Text in, files of other programs read within bounds, what defines a
    # training run, the preset table and cache.
    (
        "elmo_core.text",
        "elmo_core.formats",
        "elmo_core.settings",
        "elmo_core.pretrained",
    ),
    # Protein FASTA, tokens to ids on the host, raw text as a corpus.
    ("elmo_core.proteins", "elmo_core.ids", "elmo_core.preparation"),
    # Exported files run without TensorFlow.
    ("elmo_core.runtime",),
    # The files embedding writes and reads.
    ("elmo_core.embedding_files",),
    # keras_elmo's lowest floor: the names of elmo_core that Keras code
    # takes from keras_elmo.
    (
        "keras_elmo.errors",
        "keras_elmo.pretrained",
        "keras_elmo.characters",
        "keras_elmo.runtime",
    ),
    # Ids and batches inside TensorFlow; sparse optimizers.
    ("keras_elmo.data", "keras_elmo.optimizers"),
    # The Keras layers, their token encoders and backend seam.
    ("keras_elmo.layers",),
    # The training model; weight files in and out as Keras biLMs.
    ("keras_elmo.models", "keras_elmo.formats"),
    # The machinery of a run: run directory, fit loop, distribution;
    # the count baselines a run is measured against.
    ("keras_elmo.training", "keras_elmo.baselines"),
    # The one resolver and the kinds of biLM source it resolves.
    ("keras_elmo.loading", "keras_elmo.sources"),
    # What users call to train, export and embed: runs from what a user
    # gives, the exports, text embedded with a Keras biLM.
    ("keras_elmo.runs", "keras_elmo.export", "keras_elmo.corpus"),
    # The Apache Beam adapters of corpus embedding.
    ("keras_elmo.beam",),
    # The command line.
    ("keras_elmo_cli",),
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
    for package in PACKAGES:
        names.update(_package_modules(os.path.join(REPOSITORY, package)))
    return names


def _package_modules(root):
    names = {}
    for directory, _, files in os.walk(root):
        for file in files:
            if not file.endswith(".py"):
                continue
            path = os.path.join(directory, file)
            relative = os.path.relpath(path, REPOSITORY)
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
            if name.split(".")[0] not in PACKAGES:
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
    # A package's __init__ re-exports its modules: it is a door, not a
    # dependency.
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


def _entry(module):
    """The `FLOORS` entry of `module`: its package and top folder or
    top-level module (`keras_elmo.layers.backends.cell` ->
    `keras_elmo.layers`), the command line whole; None for a package's
    door (`keras_elmo`)."""
    parts = module.split(".")
    if parts[0] == "keras_elmo_cli":
        return "keras_elmo_cli"
    return None if len(parts) == 1 else ".".join(parts[:2])


def floor(module):
    """The index in `FLOORS` of `module`; None for a package's door."""
    entry = _entry(module)
    if entry is None:
        return None
    for index, names in enumerate(FLOORS):
        if entry in names:
            return index
    raise AssertionError(
        f"{module} is on no floor: add {entry} to FLOORS (and to the "
        "floors table of docs/architecture.md)"
    )


def _upward(module, targets):
    """The imports of `module` (`targets`) above its floor, exceptions
    left out."""
    own = floor(module)
    if own is None:  # a package's door: it names what lies below it
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
        "elmo_core.ids.host_ids",
        {"keras_elmo.layers.token_encoders.word_encoder", "elmo_core.errors"},
    ) == ["keras_elmo.layers.token_encoders.word_encoder"]
    assert (
        _upward("keras_elmo.layers.backends.gates", {"keras_elmo.layers.bilm"})
        == []
    )
    assert (
        _upward("keras_elmo.sources.run_folder", {"keras_elmo.loading"}) == []
    )
    assert _upward("elmo_core.errors", {"keras_elmo_cli"}) == ["keras_elmo_cli"]


def test_every_exception_is_still_needed():
    for module, target in EXCEPTIONS:
        assert target in GRAPH[module], (module, target)
        assert floor(target) > floor(module), (module, target)


def test_at_most_one_exception():
    # keras-hub has the one too: a layer that resolves a preset name.
    assert len(EXCEPTIONS) <= 1, sorted(EXCEPTIONS)


def _folder(module):
    """`keras_elmo.layers.backends.gates` -> `keras_elmo.layers`."""
    return _entry(module)


def test_the_folders_form_a_chain():
    # At folder level (every module of a folder taken as one), the
    # imports, the one exception left out, close no cycle.
    folders = {}
    for module, targets in _without_package_roots(GRAPH).items():
        if _folder(module) is None:
            continue
        edges = folders.setdefault(_folder(module), set())
        for target in targets:
            if (module, target) in EXCEPTIONS or _folder(target) is None:
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


# === The floors table of the architecture page ===

ARCHITECTURE = os.path.join(REPOSITORY, "docs", "architecture.md")
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
    """The folders (`keras_elmo/layers/`) and top-level modules
    (`keras_elmo/loading.py`) of the packages; the command line whole
    (`keras_elmo_cli/`)."""
    found = {"keras_elmo_cli/"}
    for package in ("elmo_core", "keras_elmo"):
        root = os.path.join(REPOSITORY, package)
        for entry in os.listdir(root):
            path = os.path.join(root, entry)
            if os.path.isfile(os.path.join(path, "__init__.py")):
                found.add(f"{package}/{entry}/")
            elif entry.endswith(".py") and entry != "__init__.py":
                found.add(f"{package}/{entry}")
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
            module = entry.rstrip("/").removesuffix(".py")
            assert floor(module.replace("/", ".")) == index, entry
