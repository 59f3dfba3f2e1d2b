"""The code blocks of the documentation (README.md and docs/), read once.

`tests/test_docs.py` runs them (TensorFlow blocks, `keras-elmo`
commands); `tests/backend_checks/check_backend.py` runs the blocks that
pick the JAX or PyTorch backend, in a process of that backend. Both use
the rules here:

- a block whose line above is `<!-- illustrative: REASON -->` is not run
  (the reason is in the page, for the reader of its source);
- a Python block that sets `os.environ["KERAS_BACKEND"]` runs on that
  backend;
- `print(...)  # TEXT` promises what the print shows: a printed line (in
  the order of the prints) is TEXT, or TEXT begins with it and goes on
  with a comment (`# 39: the mix and every biLM weight`).
"""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Every page a user reads; the API pages hold only mkdocstrings
# directives, whose examples run as doctests.
PAGES = ["README.md"] + sorted(
    os.path.relpath(path, ROOT)
    for path in glob.glob(os.path.join(ROOT, "docs", "*.md"))
)
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
ILLUSTRATIVE = re.compile(r"<!-- illustrative: (.+?) -->\n$")
BACKEND = re.compile(r'os.environ\["KERAS_BACKEND"\] = "(\w+)"')
PROMISE = re.compile(r"^print\(.*\)  # (.+)$")


class Block:
    """One fenced code block of a page.

    `language` is the fence's word (`python`, `bash`, `text`, ...),
    `line` the line of the fence, `reason` the illustrative marker's
    reason (None: the block runs) and `backend` the Keras backend a
    Python block picks (`tensorflow` unless it sets another).
    """

    def __init__(self, page, line, language, code, reason):
        self.page = page
        self.line = line
        self.language = language
        self.code = code
        self.reason = reason
        chosen = BACKEND.search(code) if language == "python" else None
        self.backend = chosen.group(1) if chosen else "tensorflow"

    @property
    def where(self):
        return f"{self.page}, block at line {self.line}"

    def promises(self):
        """What each top-level `print(...)  # TEXT` line promises, in
        order: `[TEXT, ...]` (None for a print without one)."""
        found = []
        for line in self.code.splitlines():
            if line.startswith("print("):
                match = PROMISE.match(line)
                found.append(match.group(1) if match else None)
        return found


def read_page(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


def blocks(page, text=None):
    """The fenced code blocks of `page` (a path under ROOT), in order."""
    text = read_page(page) if text is None else text
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()]
        marker = ILLUSTRATIVE.search(before)
        found.append(
            Block(
                page,
                before.count("\n") + 1,
                match.group(1),
                match.group(2),
                marker and marker.group(1),
            )
        )
    return found


def _keeps(promise, line):
    return promise == line or (
        promise.startswith(line) and not promise[len(line)].isalnum()
    )


def check_promises(block, printed):
    """Raises AssertionError unless the lines `printed` by `block` keep
    its promises, in order (other lines, such as download progress, may
    come between them)."""
    lines = iter(printed)
    for promise in block.promises():
        if promise is None:
            continue
        kept = any(_keeps(promise, line) for line in lines)
        assert kept, (
            f"{block.where}: no printed line says {promise!r}: {printed}"
        )


def run_python(block, namespace):
    """Runs a Python `block` in `namespace` and checks its promises."""
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.code, block.where, "exec"), namespace)  # noqa: S102
    check_promises(block, printed.getvalue().splitlines())


def other_backend_blocks(backend):
    """The runnable Python blocks of every page that pick `backend`."""
    return [
        block
        for page in PAGES
        for block in blocks(page)
        if block.language == "python"
        and block.backend == backend
        and block.reason is None
    ]
