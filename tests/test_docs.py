"""The documentation runs as written: README.md and every page of docs/.

Each page's blocks run in order, Python in one namespace a page and
`keras-elmo` commands in this process (`keras_elmo_cli.main`), in a
fresh directory that holds the files the pages name: options.json /
weights.hdf5 (the bilm-tf fixture), vocab.txt, sentences.txt,
heldout.txt, corpus/, runs/mylm (a training run), with the pretrained
names "original" and "zh" served from 127.0.0.1: "original" as a model
of its real sizes with random weights (so that what a page prints of it
is what the real one prints), "zh" as the ELMoForManyLangs fixture (of
the real one's layers). Blocks that pick JAX or PyTorch run in
tests/test_backends.py; blocks marked illustrative say why in the page.
Every `keras-elmo` command of every page, run or not, is parsed by the
real parser, every `--flag` a page names exists, and `--help` of each
command ends with examples that parse.
"""

import functools
import os
import re
import shlex
import shutil

import pytest

from keras_elmo_cli import build_parser
from keras_elmo_cli import main
from tests import docs_blocks
from tests.docs_blocks import PAGES
from tests.docs_blocks import ROOT
from tests.docs_blocks import blocks
from tests.docs_blocks import read_page

SENTENCES = "The cat sat on the mat .\nHello world\n"


# === The files the pages name ===


def _zipped_folder(folder):
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(os.listdir(folder)):
            archive.write(os.path.join(folder, name), name)
    return buffer.getvalue()


def _serve_zh(monkeypatch, server):
    from elmo_core import pretrained
    from elmo_core.pretrained import Preset
    from elmo_core.pretrained import PresetFile
    from tests import model_server

    folder = os.path.join(ROOT, "tests/fixtures/elmo_for_many_langs/char_model")
    monkeypatch.setitem(model_server.FILES, "/m/zh.zip", _zipped_folder(folder))
    preset = Preset(
        name="zh",
        kind="elmo_for_many_langs",
        language="zh",
        description="the ELMoForManyLangs fixture model",
        files={"model": PresetFile(server.url + "/m/zh.zip", extract="zip")},
        source="tests/fixtures/elmo_for_many_langs",
    )
    monkeypatch.setitem(pretrained.PRESETS, "zh", preset)


@functools.lru_cache(maxsize=1)
def _original_files():
    """`(options bytes, weights bytes)` of a biLM of the original's sizes
    with random weights (374 MB), made once a process."""
    import tempfile

    import keras_elmo
    from elmo_core.settings.sizes import SIZES
    from keras_elmo.layers import BiLM

    # The published elmo_2x4096_512_2048cnn_2xhighway: 93.6M parameters.
    bilm = BiLM(**SIZES["original"])
    bilm.build()
    with tempfile.TemporaryDirectory() as folder:
        options = os.path.join(folder, "options.json")
        weights = os.path.join(folder, "weights.hdf5")
        keras_elmo.save_bilm(bilm, options, weights)
        with open(options, "rb") as f, open(weights, "rb") as g:
            return f.read(), g.read()


def _serve_original(monkeypatch, server):
    from elmo_core import pretrained
    from tests import model_server

    options, weights = _original_files()
    monkeypatch.setitem(model_server.FILES, "/m/options.json", options)
    monkeypatch.setitem(model_server.FILES, "/m/weights.hdf5", weights)
    preset = model_server.fixture_preset("original", server.url)
    monkeypatch.setitem(pretrained.PRESETS, "original", preset)


# Raw text, as `keras-elmo prepare` takes it: wrapped lines, paragraphs.
RAW_TEXT = (
    "It was a bright cold day in April. The clocks\n"
    "were striking thirteen.\n\n"
    'He said, "Don\'t go." She went anyway!\n\n'
    "Blank lines separate paragraphs. Each has sentences.\n"
)


