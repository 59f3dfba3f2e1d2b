"""`keras-elmo prepare` and `elmo_core.preparation.prepare`: raw text ->
the corpus `train` reads, through the command, on hostile input too."""

import gzip
import json
import os

import numpy as np
import pytest

from elmo_core.errors import KerasElmoError
from elmo_core.preparation.prepare_text import prepare
from elmo_core.text.normalization import normalize
from keras_elmo_cli import main
from tests.helpers import run_python

EMMA = (
    "[Emma by Jane Austen 1816]\n\n"
    "Emma Woodhouse, handsome, clever, and rich, seemed to unite\n"
    "some of the best blessings of existence. She hadn't lived\n"
    "nearly twenty years!\n\n"
    '"Mr. Knightley is here," said she.\n'
)
# spaCy's rules (`--tokenize spacy`, the default) on EMMA: the wrapped
# lines of a paragraph joined, "n't" and the quotes split off, "Mr." whole.
EMMA_SENTENCES = [
    "[ Emma by Jane Austen 1816 ]",
    "Emma Woodhouse , handsome , clever , and rich , seemed to unite some "
    "of the best blessings of existence .",
    "She had n't lived nearly twenty years !",
    '" Mr. Knightley is here , " said she .',
]


def _write(path, text, compress=False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(data)
    return str(path)


def _lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def _prepare(capsys, *flags, quiet=True):
    status = main(["prepare", *(["--quiet"] if quiet else []), *flags])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_command_on_gz_books_with_a_tail_held_out(tmp_path, capsys):
    books = tmp_path / "books"
    books.mkdir()
    _write(books / "emma.txt.gz", EMMA, compress=True)
    _write(books / "other.txt", "One two three. Four five six.\n" * 10)
    out = tmp_path / "corpus"
    status, printed, errors = _prepare(
        capsys,
        "--input", str(books / "*.txt*"),
        "--output", str(out),
        "--held-out", "0.25",
        "--held-out-by", "tail",
        quiet=False,
    )  # fmt: skip
    assert status == 0 and "Traceback" not in errors
    # The last quarter of each document's sentences is held out.
    assert _lines(out / "train.txt.gz") == EMMA_SENTENCES[:3] + [
        "One two three .",
        "Four five six .",
    ] * 7 + ["One two three ."]
    assert _lines(out / "valid.txt.gz") == EMMA_SENTENCES[3:] + [
        "Four five six .",
        "One two three .",
        "Four five six .",
        "One two three .",
        "Four five six .",
    ]
    record = json.loads((out / "prepare.json").read_text())
    assert record["tokenization"] == "spacy"
    assert record["language"] == "en"
    assert record["documents"] == 2
    assert record["train"] == {"documents": 2, "sentences": 18, "tokens": 96}
    assert record["held_out"]["sentences"] == 6
    assert record["longest_sentence"]["tokens"] == 21
    assert "18 sentences, 96 tokens, from 2 documents" in printed
    assert sorted(os.listdir(out)) == [
        "prepare.json",
        "train.txt.gz",
        "valid.txt.gz",
    ]


def test_the_same_input_gives_the_same_bytes(tmp_path, capsys):
    raw = _write(tmp_path / "raw.txt", EMMA)
    outputs = []
    for name in ("a", "b"):
        flags = ["--input", raw, "--output", str(tmp_path / name)]
        assert _prepare(capsys, *flags, "--held-out", "0")[0] == 0
        outputs.append((tmp_path / name / "train.txt.gz").read_bytes())
    assert outputs[0] == outputs[1]
    assert not (tmp_path / "a" / "valid.txt.gz").exists()


def test_documents_are_held_out_whole(tmp_path):
    # 400 documents, one a line: about 20 % held out, each whole.
    text = "".join(f"Document {i} starts. It ends here.\n" for i in range(400))
    raw = _write(tmp_path / "dump.txt", text)
    record = prepare(
        raw,
        str(tmp_path / "out"),
        documents="line",
        held_out=0.2,
        verbose=0,
    )
    train = _lines(tmp_path / "out" / "train.txt.gz")
    held = _lines(tmp_path / "out" / "valid.txt.gz")
    assert len(train) + len(held) == 800
    assert 40 <= record["held_out"]["documents"] <= 120
    numbers = {
        part: {s.split()[1] for s in lines if s.startswith("Document")}
        for part, lines in (("t", train), ("h", held))
    }
    assert not numbers["t"] & numbers["h"]  # no document in both parts
    assert all(f"{n} starts ." in " ".join(held) for n in numbers["h"])
    # Another seed draws other documents.
    prepare(
        raw,
        str(tmp_path / "seed1"),
        documents="line",
        held_out=0.2,
        seed=1,
        verbose=0,
    )
    assert _lines(tmp_path / "seed1" / "valid.txt.gz") != held


def test_blank_line_documents_and_deduplication(tmp_path):
    text = "A first one. A repeat.\n\nA repeat.\nThe second.\n\n\n"
    raw = _write(tmp_path / "dump.txt", text)
    record = prepare(
        raw,
        str(tmp_path / "out"),
        documents="blank-line",
        held_out=0,
        deduplicate=True,
        verbose=0,
    )
    assert _lines(tmp_path / "out" / "train.txt.gz") == [
        "A first one .",
        "A repeat .",
        "The second .",
    ]
    assert record["documents"] == 2
    assert record["duplicates_dropped"] == 1


@pytest.mark.parametrize(
    "language, text, sentences",
    [
        (
            "de",
            "Herr Müller kam um 5 Uhr. Das ist’s, sagte er z. B. laut.",
            [
                "Herr Müller kam um 5 Uhr .",
                "Das ist ’s , sagte er z. B. laut .",
            ],
        ),
        (
            "fr",
            "L'homme est arrivé. Qu'est-ce que c'est ?",
            ["L' homme est arrivé .", "Qu' est -ce que c' est ?"],
        ),
        (
            "ru",
            "Это первое предложение. А это — второе!",
            ["Это первое предложение .", "А это — второе !"],
        ),
    ],
)
def test_languages(tmp_path, capsys, language, text, sentences):
    raw = _write(tmp_path / "raw.txt", text + "\n")
    flags = ["--input", raw, "--output", str(tmp_path / "out")]
    status, _, errors = _prepare(
        capsys, *flags, "--language", language, "--held-out", "0"
    )
    assert (status, errors) == (0, "")
    assert _lines(tmp_path / "out" / "train.txt.gz") == sentences


def test_moses_and_whitespace(tmp_path):
    raw = _write(tmp_path / "raw.txt", "She hadn't come. Mr. Smith did.\n")
    lines = {}
    for kind in ("moses", "whitespace"):
        out = str(tmp_path / kind)
        prepare(raw, out, tokenize=kind, held_out=0, verbose=0)
        lines[kind] = _lines(os.path.join(out, "train.txt.gz"))
    assert lines["moses"] == ["She hadn 't come .", "Mr. Smith did ."]
    assert lines["whitespace"] == ["She hadn't come. Mr. Smith did."]


def test_odd_unicode_is_normalised(tmp_path):
    # NFD accents, a byte order mark, a DOS end-of-file mark, no-break and
    # zero-width spaces, a soft hyphen, CRLF, tabs, emoji and Arabic.
    text = (
        "\ufeffCafe\u0301\u00a0au lait\u200b.\r\n"
        "\x1a\tna\u00adive 🙂 ok.\r\n"
        "مرحبا بالعالم.\r\n"
    )
    raw = _write(tmp_path / "raw.txt", text)
    record = prepare(raw, str(tmp_path / "out"), held_out=0, verbose=0)
    sentences = _lines(tmp_path / "out" / "train.txt.gz")
    assert sentences[0] == "Café au lait ."
    assert "naive 🙂 ok ." in sentences[1]
    assert sentences[-1].startswith("مرحبا")
    assert record["lines_changed"] == 2
    assert normalize("e\u0301") == "\u00e9"


def test_a_very_long_line_is_read_in_pieces_and_loses_nothing(tmp_path):
    # 3 MiB without a line break or a sentence end.
    words = [f"w{i}" for i in range(400_000)]
    raw = _write(tmp_path / "raw.txt.gz", " ".join(words), compress=True)
    record = prepare(
        raw, str(tmp_path / "out"), documents="line", held_out=0, verbose=0
    )
    tokens = " ".join(_lines(tmp_path / "out" / "train.txt.gz")).split()
    assert tokens == words
    assert record["train"]["sentences"] > 1  # cut into bounded pieces


def test_empty_documents_are_counted(tmp_path):
    full = _write(tmp_path / "a.txt", "Some text here.\n")
    empty = _write(tmp_path / "b.txt", "\n \n\t\n")
    record = prepare(
        [full, empty], str(tmp_path / "out"), held_out=0, verbose=0
    )
    assert record["documents"] == 2
    assert record["empty_documents"] == 1


def test_encodings(tmp_path, capsys):
    latin = _write(
        tmp_path / "latin.txt", "Un caf\xe9 noir.\n".encode("latin-1")
    )
    out = str(tmp_path / "out")
    status, _, errors = _prepare(capsys, "--input", latin, "--output", out)
    assert status == 2
    assert f"{latin}, line 1: not valid utf-8 (byte 0xe9)" in errors
    assert "--encoding" in errors and "Traceback" not in errors
    assert not os.path.exists(out) or not os.listdir(out)
    status, _, errors = _prepare(
        capsys,
        "--input", latin,
        "--output", out,
        "--encoding", "utf-8,latin-1",
        "--held-out", "0",
    )  # fmt: skip
    assert (status, errors) == (0, "")
    assert _lines(os.path.join(out, "train.txt.gz")) == ["Un café noir ."]
    mixed = _write(
        tmp_path / "mixed.txt", b"Good line.\nBad \xe9 line.\nGood again.\n"
    )
    record = prepare(
        mixed, str(tmp_path / "skip"), held_out=0, on_bad_line="skip", verbose=0
    )
    assert _lines(tmp_path / "skip" / "train.txt.gz") == [
        "Good line .",
        "Good again .",
    ]
    assert record["lines_skipped"] == 1
    assert record["lines_skipped_first"] == [f"{mixed}:2"]


@pytest.mark.parametrize(
    "files, flags, words",
    [
        ({"a.txt.gz": b"not gzip"}, [], "is not a readable .gz file"),
        ({"a.txt.gz": b""}, [], "a.txt.gz"),
        ({"a.txt.bz2": b"BZh9"}, [], "bzip2"),
        ({"a.txt": b"Text.\n"}, ["--language", "zz"], "--language zz"),
        ({"a.txt": b"Text.\n"}, ["--held-out", "1"], "--held-out"),
        (
            {"a.txt": b"One. Two.\n"},
            ["--held-out-by", "document"],
            "--held-out-by 'tail'",
        ),
        ({"a.txt": b"\n\n"}, ["--held-out", "0"], "a.txt holds no sentence"),
        (
            {"a.txt": b"One.\n"},
            ["--held-out-by", "document"],
            "(1 document, --held-out 0.05): too few to hold out whole ones. "
            "Pass --held-out 0 (no held-out part)",
        ),
        (
            {"a.txt": b"Text.\nEnd.\n"},
            ["--stop-at", "Text", "--held-out", "0"],
            "--stop-at 'Text' left out the rest of 1 file",
        ),
        ({}, [], "No file matches"),
    ],
)
def test_mistakes_are_named(tmp_path, capsys, files, flags, words):
    for name, data in files.items():
        _write(tmp_path / name, data)
    out = tmp_path / "out"
    status, printed, errors = _prepare(
        capsys, "--input", str(tmp_path / "a.*"), "--output", str(out), *flags
    )
    assert status == 2, printed
    assert words in errors
    assert "Traceback" not in errors
    assert not out.exists() or not os.listdir(out)


def test_outputs_never_replace_inputs_or_foreign_files(tmp_path, capsys):
    raw = _write(tmp_path / "train.txt.gz", "Some text.\n", compress=True)
    status, _, errors = _prepare(
        capsys, "--input", raw, "--output", str(tmp_path), "--held-out", "0"
    )
    assert status == 2 and "an input" in errors
    foreign = tmp_path / "theirs"
    foreign.mkdir()
    (foreign / "valid.txt.gz").write_bytes(b"someone's")
    (foreign / "notes.md").write_text("keep me")
    status, _, errors = _prepare(
        capsys, "--input", raw, "--output", str(foreign), "--held-out", "0"
    )
    assert status == 2
    assert "valid.txt.gz, which no prepare run wrote" in errors
    assert (foreign / "valid.txt.gz").read_bytes() == b"someone's"
    # A folder of other files is fine: they stay; a rerun replaces its own.
    (foreign / "valid.txt.gz").unlink()
    for _ in range(2):
        status, _, errors = _prepare(
            capsys, "--input", raw, "--output", str(foreign), "--held-out", "0"
        )
        assert (status, errors) == (0, "")
    assert (foreign / "notes.md").read_text() == "keep me"
    assert _lines(foreign / "train.txt.gz") == ["Some text ."]


def test_an_interrupted_run_leaves_nothing_half_written(tmp_path, monkeypatch):
    from elmo_core.preparation import prepare_text

    raw = _write(tmp_path / "raw.txt", EMMA)
    out = tmp_path / "out"
    prepare(raw, str(out), held_out=0, verbose=0)
    before = (out / "train.txt.gz").read_bytes()

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(prepare_text, "_check_result", interrupted)
    with pytest.raises(KeyboardInterrupt):
        prepare(raw, str(out), held_out=0, tokenize="whitespace", verbose=0)
    assert sorted(os.listdir(out)) == ["prepare.json", "train.txt.gz"]
    assert (out / "train.txt.gz").read_bytes() == before


def test_a_file_changed_while_it_is_read_leaves_nothing(tmp_path, monkeypatch):
    from elmo_core.preparation import prepare_text

    raw = _write(tmp_path / "raw.txt", EMMA * 3)
    read = prepare_text.paragraphs

    def changing(path, *args, **kwargs):
        for i, paragraph in enumerate(read(path, *args, **kwargs)):
            if i == 1:
                with open(path, "a") as f:
                    f.write("Appended while read.\n")
            yield paragraph

    monkeypatch.setattr(prepare_text, "paragraphs", changing)
    out = tmp_path / "out"
    with pytest.raises(KerasElmoError, match="changed while it was read"):
        prepare(raw, str(out), held_out=0, verbose=0)
    assert not out.exists()


def test_a_missing_library_names_the_extra(tmp_path):
    raw = _write(tmp_path / "raw.txt", "Text.\n")
    code = (
        "import sys; sys.modules['sacremoses'] = None\n"
        "from keras_elmo_cli import main\n"
        f"sys.exit(main(['prepare', '--input', {raw!r}, '--output', "
        f"{str(tmp_path / 'out')!r}, '--tokenize', 'moses']))"
    )
    run = run_python(code, check=False)
    assert run.returncode == 2
    assert "pip install 'keras-elmo[prepare]'" in run.stderr
    assert "Traceback" not in run.stderr


# === --tokenize where text goes in ===

RAW = ['He said, "Don\'t go." She went.', "Mr. Smith paid $5.50!"]
# The same lines as spaCy and Moses tokenise them, written out by hand.
BY_HAND = {
    "spacy": [
        'He said , " Do n\'t go . " She went .',
        "Mr. Smith paid $ 5.50 !",
    ],
    "moses": [
        'He said , " Don \'t go . " She went .',
        "Mr. Smith paid $ 5.50 !",
    ],
}


def _datasets(path, count=len(RAW)):
    import h5py

    with h5py.File(path, "r") as f:
        return [f[str(i)][...] for i in range(count)]


@pytest.mark.parametrize("kind", sorted(BY_HAND))
def test_embed_tokenizes_raw_sentences(tmp_path, capsys, kind):
    from tests.helpers import MODEL_DIR

    raw = _write(tmp_path / "raw.txt", "\n".join(RAW) + "\n")
    tokens = _write(tmp_path / "tokens.txt", "\n".join(BY_HAND[kind]) + "\n")
    common = ["embed", "--quiet", "--model", MODEL_DIR]
    assert main([*common, "--input", raw, "--output", str(tmp_path / "a.h5"),
                 "--tokenize", kind]) == 0  # fmt: skip
    assert main([*common, "--input", tokens, "--output",
                 str(tmp_path / "b.h5")]) == 0  # fmt: skip
    for got, want in zip(
        _datasets(tmp_path / "a.h5"), _datasets(tmp_path / "b.h5")
    ):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_sentence_embedder_tokenizes_lines_not_token_lists():
    from keras_elmo.corpus import SentenceEmbedder
    from tests.helpers import MODEL_DIR

    raw = SentenceEmbedder(MODEL_DIR, output_layers="top", tokenize="spacy")
    plain = SentenceEmbedder(MODEL_DIR, output_layers="top")
    got = raw(RAW + [["Do", "n't"]])
    want = plain(BY_HAND["spacy"] + ["Do n't"])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, atol=1e-6)
    with pytest.raises(KerasElmoError, match="`tokenize`"):
        SentenceEmbedder(MODEL_DIR, tokenize="nltk")
    with pytest.raises(KerasElmoError, match="residue"):
        SentenceEmbedder(MODEL_DIR, tokenize="spacy", protein_vectors="both")


