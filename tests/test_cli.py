import functools
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

import keras_elmo
from keras_elmo_cli import main
from tests.deploy_helpers import fixture_sentences
from tests.deploy_helpers import fixture_top_layer
from tests.helpers import COMPAT_RUN
from tests.helpers import MODEL_DIR
from tests.helpers import OPTIONS
from tests.helpers import TRAIN_TEXT
from tests.helpers import WEIGHTS
from tests.helpers import embed_args
from tests.shared import printed

LINES = [
    "The U.S. Centers for Disease Control",
    "",
    "Hello world !",
    "日本語 and 😀 tokens",
    " spaced   out  ",
] + [f"sentence number {i} " + "x " * (i % 7) for i in range(70)]


@pytest.fixture
def sentences_file(tmp_path):
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return str(path)


def test_embed_matches_in_python_outputs(sentences_file, tmp_path):
    output = str(tmp_path / "out.hdf5")
    assert main(embed_args(sentences_file, output, "--batch-size", "8")) == 0
    bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    with h5py.File(output) as f:
        # One dataset a line, and sentence_to_index.
        assert len(f) == len(LINES) + 1
        for i, line in enumerate(LINES):
            tokens = line.split()
            got = f[str(i)][...]
            assert got.dtype == np.float32
            assert got.shape == (3, len(tokens), 32)
            if not tokens:
                continue
            layers = bilm(keras_elmo.batch_to_ids([tokens]))["layer_outputs"]
            expected = np.stack([np.asarray(x)[0] for x in layers])
            np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("max_batch_tokens", ["1", "40", "16384"])
def test_embed_batches_by_tokens_as_bilm_tf(max_batch_tokens, tmp_path):
    """However the sentences are cut into batches (each alone, a few
    together under a small budget, all together by default), every line
    gets bilm-tf's own top layer."""
    sentences = fixture_sentences()
    # Short lines around the fixture's, so that the budget groups them.
    lines = [" ".join(tokens) for tokens in sentences]
    lines += ["a b", "one", "x y z w", ""]
    path = tmp_path / "in.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = str(tmp_path / "out.hdf5")
    args = embed_args(str(path), output, "--top")
    assert main([*args, "--max-batch-tokens", max_batch_tokens]) == 0
    with h5py.File(output) as f:
        assert len(f) == len(lines) + 1
        for k, tokens in enumerate(sentences):
            want = fixture_top_layer(k)[:, : len(tokens)]
            got = f[str(k)][...]
            got = np.stack([got[:, :16], got[:, 16:]])
            np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
        assert f["6"].shape == (0, 32)


def test_embed_rejects_non_utf8_naming_the_line(tmp_path, capsys):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"fine line\nna\xefve line\n")
    output = tmp_path / "out.hdf5"
    assert main(embed_args(str(path), str(output))) == 2
    err = capsys.readouterr().err
    assert "line 2: not valid UTF-8" in err and "0xef" in err
    assert not output.exists()


def test_embed_bad_arguments(sentences_file, tmp_path, capsys):
    output = str(tmp_path / "out.hdf5")
    assert main(embed_args("missing.txt", output)) == 2
    assert "--input not found: missing.txt" in capsys.readouterr().err
    assert main(embed_args(sentences_file, output, "--batch-size", "0")) == 2
    assert (
        "--batch-size: expected a positive integer" in capsys.readouterr().err
    )
    args = embed_args(sentences_file, output, "--max-batch-tokens", "-3")
    assert main(args) == 2
    assert "--max-batch-tokens: expected a positive integer" in (
        capsys.readouterr().err
    )
    assert not os.path.exists(output)
    args = embed_args(sentences_file, output)
    args[4] = os.path.join(MODEL_DIR, "vocab_test.txt")
    assert main(args) == 2
    assert "as an HDF5 weight file" in capsys.readouterr().err


def test_dump_token_embeddings(tmp_path):
    vocab = os.path.join(MODEL_DIR, "vocab_test.txt")
    output = str(tmp_path / "tokens.hdf5")
    args = [
        "dump-token-embeddings",
        "--options",
        OPTIONS,
        "--weights",
        WEIGHTS,
        "--vocab",
        vocab,
        "--output",
        output,
        "--batch-size",
        "100",
        "--quiet",
    ]
    assert main(args) == 0
    with open(vocab, encoding="utf-8") as f:
        words = f.read().split("\n")[:-1]
    bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    expected = np.asarray(bilm.encode_tokens(keras_elmo.batch_to_ids([words])))[
        0
    ]
    with h5py.File(output) as f:
        assert f["embedding"].shape == (len(words), 16)
        np.testing.assert_allclose(f["embedding"][...], expected, atol=1e-6)


def test_dump_token_embeddings_boundary_rows(tmp_path):
    from keras_elmo.corpus.bilm_dump import dump_token_embeddings
    from keras_elmo.data.character_ids import BOS_CHARACTER_IDS

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("<S>\n</S>\n<UNK>\nthe\n", encoding="utf-8")
    bilm = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    output = str(tmp_path / "tokens.hdf5")
    assert dump_token_embeddings(bilm, str(vocab), output, verbose=0) == 4
    bos = np.asarray(bilm.encode_tokens(BOS_CHARACTER_IDS[None, None]))
    with h5py.File(output) as f:
        np.testing.assert_allclose(f["embedding"][0], bos[0, 0], atol=1e-6)


