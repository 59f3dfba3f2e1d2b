"""One flag, one format, one default: every flag that two commands (or a
command and an example script) both take is parsed the same way by both,
with the same default, unless `EXCEPTIONS` says why its meaning truly
differs there. A user who learns a flag once uses it everywhere."""

import argparse
import importlib.util
import os

import pytest

from keras_elmo_cli import build_parser
from tests.helpers import ROOT

EXAMPLES = (
    "deploy_tagger",
    "pos_tagging",
    "pretrain_gutenberg",
    "pretrain_gutenberg_words",
    "pytorch_finetune",
    "serve_savedmodel",
)
# flag -> {command or example: why it is parsed otherwise there}; the
# others that take the flag must still agree.
EXCEPTIONS = {
    "--output": {
        name: "a folder of results or a run, not one file written whole"
        for name in ("embed-corpus", "prepare", *EXAMPLES)
        if name != "pytorch_finetune"
    },
    "--batch-size": {
        "dump-token-embeddings": "vocabulary tokens per batch, not "
        "sentences (1,024 of them cost what 256 sentences do)",
    },
    "--max-batch-tokens": {
        "export-savedmodel": "the largest request the SavedModel serves "
        "(it refuses a larger one), not how requests are batched",
    },
    "--input": {
        name: "text files or globs, repeated, each file read once; embed "
        "reads one file (or standard input), whose line numbers key its "
        "output"
        for name in ("embed-corpus", "prepare")
    },
    "--tokenize": {
        "prepare": "makes a corpus out of raw text, so it splits sentences "
        "and tokens by default (spaCy); embed and embed-corpus read lines "
        "as written unless told (whitespace), as bilm-tf and AllenNLP do",
    },
    "--epochs": {
        name: "whole epochs of a tagger's fit (Keras takes an integer); "
        "train's are passes over a corpus, and may be fractional"
        for name in ("pos_tagging", "pytorch_finetune")
    },
    "--precision": {
        "embed": "picks among the files an export wrote (default: the one "
        "there is); the export commands write one, of the precisions "
        "their format has (ONNX has no float16)",
        "export-onnx": "ONNX Runtime has no float16 export here",
    },
}
# Flags that come together: a parser that takes one takes all (but where
# said why not).
TOGETHER = [("--model", "--options", "--weights", "--bilm-vocab")]
APART = {
    "train": "--options takes the size of an official options.json alone "
    "(its weights come with --init-from, which takes every biLM source)",
    "distill": "--options takes the student's size of an official "
    "options.json alone (the teacher comes with --teacher, which takes "
    "every biLM source)",
    "evaluate": "--model is a training run: a perplexity needs the "
    "softmax, which no other source holds",
    "export-weights": "--model is a training run: it writes the run's "
    "softmax and vocabulary beside the weights",
}


class _Parsed(Exception):
    def __init__(self, parser):
        self.parser = parser


def _example_parser(name, monkeypatch):
    """The parser an example script builds in its `main`."""
    path = os.path.join(ROOT, "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def capture(parser, *args, **kwargs):
        raise _Parsed(parser)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(_Parsed) as parsed:
        module.main()
    return parsed.value.parser


def _parsers(monkeypatch):
    parsers = dict(build_parser().commands)
    for name in EXAMPLES:
        parsers[name] = _example_parser(name, monkeypatch)
    return parsers


def _format(action):
    """How a flag is parsed: its action's kind, value type, default,
    choices and count of values."""
    kind = action.type
    return (
        type(action).__name__,
        None if kind is None else f"{kind.__module__}.{kind.__name__}",
        repr(action.default),
        None if action.choices is None else tuple(action.choices),
        action.nargs,
    )


def _flags(parsers):
    """`{flag: {parser name: format}}` of every long flag but --help."""
    flags = {}
    for name, parser in parsers.items():
        for action in parser._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    flags.setdefault(flag, {})[name] = _format(action)
    return flags


def _disagreements(flags, exceptions):
    """`[(flag, {parser: format})]` of the flags parsed two ways outside
    their exceptions."""
    found = []
    for flag, formats in sorted(flags.items()):
        kept = {
            name: form
            for name, form in formats.items()
            if name not in exceptions.get(flag, {})
        }
        if len(set(kept.values())) > 1:
            found.append((flag, kept))
    return found


def test_every_shared_flag_is_parsed_one_way(monkeypatch):
    flags = _flags(_parsers(monkeypatch))
    assert "--scalar-mix" in flags and len(flags["--scalar-mix"]) >= 3
    assert not _disagreements(flags, EXCEPTIONS)
    # Each exception names a parser that takes its flag.
    for flag, parsers in EXCEPTIONS.items():
        for name in parsers:
            assert name in flags[flag], (flag, name, "takes no such flag")


def test_flags_that_come_together_come_together(monkeypatch):
    for name, parser in _parsers(monkeypatch).items():
        taken = {s for a in parser._actions for s in a.option_strings}
        for group in TOGETHER:
            if taken & set(group) and name not in APART:
                assert set(group) <= taken, (name, set(group) - taken)


def test_a_flag_parsed_two_ways_is_found():
    flags = {
        "--scalar-mix": {"a": ("store", "json"), "b": ("store", "list")},
        "--output": {"a": ("store", "path"), "c": ("store", None)},
    }
    found = _disagreements(flags, {"--output": {"c": "a folder"}})
    assert found == [("--scalar-mix", flags["--scalar-mix"])]


def test_every_command_takes_the_same_scalar_mix():
    parsers = build_parser().commands
    for name in ("embed-corpus", "export-onnx", "export-litert"):
        for text in ("0.5,0.3,0.2", "[0.5, 0.3, 0.2]", " [0.5,0.3,0.2] "):
            argv = ["--output", "x", "--scalar-mix", text, "--input", "a"]
            if name != "embed-corpus":
                argv = argv[:-2]
            args = vars(parsers[name].parse_args(argv))
            # The destination is the library argument's name.
            weights = args.get("scalar_weights", args.get("scalar_mix"))
            assert weights == [0.5, 0.3, 0.2], (name, text)


def test_a_single_value_flag_given_twice_is_refused(capsys):
    from keras_elmo_cli import main

    argv = ["embed", "--input", "a.txt", "--input", "b.txt", "--output", "x"]
    assert main([*argv, "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert "argument --input: given twice" in err
