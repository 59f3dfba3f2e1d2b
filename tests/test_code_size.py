"""Modules and functions stay small enough to read whole.

Every module of the three packages is under `MAX_MODULE_LINES` lines and every
function (a method or a nested function too, counted with its docstring)
under `MAX_FUNCTION_LINES`, except those of `EXCEPTIONS`, each with its
reason: a module that grows past the bound is split by idea, a function
into named steps.
"""

import ast
import os

REPOSITORY = os.path.dirname(os.path.dirname(__file__))
PACKAGES = ("elmo_core", "keras_elmo", "keras_elmo_cli")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 100
# (module path from the repository, qualified function name) allowed to be
# longer, each with its reason.
EXCEPTIONS = {
    # Its body is two lines; the rest is its 45 keyword arguments, one a
    # setting of a run, and the docstring of each (the API reference).
    ("keras_elmo/runs/train.py", "train"),
}


def _modules():
    for package in PACKAGES:
        root = os.path.join(REPOSITORY, package)
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    relative = os.path.relpath(path, REPOSITORY)
                    yield relative.replace(os.sep, "/"), path


def _functions(tree, prefix=""):
    """`(qualified name, lines)` of every function in `tree`, nested ones
    and methods included."""
    for node in ast.iter_child_nodes(tree):
        name = prefix
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            yield name, node.end_lineno - node.lineno + 1
        elif isinstance(node, ast.ClassDef):
            name = f"{prefix}{node.name}"
        yield from _functions(node, f"{name}." if name != prefix else prefix)


def _sizes():
    modules, functions = {}, {}
    for module, path in _modules():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        modules[module] = len(text.splitlines())
        for name, lines in _functions(ast.parse(text)):
            functions[(module, name)] = lines
    return modules, functions


MODULES, FUNCTIONS = _sizes()


def test_every_module_is_under_the_bound():
    long = {m: n for m, n in MODULES.items() if n >= MAX_MODULE_LINES}
    assert not long, f"split these by idea: {long}"


def test_every_function_is_under_the_bound():
    long = {
        key: n
        for key, n in FUNCTIONS.items()
        if n >= MAX_FUNCTION_LINES and key not in EXCEPTIONS
    }
    assert not long, f"write these as named steps: {long}"


def test_every_exception_is_still_needed():
    for key in EXCEPTIONS:
        assert FUNCTIONS.get(key, 0) >= MAX_FUNCTION_LINES, key


def test_the_count_sees_methods_and_nested_functions():
    tree = ast.parse(
        "class A:\n"
        "    def f(self):\n"
        "        def g():\n"
        "            pass\n"
        "def h():\n"
        "    pass\n"
    )
    assert dict(_functions(tree)) == {"A.f": 3, "A.f.g": 2, "h": 2}