def test_a_biLM_s_tokenization_is_noted_when_the_input_differs(
    tmp_path, capsys
):
    import shutil

    from tests.helpers import MODEL_DIR

    model = tmp_path / "model"
    shutil.copytree(MODEL_DIR, model)
    (model / "tokenization.json").write_text(
        '{"tokenization": "spacy", "language": "en"}'
    )
    raw = _write(tmp_path / "raw.txt", "\n".join(RAW) + "\n")
    notes = {}
    for kind in ("spacy", "moses", "whitespace"):
        status = main([
            "embed", "--model", str(model), "--input", raw,
            "--output", str(tmp_path / f"{kind}.h5"), "--tokenize", kind,
        ])  # fmt: skip
        assert status == 0
        notes[kind] = capsys.readouterr().err
    assert notes["spacy"] == ""
    # Issue 63: the default reading (whitespace) of a biLM that learned
    # spaCy's tokens said nothing.
    for kind in ("moses", "whitespace"):
        assert (
            "corpus was read by spacy (en), the input is read by "
            in (notes[kind])
        )
        assert "--tokenize spacy --language en" in notes[kind]
    assert (
        "each line one sentence, its tokens as written" in notes["whitespace"]
    )


def test_fasta_input_takes_no_tokenize(tmp_path, capsys):
    from tests.helpers import MODEL_DIR

    fasta = _write(tmp_path / "p.fasta", ">a\nMKV\n")
    status = main([
        "embed", "--model", MODEL_DIR, "--input", fasta,
        "--output", str(tmp_path / "o.h5"), "--tokenize", "spacy",
    ])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and "--tokenize is for sentences of text" in err
    assert "Received: --tokenize spacy" in err


