"""The corpus pipeline on Apache Beam's local runner (the `beam` extra).

Two worker processes (multi-processing mode) embed a few hundred sentences
from three files: one worker is killed (SIGKILL) in the middle of a bundle;
the local runner does not retry bundles, so that run fails and leaves no
output that reads as complete; a rerun without --overwrite is refused and
one with it gives every key once, each equal to `keras-elmo embed` to
1e-6, and the bad lines listed and counted.
"""

import json
import os
import random
import subprocess
import sys

import h5py
import numpy as np
import pytest

from keras_elmo.cli import main
from keras_elmo.corpus import SentenceEmbedder
from keras_elmo.embedding_files import parquet_layout
from keras_elmo.errors import KerasElmoError
from keras_elmo.errors import OutputPathError
from tests.helpers import MODEL_DIR
from tests.helpers import subprocess_env

pytest.importorskip("apache_beam")

from keras_elmo.beam import pipeline  # noqa: E402

TWO_WORKERS = [
    "--direct_running_mode=multi_processing",
    "--direct_num_workers=2",
]
WORDS = (
    "the cat sat on a mat while U.S. officials said 日本語 😀 , . ! "
    "protein MKTAYIAK residue chain of tokens"
).split()
# The killed run, in a child Python (its workers import this checkout).
KILLED_RUN = r"""
import sys
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from keras_elmo.beam import pipeline as corpus
from keras_elmo.corpus import SentenceEmbedder
from tests.corpus_faults import kill_worker_once

inputs, output, marker, model = sys.argv[1:5]
embedder = SentenceEmbedder(model)
options = PipelineOptions(sys.argv[5:])
try:
    with beam.Pipeline(options=options) as p:
        (p | corpus.ReadLines([inputs])
           | beam.Map(kill_worker_once, ("part1.txt", 40), marker)
           | corpus.EmbedSentences(embedder)
           | corpus.WriteEmbeddings(output, corpus.settings_of(embedder)))
except Exception as error:
    print("FAILED:", type(error).__name__, error)
    sys.exit(3)
"""