def _work_files(directory):
    from tests.helpers import OPTIONS
    from tests.helpers import WEIGHTS

    os.symlink(os.path.join(ROOT, "tests"), os.path.join(directory, "tests"))
    shutil.copy(OPTIONS, os.path.join(directory, "options.json"))
    shutil.copy(WEIGHTS, os.path.join(directory, "weights.hdf5"))
    vocab = os.path.join(ROOT, "tests/fixtures/bilm-tf/model/vocab_test.txt")
    shutil.copy(vocab, os.path.join(directory, "vocab.txt"))
    for name in ("sentences.txt", "heldout.txt"):
        with open(os.path.join(directory, name), "w") as f:
            f.write(SENTENCES)
    os.mkdir(os.path.join(directory, "corpus"))
    for name in ("a.txt", "b.txt"):
        with open(os.path.join(directory, "corpus", name), "w") as f:
            f.write(SENTENCES)
    shutil.copytree(
        os.path.join(ROOT, "tests", "fixtures", "compat", "run"),
        os.path.join(directory, "runs", "mylm"),
    )
    os.mkdir(os.path.join(directory, "raw"))
    for name in ("one.txt", "two.txt"):
        with open(os.path.join(directory, "raw", name), "w") as f:
            f.write(RAW_TEXT)
    with open(os.path.join(directory, "raw.txt"), "w") as f:
        f.write('He said, "Don\'t go." She went.\nMr. Smith paid $5!\n')


# === Commands in bash blocks ===


def _command_lines(code):
    """The commands of a bash block: continuations joined (and lines
    inside an open quote), comments and blank lines left out."""
    commands, pending = [], ""
    for line in code.replace("\\\n", " ").splitlines():
        pending += line
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # a quote spans lines
            pending += "\n"
            continue
        pending = ""
        if words:
            commands.append(words)
    assert not pending, f"unclosed quote in {code!r}"
    return commands


def _keras_elmo_commands(words):
    """The `keras-elmo` invocations in one command line (after `&&`,
    `|` or `;` too), as argument lists."""
    found, current = [], []
    for word in words + ["&&"]:
        if word in ("&&", "|", ";", "||"):
            if current and current[0] == "keras-elmo":
                found.append(current[1:])
            current = []
        else:
            current.append(word)
    return found


def _page_blocks():
    return [(page, block) for page in PAGES for block in blocks(page)]


def _run_bash(block, capsys):
    for words in _command_lines(block.code):
        assert (
            words[0] == "keras-elmo" and len(_keras_elmo_commands(words)) == 1
        ), (
            f"{block.where}: `{shlex.join(words)}` is not one keras-elmo "
            "command; mark the block <!-- illustrative: REASON -->"
        )
        status = main(words[1:])
        output = capsys.readouterr()
        assert status == 0, (
            f"{block.where}: `{shlex.join(words)}` exited {status}: "
            f"{output.err[-2000:]}"
        )


# === Every page runs ===


# The pages whose blocks train, distil or export several models (35-45 s
# each): their commands' steps are tested on their own by default, the
# pages themselves with --run_large.
LARGE_PAGES = ("docs/deploy.md", "docs/distillation.md", "docs/migrating.md")


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(page, marks=pytest.mark.large)
        if page in LARGE_PAGES
        else page
        for page in PAGES
    ],
)
def test_page_runs(page, tmp_path, monkeypatch, capsys):
    from tests.helpers import BF16_RUNS
    from tests.model_server import serve_fixture_as

    if not BF16_RUNS and "mixed_bfloat16" in read_page(page):
        pytest.skip(
            "the page computes in bfloat16, which TensorFlow cannot run "
            "while ONEDNN_MAX_CPU_ISA holds oneDNN below it"
        )
    work = tmp_path / "work"
    work.mkdir()
    _work_files(str(work))
    monkeypatch.chdir(work)
    namespace = {}
    with serve_fixture_as(monkeypatch, tmp_path / "cache") as s:
        if "original" in read_page(page):
            _serve_original(monkeypatch, s)
        _serve_zh(monkeypatch, s)
        for block in blocks(page):
            if block.reason or block.backend != "tensorflow":
                continue
            if block.language == "python":
                docs_blocks.run_python(block, namespace)
            elif block.language == "bash":
                _run_bash(block, capsys)


def test_the_readme_example_prints_what_it_says(capsys, monkeypatch):
    # The first block, run alone from a clone, as a new user does.
    first = blocks("README.md")[0]
    monkeypatch.chdir(ROOT)
    exec(compile(first.code, "README.md", "exec"), {})  # noqa: S102
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["3 (2, 3, 32)", "(2, 2)"]
    assert len(first.code.strip().splitlines()) <= 10


def test_promises_are_checked():
    code = "print(39)  # 39: the mix\nprint(3)  # 39\n"
    block = docs_blocks.Block("x.md", 1, "python", code, None)
    docs_blocks.check_promises(block, ["39", "progress", "39"])
    with pytest.raises(AssertionError, match="no printed line says '39'"):
        docs_blocks.check_promises(block, ["39", "3"])
    with pytest.raises(AssertionError):  # in order
        docs_blocks.check_promises(block, ["3", "39"])