# === Issue 63: the text as the user wrote it, one reading everywhere ===


def test_whitespace_reads_each_line_as_one_sentence(tmp_path, capsys):
    # Already tokenised, one sentence a line, no blank line: each line is
    # a sentence, as written, in any `documents`; lines never join.
    raw = _write(
        tmp_path / "tokens.txt",
        "Hello world !\nThe cat sat on the mat .\nELMo rocks\n",
    )
    for documents in ("file", "blank-line", "line"):
        out = tmp_path / documents
        status, _, errors = _prepare(
            capsys, "--input", raw, "--output", str(out), "--tokenize",
            "whitespace", "--held-out", "0", "--documents", documents,
        )  # fmt: skip
        assert (status, errors) == (0, "")
        assert _lines(out / "train.txt.gz") == [
            "Hello world !",
            "The cat sat on the mat .",
            "ELMo rocks",
        ]


def test_the_normal_form_is_stable():
    # A mark between a letter and its accent: removing the mark must not
    # leave a form that the next normalisation changes again.
    for text in ["Cafe\u200b\u0301", "na\u00ad\u0308ive", "e\x00\u0301"]:
        once = normalize(text)
        assert normalize(once) == once, ascii(text)
    assert normalize("Cafe\u200b\u0301") == "Caf\u00e9"