def _corpus(directory):
    """Three files of ~80 lines; part2 has an empty, a too long and a
    non-UTF-8 line. Returns {path: [line bytes]}."""
    rng = random.Random(27)
    files = {}
    for k in range(3):
        lines = [
            " ".join(rng.choices(WORDS, k=rng.randint(1, 30))).encode()
            for _ in range(80)
        ]
        if k == 2:
            lines[10:10] = [b"", b"x " * 70, b"caf\xe9 au lait"]
        path = os.path.join(directory, f"part{k}.txt")
        with open(path, "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
        files[path] = lines
    return files


def _reference(files, tmp_path):
    """`keras-elmo embed` of every line (one call over all the files):
    {(path, line): array}, without empty and non-UTF-8 lines."""
    keys = [(path, n) for path, lines in files.items() for n in
            range(1, len(lines) + 1)]  # fmt: skip
    text = tmp_path / "all.txt"
    text.write_bytes(b"\n".join(b"\n".join(x) for x in files.values()))
    output = str(tmp_path / "all.hdf5")
    argv = ["embed", "--model", MODEL_DIR, "--input", str(text), "--top"]
    argv += ["--output", output, "--quiet", "--on-bad-line", "skip"]
    assert main(argv) == 0
    expected = {}
    with h5py.File(output) as f:
        for name in f:
            # Not the index, nor an empty line's (0, width) dataset.
            if name != "sentence_to_index" and len(f[name]):
                expected[keys[int(name)]] = f[name][...]
    return expected


# ~47 s on 2 AMD EPYC cores (three Beam runs with worker processes).
@pytest.mark.large
def test_a_killed_worker_then_a_rerun_give_every_sentence_once(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    files = _corpus(str(corpus))
    output = str(tmp_path / "out")
    pattern = str(corpus / "*.txt")
    marker = str(tmp_path / "killed")
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, pattern, output, marker, MODEL_DIR]
        + TWO_WORKERS,
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(),
    )
    assert os.path.exists(marker), killed.stderr[-2000:]
    assert killed.returncode == 3, killed.stdout + killed.stderr[-2000:]
    # No summary: nothing reads the leftovers as an output, nor reruns over
    # them without --overwrite.
    with pytest.raises(KerasElmoError, match="not the output of a finished"):
        list(parquet_layout.read_embeddings(output))
    with pytest.raises(OutputPathError, match="did not finish"):
        pipeline.check_output(output)

    rerun = subprocess.run(
        [sys.executable, "-m", "keras_elmo.cli", "embed-corpus", "--model",
         MODEL_DIR, "--input", pattern, "--output", output, "--top",
         "--max-sentence-tokens", "64", "--overwrite", "--", *TWO_WORKERS],
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(),
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "Embedded 240 sentences" in rerun.stdout, rerun.stdout
    assert "1 no tokens" in rerun.stdout and "1 not valid UTF-8" in rerun.stdout

    expected = _reference(files, tmp_path)
    got = {}
    for path, line, array in parquet_layout.read_embeddings(output):
        assert (path, line) not in got, (path, line)  # once
        got[(path, line)] = array
    too_long = (str(corpus / "part2.txt"), 12)
    del expected[too_long]  # embed takes it; here it is a bad line
    assert sorted(got) == sorted(expected)
    for key, array in got.items():
        np.testing.assert_allclose(array, expected[key], atol=1e-6, rtol=0)

    summary = parquet_layout.read_summary(output)
    assert summary["sentences"] == 240
    assert summary["tokens"] == sum(x.shape[0] for x in got.values())
    assert summary["bad_lines"] == {"empty": 1, "too_long": 1, "not_utf8": 1}
    bad = []
    for name in summary["bad_line_files"]:
        with open(os.path.join(output, name)) as f:
            bad += [json.loads(line) for line in f]
    part2 = str(corpus / "part2.txt")
    assert sorted((b["line"], b["reason"]) for b in bad) == [
        (11, "empty"),
        (12, "too_long"),
        (13, "not_utf8"),
    ]
    assert {b["file"] for b in bad} == {part2}
    leftovers = [n for n in os.listdir(output) if n.startswith("beam-temp")]
    assert leftovers == []


def test_from_python_in_memory_with_float16(tmp_path):
    lines = ["the cat sat", "", "a b c d"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    output = str(tmp_path / "out")
    embedder = SentenceEmbedder(MODEL_DIR, output_layers="top")
    half = SentenceEmbedder(MODEL_DIR, output_layers="top", dtype="float16")
    summary = pipeline.embed_corpus([str(tmp_path / "*.txt")], output, half)
    assert summary["sentences"] == 2 and summary["bad_lines"]["empty"] == 1
    assert summary["settings"]["dtype"] == "float16"
    rows = {line: x for _, line, x in parquet_layout.read_embeddings(output)}
    assert sorted(rows) == [1, 3]
    expected = embedder([lines[0], lines[2]])
    for line, want in zip((1, 3), expected):
        assert rows[line].dtype == np.float16
        np.testing.assert_array_equal(rows[line], want.astype(np.float16))
    with pytest.raises(OutputPathError, match="holds a finished run"):
        pipeline.embed_corpus([str(tmp_path / "*.txt")], output, half)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--gamma", "2"], "--gamma scales --scalar-mix"),
        (["--scalar-mix", "[0, 0.5]"], "has 3 layers to mix"),
        (["--input", "missing*.txt"], "matches no file"),
        (["stray"], "Unexpected argument 'stray'"),
        (["--", "stray"], "Unexpected argument 'stray'"),
    ],
)
def test_command_mistakes(tmp_path, capsys, flags, message):
    (tmp_path / "in.txt").write_text("a b\n")
    argv = ["embed-corpus", "--model", MODEL_DIR, "--output"]
    argv += [str(tmp_path / "out"), "--input", str(tmp_path / "in.txt")]
    assert main([*argv, *flags]) == 2
    assert message in capsys.readouterr().err


def test_an_output_that_holds_an_input_is_refused(tmp_path, capsys):
    (tmp_path / "in.txt").write_text("a b\n")
    argv = ["embed-corpus", "--model", MODEL_DIR, "--output", str(tmp_path)]
    assert main([*argv, "--input", str(tmp_path / "in.txt")]) == 2
    assert "the run would read its own output" in capsys.readouterr().err
