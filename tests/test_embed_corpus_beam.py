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

from elmo_core.embedding_files import parquet_layout
from elmo_core.errors import KerasElmoError
from elmo_core.errors import OutputPathError
from keras_elmo.corpus import SentenceEmbedder
from keras_elmo_cli import main
from tests.helpers import MODEL_DIR
from tests.helpers import subprocess_env

pytest.importorskip("apache_beam")

from keras_elmo.beam import embed_corpus  # noqa: E402
from keras_elmo.beam.output_directory import claim_output  # noqa: E402

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
        claim_output(output)

    rerun = subprocess.run(
        [sys.executable, "-m", "keras_elmo_cli", "embed-corpus", "--model",
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
    assert summary["bad_lines"] == {
        "empty": 1,
        "too_long": 1,
        "not_utf8": 1,
        "unreadable": 0,
    }
    assert summary["unreadable_files"] == []
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
    summary = embed_corpus([str(tmp_path / "*.txt")], output, half)
    assert summary["sentences"] == 2 and summary["bad_lines"]["empty"] == 1
    assert summary["settings"]["dtype"] == "float16"
    rows = {line: x for _, line, x in parquet_layout.read_embeddings(output)}
    assert sorted(rows) == [1, 3]
    expected = embedder([lines[0], lines[2]])
    for line, want in zip((1, 3), expected):
        assert rows[line].dtype == np.float16
        # Within one float16 step of embed's float32 rows: the float32
        # values may differ in their last bits by the batch (see
        # test_crlf_bom_and_damaged_gz_through_the_command), which can
        # move a value across a float16 rounding boundary.
        np.testing.assert_allclose(
            rows[line].astype(np.float32), want, rtol=2**-10, atol=1e-6
        )
    with pytest.raises(OutputPathError, match="holds a finished run"):
        embed_corpus([str(tmp_path / "*.txt")], output, half)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--gamma", "2"], "--gamma scales the mix of --scalar-mix"),
        (["--scalar-mix", "[0, 0.5]"], "has 3 layers to mix"),
        (["--input", "missing*.txt"], "matches no file"),
        (["stray"], "Unexpected argument 'stray'"),
        (["--", "stray"], "Unexpected argument 'stray'"),
        (["--runner", "NoSuchRunner"], "Beam has no runner 'NoSuchRunner'"),
        (["--", "--direct_num_workers=two"], "invalid int value: 'two'"),
        (["--", "--direct_num_worker=2"], "no option --direct_num_worker"),
        (["--", "--direct_num_workers", "2", "x"], "Received: -- x."),
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
    assert "--output holds" in capsys.readouterr().err


# === The documented commands, compressed and odd inputs ===

# The corpus page's first command, as documented, but with the fixture
# model's folder for `original` (the worker processes resolve the biLM
# themselves, outside this test's served presets).
DOCUMENTED = (
    "keras-elmo embed-corpus --model original --input 'corpus/*.txt.gz' "
    "--output elmo-out --top -- "
    "--direct_running_mode=multi_processing --direct_num_workers=2"
)
LINES = ["The cat sat on the mat .", "日本語 and 😀", "", "a", "x y z " * 5]


def _embed_reference(tmp_path, lines):
    """`keras-elmo embed --top` of `lines`: {line number: array}."""
    text = tmp_path / "reference.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = str(tmp_path / "reference.hdf5")
    argv = ["embed", "--model", MODEL_DIR, "--input", str(text), "--top"]
    assert main([*argv, "--output", output, "--quiet"]) == 0
    with h5py.File(output) as f:
        return {n + 1: f[str(n)][...] for n in range(len(lines)) if lines[n]}


def _rows(output):
    return {
        (os.path.basename(file), line): array
        for file, line, array in parquet_layout.read_embeddings(output)
    }


def test_the_documented_command_is_the_corpus_page_s_first():
    # The page's first command, run below as written: kept in step.
    from tests.docs_blocks import blocks

    first = next(b for b in blocks("docs/corpus.md") if b.language == "bash")
    joined = first.code.replace("\\\n", " ")
    commands = [
        " ".join(line.split())
        for line in joined.splitlines()
        if line.startswith("keras-elmo ")
    ]
    assert commands[0] == DOCUMENTED


def test_the_documented_gz_command(tmp_path, monkeypatch, capsys):
    import gzip
    import shlex

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", subprocess_env()["PYTHONPATH"])
    os.mkdir("corpus")
    text = ("\n".join(LINES) + "\n").encode()
    for name in ("a", "b"):
        with gzip.open(f"corpus/{name}.txt.gz", "wb") as f:
            f.write(text)
    argv = shlex.split(DOCUMENTED)[1:]
    argv[argv.index("original")] = MODEL_DIR
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "Embedded 8 sentences" in printed and "2 no tokens" in printed
    expected = _embed_reference(tmp_path, LINES)
    rows = _rows("elmo-out")
    assert sorted(rows) == sorted(
        (f"{name}.txt.gz", n) for name in "ab" for n in expected
    )
    for (_, line), array in rows.items():
        np.testing.assert_allclose(array, expected[line], atol=1e-6, rtol=0)


def test_crlf_bom_and_damaged_gz_through_the_command(tmp_path, capsys):
    import gzip

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lf = ("\n".join(LINES) + "\n").encode()
    (corpus / "lf.txt").write_bytes(lf)
    (corpus / "crlf.txt").write_bytes(lf.replace(b"\n", b"\r\n"))
    (corpus / "bom.txt.gz").write_bytes(
        gzip.compress(b"\xef\xbb\xbf" + lf.replace(b"\n", b"\r\n"))
    )
    # Cut inside the compressed data: the lines before it still come out.
    long = "".join(f"{LINES[0]} {i}\n" for i in range(400)).encode()
    (corpus / "cut.txt.gz").write_bytes(gzip.compress(long)[:600])
    (corpus / "fake.txt.gz").write_bytes(lf)  # named .gz, not gzip
    output = str(tmp_path / "out")
    argv = ["embed-corpus", "--model", MODEL_DIR, "--top", "--output", output]
    assert main([*argv, "--input", str(corpus / "*")]) == 2
    err = capsys.readouterr().err
    assert "not every input was read to its end" in err, err
    assert "Traceback" not in err
    summary = parquet_layout.read_summary(output)
    unreadable = {
        os.path.basename(u["file"]): u for u in summary["unreadable_files"]
    }
    assert sorted(unreadable) == ["cut.txt.gz", "fake.txt.gz"]
    assert "is truncated" in unreadable["cut.txt.gz"]["detail"]
    assert "not gzip-compressed" in unreadable["fake.txt.gz"]["detail"]
    assert unreadable["fake.txt.gz"]["line"] == 1
    assert summary["bad_lines"]["unreadable"] == 2
    rows = _rows(output)
    expected = _embed_reference(tmp_path, LINES)
    # To 1e-6, not exactly: Beam's batches hold other sentences than
    # embed's, and on a CPU without AVX-512 oneDNN's float32 products
    # round a sentence's last bits by the rows of its batch (the same
    # sentence alone and beside three others: 6e-8 apart in the token
    # layer, 5e-7 at the top, with ONEDNN_MAX_CPU_ISA=AVX2). A line read
    # wrong (a BOM or a \r kept) is another sentence, far beyond it.
    for name in ("lf.txt", "crlf.txt", "bom.txt.gz"):
        for line, array in expected.items():
            np.testing.assert_allclose(
                rows[(name, line)], array, atol=1e-6, rtol=0
            )
    cut = sorted(line for name, line in rows if name == "cut.txt.gz")
    assert cut == list(range(1, unreadable["cut.txt.gz"]["line"]))
    assert len(cut) > 10
    # A rerun over the output needs --overwrite, as any rerun.
    assert main([*argv, "--input", str(corpus / "lf.txt")]) == 2
    assert "holds a finished run" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name, words",
    [
        ("fifo", "is a pipe (FIFO)"),
        ("folder", "is a directory; expected a text file"),
        ("text.bz2", "is named as a bzip2 file (.bz2)"),
        ("gs://no-extra/x.txt", "cannot be listed on its filesystem"),
    ],
)
def test_inputs_that_are_no_text_files_are_refused_first(
    tmp_path, capsys, name, words
):
    (tmp_path / "a.txt").write_text("a b\n")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    (tmp_path / "text.bz2").write_bytes(b"BZh9")
    pattern = name if "://" in name else str(tmp_path / name)
    if name == "fifo":
        pattern = str(tmp_path / "*")  # a glob that matches the FIFO
    output = tmp_path / "out"
    argv = ["embed-corpus", "--model", MODEL_DIR, "--output", str(output)]
    assert main([*argv, "--input", pattern]) == 2
    err = capsys.readouterr().err
    assert words in err and "--input" in err, err
    assert not output.exists()


# === What --overwrite deletes: a run's files, recognised by its marker ===


def _finished_run(directory):
    os.makedirs(directory, exist_ok=True)
    run = claim_output(directory)  # writes the marker
    for name in ("embeddings-00000-of-00001.parquet",
                 "bad_lines-00000-of-00001.jsonl"):  # fmt: skip
        with open(os.path.join(directory, name), "w") as f:
            f.write("x")
    with open(os.path.join(directory, "summary.json"), "w") as f:
        f.write(parquet_layout.summary({}, {}, [], [], run=run))
    os.makedirs(os.path.join(directory, "beam-temp-embeddings-123"))


def test_overwrite_never_deletes_a_users_files(tmp_path, capsys):
    (tmp_path / "in.txt").write_text("a b\n")
    user = tmp_path / "user"
    user.mkdir()
    (user / "summary.json").write_text('{"mine": true}')
    (user / "embeddings-glove.txt").write_text("the 0.1 0.2\n")
    argv = ["embed-corpus", "--model", MODEL_DIR, "--input"]
    argv += [str(tmp_path / "in.txt"), "--output", str(user), "--overwrite"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "holds files that no corpus run wrote there" in err
    assert "embeddings-glove.txt, summary.json" in err
    assert sorted(os.listdir(user)) == ["embeddings-glove.txt", "summary.json"]
    # A run's files beside a user's: refused too, nothing deleted.
    mixed = str(tmp_path / "mixed")
    _finished_run(mixed)
    with open(os.path.join(mixed, "notes.txt"), "w") as f:
        f.write("mine")
    before = sorted(os.listdir(mixed))
    with pytest.raises(OutputPathError, match=r"other files \(notes.txt\)"):
        claim_output(mixed, overwrite=True)
    assert sorted(os.listdir(mixed)) == before
    # Named like a marker, but not one: not ours.
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "keras-elmo-corpus.json").write_text("{}")
    with pytest.raises(OutputPathError, match="no corpus run wrote"):
        claim_output(str(fake), overwrite=True)
    assert os.listdir(fake) == ["keras-elmo-corpus.json"]


def test_a_marker_proves_only_the_directory_it_was_written_into(
    tmp_path, capsys
):
    # Issue 63: a run's marker copied by hand beside a user's own
    # summary.json made the folder a run's, and --overwrite deleted it.
    run = str(tmp_path / "run")
    _finished_run(run)
    user = tmp_path / "user"
    user.mkdir()
    (user / "summary.json").write_text('{"mine": true}')
    marker = tmp_path / "run" / "keras-elmo-corpus.json"
    (user / "keras-elmo-corpus.json").write_bytes(marker.read_bytes())
    (tmp_path / "in.txt").write_text("a b\n")
    argv = ["embed-corpus", "--model", MODEL_DIR, "--input"]
    argv += [str(tmp_path / "in.txt"), "--output", str(user), "--overwrite"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "copied from elsewhere proves nothing" in err, err
    assert (user / "summary.json").read_text() == '{"mine": true}'
    # The run's own marker, beside a summary of no run of its claim (a
    # user's, dropped in): refused too, naming it; nothing deleted.
    with open(os.path.join(run, "summary.json"), "w") as f:
        f.write('{"format": "keras-elmo-corpus/1", "run": "another"}')
    with pytest.raises(OutputPathError, match=r"other files \(summary.json\)"):
        claim_output(run, overwrite=True)
    assert "summary.json" in os.listdir(run)
    # Renamed, a run's directory keeps its marker's proof.
    moved = str(tmp_path / "moved")
    os.rename(str(tmp_path / "run"), moved)
    os.remove(os.path.join(moved, "summary.json"))
    claim_output(moved, overwrite=True)
    assert os.listdir(moved) == ["keras-elmo-corpus.json"]


def test_overwrite_deletes_a_run_summary_first_and_can_resume(
    tmp_path, monkeypatch
):
    run = str(tmp_path / "run")
    _finished_run(run)
    with pytest.raises(OutputPathError, match="holds a finished run"):
        claim_output(run)
    removed = []
    real_remove = os.remove

    def remove_then_fail(path):
        if removed:  # the second file: the disk goes away
            raise PermissionError(13, "Permission denied", path)
        removed.append(os.path.basename(path))
        real_remove(path)

    monkeypatch.setattr(os, "remove", remove_then_fail)
    with pytest.raises(OutputPathError, match="run again with `overwrite`"):
        claim_output(run, overwrite=True)
    monkeypatch.setattr(os, "remove", real_remove)
    assert removed == ["summary.json"]  # first: nothing reads it as whole
    assert "keras-elmo-corpus.json" in os.listdir(run)
    with pytest.raises(OutputPathError, match="did not finish"):
        claim_output(run)
    claim_output(run, overwrite=True)
    assert os.listdir(run) == ["keras-elmo-corpus.json"]
    claim_output(run)  # a marker alone: a run that wrote nothing yet


# === Outputs against inputs, before the pipeline starts ===


def test_outputs_never_go_into_or_over_an_input(tmp_path, capsys):
    import shutil

    model = str(tmp_path / "model")
    shutil.copytree(MODEL_DIR, model)
    text = tmp_path / "in.txt"
    text.write_text("a b\n")
    for output, words in [
        (os.path.join(model, "out"), "lies inside"),
        (str(text), "is an existing file"),
        (str(tmp_path), f"holds {text}"),
    ]:
        argv = ["embed-corpus", "--model", model, "--input", str(text)]
        assert main([*argv, "--output", output]) == 2
        err = capsys.readouterr().err
        assert words in err and "--output" in err, err
        embedder = SentenceEmbedder(model)
        with pytest.raises(OutputPathError, match=words) as caught:
            embed_corpus([str(text)], output, embedder)
        assert caught.value.argument == "output"
    assert sorted(os.listdir(model)) == sorted(os.listdir(MODEL_DIR))


def test_matched_files_are_read_as_named(tmp_path, capsys):
    # Issue 63: `in/*.txt` over x[1].txt (one line) and x1.txt (two)
    # wrote x1.txt twice and nothing of x[1].txt: each matched name went
    # to Beam again, which read `[1]` as a character class.
    corpus = tmp_path / "in"
    corpus.mkdir()
    (corpus / "x[1].txt").write_text("only line\n")
    (corpus / "x1.txt").write_text("one\ntwo\n")
    (corpus / "p[1] *?{é}.fasta").write_text(">a\nMKV\n")
    (corpus / "p1 x{é}.fasta").write_text(">b\nMKVL\n>c\nMK\n")
    lines = str(tmp_path / "lines")
    argv = ["embed-corpus", "--model", MODEL_DIR, "--quiet"]
    assert (
        main([*argv, "--input", str(corpus / "*.txt"), "--output", lines]) == 0
    )
    assert sorted(_rows(lines)) == [
        ("x1.txt", 1),
        ("x1.txt", 2),
        ("x[1].txt", 1),
    ]
    proteins = str(tmp_path / "proteins")
    assert (
        main([*argv, "--input", str(corpus / "*.fasta"), "--output", proteins])
        == 0
    )
    assert sorted(_rows(proteins)) == [
        ("p1 x{é}.fasta", 1), ("p1 x{é}.fasta", 3), ("p[1] *?{é}.fasta", 1),
    ]  # fmt: skip


def test_a_file_that_several_inputs_match_is_read_once(tmp_path, capsys):
    # Two globs, a path through '..', and a link to the file: one file.
    corpus = tmp_path / "dup"
    corpus.mkdir()
    (corpus / "a.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    os.symlink("a.txt", corpus / "link.txt")
    inputs = [
        str(corpus / "*.txt"),
        str(corpus / "a.*"),
        str(corpus / ".." / "dup" / "a.txt"),
    ]
    output = str(tmp_path / "out")
    argv = ["embed-corpus", "--model", MODEL_DIR, "--output", output]
    for pattern in inputs:
        argv += ["--input", pattern]
    assert main(argv) == 0, capsys.readouterr().err
    rows = _rows(output)
    expected = _embed_reference(tmp_path, LINES)
    assert sorted(rows) == sorted(("a.txt", n) for n in expected)
    with open(os.path.join(output, "summary.json")) as f:
        assert json.load(f)["sentences"] == len(expected)


def test_the_library_takes_the_command_s_settings_and_refuses_a_mix(tmp_path):
    # Issue 62: keras_elmo.beam.embed_corpus does what the command did:
    # it takes the biLM and the embedder's settings, or an embedder that
    # holds them, never both; FASTA settings only for FASTA.
    (tmp_path / "in.txt").write_text("a b\n")
    (tmp_path / "p.fasta").write_text(">a\nMKV\n")
    text, fasta = str(tmp_path / "in.txt"), str(tmp_path / "p.fasta")
    out = str(tmp_path / "out")
    embedder = SentenceEmbedder(MODEL_DIR)
    for inputs, source, settings, argument in [
        (text, embedder, dict(output_layers="top"), "output_layers"),
        (text, MODEL_DIR, dict(max_residues=5), "max_residues"),
        (fasta, MODEL_DIR, dict(max_sentence_tokens=5), "max_sentence_tokens"),
        (fasta, MODEL_DIR, dict(tokenize="spacy"), "tokenize"),
        (text, MODEL_DIR, dict(gamma=2.0), "gamma"),
        (text, MODEL_DIR, dict(runner="NoSuchRunner"), "runner"),
    ]:
        with pytest.raises(KerasElmoError) as caught:
            embed_corpus(inputs, out, source, **settings)
        assert caught.value.argument == argument, caught.value
    assert not os.path.exists(out)