@pytest.mark.parametrize("kind", ["whitespace", "spacy", "device"])
def test_every_reader_reads_a_line_as_prepare_does(tmp_path, capsys, kind):
    # Issue 63: embed --tokenize spacy sent the raw line to spaCy, so
    # "Cafe\u0301" was a 5-character token where prepare's corpus has a
    # 4-character one. Decomposed text embeds as its composed form does,
    # through the command, SentenceEmbedder and prepare alike.
    from keras_elmo.corpus import SentenceEmbedder
    from tests.helpers import MODEL_DIR

    decomposed = "Cafe\u0301 au\u00a0lait\u200b , na\u00ef\u0308ve ."
    composed = normalize(decomposed)
    assert composed.split()[:3] == ["Caf\u00e9", "au", "lait"]
    files = {}
    for name, line in (("raw", decomposed), ("nfc", composed)):
        text = _write(tmp_path / f"{name}.txt", line + "\n")
        files[name] = str(tmp_path / f"{name}.h5")
        argv = ["embed", "--quiet", "--model", MODEL_DIR, "--input", text,
                "--output", files[name], "--tokenize", kind]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
    got, want = (_datasets(files[n], 1)[0] for n in ("raw", "nfc"))
    np.testing.assert_array_equal(got, want)
    embedder = SentenceEmbedder(MODEL_DIR, output_layers="top", tokenize=kind)
    raw, nfc = embedder([decomposed, composed])
    np.testing.assert_array_equal(raw, nfc)
    prepare(files_of(tmp_path, decomposed), str(tmp_path / "out"),
            tokenize=kind, held_out=0, verbose=0)  # fmt: skip
    corpus = _lines(tmp_path / "out" / "train.txt.gz")
    assert corpus == [" ".join(embedder.tokens(decomposed))]
    assert "Caf\u00e9" in corpus[0].split()


