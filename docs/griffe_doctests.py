"""A griffe extension for the API pages: docstring examples as code.

The package's docstrings follow Keras's form: `Example:`, a blank line,
then `>>>` lines at the docstring's own indentation, which Markdown
would read as prose (`out["x"][0]` as a link). Each run of `>>>` lines
and their output, up to a blank line, becomes a fenced `pycon` block.
mkdocs.yml loads this file (mkdocstrings' `extensions` option); the site
does not include it (`exclude_docs`).
"""

import griffe


def fence_examples(text):
    """`text` with each doctest block fenced as `pycon` (tests/test_docs.py
    checks it)."""
    out = []
    inside = False
    for line in text.splitlines():
        if not inside and line.lstrip().startswith(">>>"):
            out.append(line[: len(line) - len(line.lstrip())] + "```pycon")
            inside = True
        elif inside and not line.strip():
            out.append(out[-1][: len(out[-1]) - len(out[-1].lstrip())] + "```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    """Fences the doctest blocks of every docstring griffe reads."""

    def on_object(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = fence_examples(obj.docstring.value)