def test_illustrative_blocks_say_why():
    for page, block in _page_blocks():
        if block.reason is not None:
            assert len(block.reason) > 15, f"{block.where}: {block.reason}"


def test_every_runnable_bash_block_is_keras_elmo_commands():
    # A bash block that is not run says why; one that runs holds only
    # keras-elmo commands (which run in this process).
    for page, block in _page_blocks():
        if block.language != "bash" or block.reason:
            continue
        for words in _command_lines(block.code):
            assert words[0] == "keras-elmo", f"{block.where}: {words}"


# === Commands and flags agree with the parsers ===


def test_every_keras_elmo_command_parses():
    # Run or illustrative, each command's flags, values and choices are
    # what the parser takes (argparse exits on a mistake).
    parser = build_parser()
    for page, block in _page_blocks():
        if block.language != "bash":
            continue
        for words in _command_lines(block.code):
            for argv in _keras_elmo_commands(words):
                try:
                    parser.parse_args(argv)
                except SystemExit:
                    pytest.fail(f"{block.where}: keras-elmo {shlex.join(argv)}")


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*[a-z0-9]")
# Flags of other programs that the pages name: pytest, Beam pipeline
# options (after `--`), XLA's, pip's and mkdocs'.
OTHER_PROGRAMS = {
    "--run_large",
    "--dist",
    "--doctest-modules",
    "--direct_running_mode",
    "--direct_num_workers",
    "--project",
    "--region",
    "--temp_location",
    "--requirements_file",
    "--setup_file",
    "--sdk_container_image",
    "--flink_master",
    "--environment_type",
    "--spark_master_url",
    "--xla_cpu_use_onednn",
    "--xla_cpu_use_xnnpack",
    "--strict",
}


def _parser_flags():
    flags = set()
    parser = build_parser()
    for command in [parser, *parser.commands.values()]:
        for action in command.actions():
            flags.update(s for s in action.option_strings if s.startswith("--"))
    return flags


def _script_flags():
    """The flags of examples/ and benchmarks/ scripts (their argparse
    `add_argument("--name"`)."""
    flags = set()
    for folder in ("examples", "benchmarks"):
        for path in os.listdir(os.path.join(ROOT, folder)):
            if path.endswith(".py"):
                with open(os.path.join(ROOT, folder, path)) as f:
                    flags.update(re.findall(r'"(--[a-z][\w-]*)"', f.read()))
    return flags


def test_every_flag_a_page_names_exists():
    known = _parser_flags() | _script_flags() | OTHER_PROGRAMS
    for page in PAGES:
        for number, line in enumerate(read_page(page).splitlines(), 1):
            for flag in FLAG.findall(line):
                assert flag in known, f"{page}:{number}: {flag} is no flag"


def test_the_command_line_page_has_a_section_per_command():
    sections = set(re.findall(r"^### `keras-elmo ([\w-]+)`", read_page(
        "docs/cli.md"), re.M))  # fmt: skip
    assert sections == set(build_parser().commands)


def test_help_ends_with_examples_that_parse(capsys):
    parser = build_parser()
    for name, command in [("", parser), *parser.commands.items()]:
        help_text = command.format_help()
        assert "\nexamples:\n" in help_text, name
        examples = help_text.split("\nexamples:\n", 1)[1]
        commands = [
            shlex.split(line, comments=True)
            for line in examples.replace("\\\n", " ").splitlines()
        ]
        commands = [words for words in commands if words]
        assert commands, name
        for words in commands:
            assert words[0] == "keras-elmo", (name, words)
            if name:
                assert words[1] == name, (name, words)
            parser.parse_args(words[1:])


# === The guides describe the package as it is ===

# Narrative that belongs to a changelog or a benchmark record, not to a
# guide: "this version", "the version before", "two versions before", and
# a machine's load average (the benchmarks page records the machine).
HISTORY = re.compile(
    r"this version|versions? before|previous version|version before",
    re.I,
)
LOAD = re.compile(r"load average", re.I)


def test_no_version_history_or_machine_diary_in_the_guides():
    for page in PAGES:
        text = read_page(page)
        assert not HISTORY.search(text), (page, HISTORY.search(text).group())
        if page != "docs/benchmarks.md":
            assert not LOAD.search(text), page