def test_device_reads_each_line_by_the_rule_an_app_runs(tmp_path, capsys):
    # The device rule (elmo_core.text.device_tokenizer, twinned in Java)
    # is one more --tokenize of the one text path: prepare writes the
    # tokens an app would give its biLM, a line one sentence.
    from elmo_core.text.device_tokenizer import tokenize

    lines = ["Mr. Smith-Jones didn't pay $5...", "He left. She stayed."]
    raw = _write(tmp_path / "raw.txt", "\n".join(lines) + "\n")
    flags = ["--input", raw, "--tokenize", "device", "--held-out", "0"]
    status, _, errors = _prepare(
        capsys, *flags, "--output", str(tmp_path / "out")
    )
    assert (status, errors) == (0, "")
    assert _lines(tmp_path / "out" / "train.txt.gz") == [
        " ".join(tokenize(line)) for line in lines
    ]
    status, _, errors = _prepare(
        capsys, *flags, "--output", str(tmp_path / "de"), "--language", "de"
    )
    assert status == 2 and "--language" in errors and "English" in errors


def files_of(tmp_path, line):
    return _write(tmp_path / "prepare-input.txt", line + "\n")


def test_quiet_shows_only_what_was_left_out(tmp_path, capsys):
    raw = _write(tmp_path / "raw.txt", b"Good line.\nBad \xe9 line.\n")
    flags = ["--input", raw, "--held-out", "0", "--on-bad-line", "skip"]
    status, printed, _ = _prepare(
        capsys, *flags, "--output", str(tmp_path / "a")
    )
    assert status == 0
    assert printed.splitlines() == [
        "Left out 1 line that is not utf-8 (--on-bad-line skip); it is "
        f"listed in {tmp_path / 'a' / 'prepare.json'} (lines_skipped_first)"
    ]
    good = _write(tmp_path / "good.txt", "Good line.\n")
    status, printed, _ = _prepare(
        capsys, "--input", good, "--held-out", "0", "--output",
        str(tmp_path / "b"),
    )  # fmt: skip
    assert (status, printed) == (0, "")