def test_console_script_runs(sentences_file, tmp_path):
    output = str(tmp_path / "out.hdf5")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "keras_elmo_cli",
            *[a for a in embed_args(sentences_file, output) if a != "--quiet"],
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert f"Wrote the biLM layers of {len(LINES)} sentences" in result.stdout


def test_train_size_flag_and_its_older_name():
    from keras_elmo_cli import build_parser

    parser = build_parser()
    base = ["train", "--train", "x.txt", "--vocab", "v.txt", "--output", "o"]
    for flag in ("--size", "--preset"):
        args = parser.parse_args([*base, flag, "small"])
        assert args.size == "small"
    assert parser.parse_args(base).size is None
    assert "--preset is an older name" in " ".join(
        parser._subparsers._group_actions[0]
        .choices["train"]
        .format_help()
        .split()
    )


def test_every_command_that_writes_takes_quiet():
    # `presets` prints a listing: that output is what it is for.
    from keras_elmo_cli import build_parser

    commands = build_parser().commands
    without = [
        name
        for name, command in commands.items()
        if not any("--quiet" in a.option_strings for a in command.actions())
    ]
    assert without == ["presets"]


@pytest.mark.parametrize("quiet", [False, True])
def test_commands_say_what_they_wrote_unless_quiet(
    sentences_file, tmp_path, capsys, quiet, fixture_onnx
):
    flags = ["--quiet"] if quiet else []
    weights = ["export-weights", "--model", COMPAT_RUN]
    onnx = ["export-onnx", "--options", OPTIONS, "--weights", WEIGHTS]
    embed = embed_args(sentences_file, str(tmp_path / "e.hdf5"))
    embed.remove("--quiet")
    assert main([*weights, "--output", str(tmp_path / "e"), *flags]) == 0
    if quiet:
        assert main([*onnx, "--output", str(tmp_path / "m.onnx"), *flags]) == 0
        assert os.path.exists(tmp_path / "m.onnx")
    assert main([*embed, *flags]) == 0
    out = capsys.readouterr().out
    assert os.path.exists(tmp_path / "e" / "weights.hdf5")
    assert os.path.exists(tmp_path / "e.hdf5")
    if quiet:
        assert out == ""
    else:
        # export-onnx without --quiet: the shared export (tests/shared.py)
        # is that command, its output kept.
        assert "wrote options.json" in out
        assert "wrote the float32 model" in printed(fixture_onnx)
        assert f"Wrote the biLM layers of {len(LINES)} sentences" in out


# === Issue 62: each command parses its flags and calls its function ===


def test_text_commands_call_the_library_function_of_their_name(
    tmp_path, monkeypatch, capsys
):
    import elmo_core.preparation.prepare_text as prepare_text
    import keras_elmo
    from elmo_core import embedding_files

    calls = {}

    def recorder(name, result, function):
        @functools.wraps(function)  # its signature: the arguments it takes
        def call(**kwargs):
            calls[name] = kwargs
            return result

        return call

    monkeypatch.setattr(
        keras_elmo, "embed", recorder("embed", 2, keras_elmo.embed)
    )
    monkeypatch.setattr(
        embedding_files, "embed", recorder("twin", 2, embedding_files.embed)
    )
    out = str(tmp_path / "o.hdf5")
    assert main(["embed", "--model", MODEL_DIR, "--input", TRAIN_TEXT,
                 "--output", out, "--top", "--tokenize", "moses",
                 "--forget-sentences", "--quiet"]) == 0  # fmt: skip
    assert calls["embed"] == dict(
        source=MODEL_DIR, weights=None, input_file=TRAIN_TEXT,
        output_file=out, vocabulary=None, batch_size=256,
        max_batch_tokens=16384, on_bad_line="error", output_layers="top",
        sentence_index=False, tokenize="moses", language="en",
        input_format=None, max_residues=None, protein_vectors=None,
        runtime=None, precision=None, verbose=0,
    )  # fmt: skip
    # An exported file goes to the Keras-free twin, with the same names.
    assert main(["embed", "--model", "elmo.onnx", "--input", TRAIN_TEXT,
                 "--output", out, "--quiet"]) == 0  # fmt: skip
    assert calls["twin"]["source"] == "elmo.onnx"
    assert set(calls["twin"]) == set(calls["embed"])
    summary = {"lines_skipped": 0}
    monkeypatch.setattr(
        prepare_text,
        "prepare",
        recorder("prepare", summary, prepare_text.prepare),
    )
    argv = ["prepare", "--input", "a.txt", "--output", "p", "--seed", "3"]
    assert main([*argv, "--quiet"]) == 0
    assert calls["prepare"]["inputs"] == ["a.txt"]
    assert calls["prepare"]["seed"] == 3 and calls["prepare"]["verbose"] == 0