# How long the test suite takes is measured and recorded on the benchmarks
# page (with its date, commit and machine); every other page, the
# changelog included, links there instead of giving its own number.
SUITE = re.compile(r"test suite|default (?:test )?run|python -m pytest", re.I)
DURATION = re.compile(r"\b\d+(?:\.\d+)? ?(?:minutes?|min)\b|\b\d+:\d\d\b")


def _paragraphs_timing_the_suite(text):
    """The paragraphs and list items of `text` that name the test suite
    and a duration."""
    return [
        part
        for part in re.split(r"\n\s*\n|\n- ", text)
        if SUITE.search(part) and DURATION.search(part)
    ]


def test_the_suite_s_time_is_given_on_the_benchmarks_page_alone():
    for page in [*PAGES, "CHANGELOG.md"]:
        if page != "docs/benchmarks.md":
            found = _paragraphs_timing_the_suite(read_page(page))
            assert not found, (page, found)
    assert _paragraphs_timing_the_suite(read_page("docs/benchmarks.md"))
    assert _paragraphs_timing_the_suite(
        "runs the test suite (two worker processes; about 17 minutes)"
    )


def test_every_extra_is_named_where_a_user_reads_the_install():
    import configparser

    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    extras = set(config["options.extras_require"])
    assert {"prepare", "proteins", "onnx"} <= extras
    for page in ("README.md", "docs/getting-started.md"):
        text = read_page(page)
        missing = sorted(e for e in extras if f"`{e}`" not in text)
        assert not missing, f"{page} does not name the extras {missing}"


def test_the_readme_is_a_front_page():
    assert len(read_page("README.md").splitlines()) <= 250


def test_every_docs_page_is_in_the_site_navigation():
    with open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8") as f:
        config = f.read()
    for page in PAGES[1:]:
        name = os.path.relpath(page, "docs")
        assert f": {name}\n" in config, f"{page} is not in mkdocs.yml's nav"


def test_doctest_blocks_become_code_on_the_api_pages():
    import sys

    sys.path.insert(0, os.path.join(ROOT, "docs"))
    try:
        from griffe_doctests import fence_examples
    finally:
        sys.path.pop(0)
    text = "Example:\n\n>>> 1 + 1\n2\n\nDone."
    assert fence_examples(text) == (
        "Example:\n\n```pycon\n>>> 1 + 1\n2\n```\n\nDone."
    )


# === The API reference: every public name, with an example ===

API = os.path.join(ROOT, "docs", "api")
# The public packages: keras_elmo and elmo_core and the subpackages of
# their __all__, the ones imported by name (TensorFlow's, Beam's), and the
# error family.
PUBLIC_PACKAGES = (
    "keras_elmo",
    "keras_elmo.data",
    "keras_elmo.export",
    "keras_elmo.beam",
    "elmo_core",
)


# Subpackages named in a package's __all__ whose names are not all public
# API: the character-id facts (their door, `batch_to_ids`, is).
NOT_PUBLIC = {"elmo_core.characters"}


def _public():
    """`[(package, name, object)]` of the public API."""
    import importlib
    import inspect

    from elmo_core.errors import KerasElmoError

    packages = list(PUBLIC_PACKAGES)
    for top in ("keras_elmo", "elmo_core"):
        module = importlib.import_module(top)
        packages += [
            f"{top}.{name}"
            for name in module.__all__
            if inspect.ismodule(getattr(module, name))
            and f"{top}.{name}" not in NOT_PUBLIC
        ]
    found = []
    for package in packages:
        module = importlib.import_module(package)
        if package.endswith(".errors"):
            names = [
                name
                for name, value in vars(module).items()
                if isinstance(value, type) and issubclass(value, KerasElmoError)
            ]
        else:
            names = [
                name
                for name in module.__all__
                if not inspect.ismodule(getattr(module, name))
            ]
        found += [(package, name, getattr(module, name)) for name in names]
    return found


def _resolve(path):
    import importlib

    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            value = getattr(value, part)
        return value
    raise ImportError(path)


def _api_pages():
    """`{page: (text, [rendered object, ...])}` of docs/api/."""
    pages = {}
    for name in sorted(os.listdir(API)):
        with open(os.path.join(API, name), encoding="utf-8") as f:
            text = f.read()
        targets = re.findall(r"^::: ([\w.]+)$", text, re.M)
        pages[name] = (text, [_resolve(target) for target in targets])
    return pages