def test_a_record_proves_only_the_files_it_wrote(tmp_path, capsys):
    # Issue 63: any file named prepare.json made a folder prepare's, and
    # a user's own one (`{"script": "my_prep.py"}`) beside their
    # train.txt.gz let prepare replace both.
    from elmo_core.text.tokenization_record import corpus_tokenization

    raw = _write(tmp_path / "raw.txt", "Some text.\n")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "prepare.json").write_text('{"script": "my_prep.py"}')
    (theirs / "train.txt.gz").write_bytes(gzip.compress(b"their corpus\n"))
    before = {p.name: p.read_bytes() for p in theirs.iterdir()}
    flags = ["--input", raw, "--held-out", "0", "--output", str(theirs)]
    status, _, errors = _prepare(capsys, *flags)
    assert status == 2
    assert "prepare.json, which no prepare run wrote (it is no record" in errors
    assert {p.name: p.read_bytes() for p in theirs.iterdir()} == before
    # A record of a real run, copied beside another corpus: it proves
    # nothing there, to prepare or to train.
    ours = tmp_path / "ours"
    prepare(raw, str(ours), held_out=0, verbose=0)
    (theirs / "prepare.json").write_bytes((ours / "prepare.json").read_bytes())
    status, _, errors = _prepare(capsys, *flags)
    assert status == 2 and "does not prove it" in errors
    assert (theirs / "train.txt.gz").read_bytes() == before["train.txt.gz"]
    assert corpus_tokenization([str(theirs / "train.txt.gz")]) is None
    assert corpus_tokenization([str(ours / "train.txt.gz")]) == {
        "tokenization": "spacy",
        "language": "en",
    }
    # The run's own folder: a rerun replaces what its record proves.
    status, _, errors = _prepare(
        capsys, "--input", raw, "--held-out", "0", "--output", str(ours)
    )
    assert (status, errors) == (0, "")


def test_a_name_has_no_record_in_the_current_folder(tmp_path, monkeypatch):
    # A pretrained name or a URL is no folder here: a tokenization.json
    # in the current folder is no record of it.
    from elmo_core.text.tokenization_record import recorded_tokenization

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tokenization.json").write_text(
        '{"tokenization": "moses", "language": "en"}'
    )
    for source in ("original", "https://example.org/elmo.zip"):
        assert recorded_tokenization(source) is None
    assert recorded_tokenization(str(tmp_path)) == {
        "tokenization": "moses",
        "language": "en",
    }