def _examples(value):
    """The `>>>` and `...` lines of `value`'s own docstring."""
    lines = (getattr(value, "__doc__", None) or "").splitlines()
    return [x.strip() for x in lines if x.strip().startswith((">>>", "..."))]


def _shows(entry, name, value):
    """Whether an API entry renders `value`: the object itself, or the
    module (its docstring and members) that defines the constant `name`."""
    import inspect

    if entry is value:
        return True
    return inspect.ismodule(entry) and getattr(entry, name, None) is value


def test_every_public_name_has_an_api_entry_with_an_example():
    import inspect

    pages = _api_pages()
    for package, name, value in _public():
        where = [page for page, (_, shown) in pages.items() if any(
            _shows(other, name, value) for other in shown)]  # fmt: skip
        assert len(where) == 1, f"{package}.{name} is rendered on {where}"
        text, shown = pages[where[0]]
        home = pages[f"{package}.md"][0]
        assert f"{package}.{name}" in home, f"{package}.{name} not on its page"
        if inspect.isclass(value) or inspect.isfunction(value):
            assert _examples(value), f"{package}.{name} has no example"
        else:  # a constant: used in an example of its page
            used = [
                line
                for other in shown
                for line in _examples(other)
                if name in line
            ]
            assert used, f"{package}.{name}: no example on {where[0]} uses it"


def test_the_api_index_lists_every_page():
    with open(os.path.join(API, "index.md"), encoding="utf-8") as f:
        index = f.read()
    for name in os.listdir(API):
        if name != "index.md":
            assert f"]({name})" in index, name


# === What a page prints is the named model's ===

# A source a page names: a pretrained name given to a loader or --model,
# or a training size.
_NAMED = re.compile(
    r"""(?:load_bilm|ELMoEmbedding|SentenceEmbedder)\(\s*["']([^"']+)["']"""
    r"""|--model[ =](\S+)|--size[ =](\w+)"""
)


def _followed(current, match):
    """The model a page's next prints are about, after `match`: a
    pretrained name or a training size; None for "original" (served at
    its real sizes) or the test model named by its path; other paths (a
    user's run, files) leave it as it was."""
    from elmo_core.pretrained import PRESETS

    name = match.group(1) or match.group(2)
    if match.group(3):
        return f"--size {match.group(3)}"
    if name == "original" or "tests/fixtures" in name:
        return None
    return name if name in PRESETS else current


# A shape with a width in it: (batch, time, width), (layers, ..., width),
# (width,); (batch, time) is the same for any model.
_SHAPE = re.compile(r"\(\d+, \d+, \d+|\(\d+,\)")


def _printed_under_names(page):
    """`[(line of code, the name it follows)]`: the shape promises of a
    page's blocks (illustrative ones too) that follow a pretrained name
    served here as a test model (every one but "original", which is
    served at its real sizes) or a training size the page's test run does
    not have, without saying whose numbers they are."""
    found, current = [], None
    for block in blocks(page):
        for line in block.code.splitlines():
            for match in _NAMED.finditer(line):
                current = _followed(current, match)
            promise = docs_blocks.PROMISE.match(line.strip())
            if (
                current
                and promise
                and _SHAPE.search(promise.group(1))
                and "test" not in promise.group(1)
            ):
                found.append((line.strip(), current))
    return found


def test_no_page_shows_a_test_model_s_shapes_under_a_real_name():
    for page in PAGES:
        assert not _printed_under_names(page), page


def test_a_test_model_s_shape_under_a_real_name_is_found(monkeypatch):
    page = (
        "```python\n"
        'bilm = keras_elmo.load_bilm("zh")\n'
        "print(bilm(x).shape)  # (1, 3, 32)\n"
        "```\n\n"
        "```bash\n"
        "keras-elmo train --size small --output runs/mylm\n"
        "```\n\n"
        "```python\n"
        "print(elmo(x).shape)  # (1, 3, 16): the test run's\n"
        "print(elmo(x).shape)  # (1, 3, 16)\n"
        "```\n"
    )
    monkeypatch.setattr(docs_blocks, "read_page", lambda page: page)
    found = _printed_under_names(page)
    assert [name for _, name in found] == ["zh", "--size small"], found


def test_the_large_pages_are_pages():
    assert set(LARGE_PAGES) <= set(PAGES)
