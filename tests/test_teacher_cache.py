"""The teacher cache of `keras-elmo distill --teacher-cache DIR`.

The targets a student learns from the cache are checked against the
teacher's own outputs on each sentence alone (another instance of the
fixture teacher, float32), within the rounding of the cache's precision;
the cache is checked end to end (filled once, recorded in the run's
config, used by a resumed run), and refused when its teacher, its text
or its files are not what the run needs, or its settings are wrong.
"""

import contextlib
import io
import json
import os
import re
import shutil

import numpy as np
import pytest

import keras_elmo
from elmo_core.errors import KerasElmoError
from elmo_core.ids.vocabulary import Vocabulary
from elmo_core.settings.distillation import parse_cache_size
from keras_elmo.data import lm_dataset
from keras_elmo.data import scan_corpus
from keras_elmo.layers import BiLM
from keras_elmo.models import DistilledLanguageModel
from keras_elmo.models.distilled_language_model import TEACHER_INPUTS
from keras_elmo.models.distilled_language_model import TEACHER_OUTPUTS
from keras_elmo.training.cached_teacher import SENTENCE_TOKENS
from keras_elmo.training.cached_teacher import CachedTeacher
from keras_elmo.training.cached_teacher import cached_teacher
from keras_elmo.training.run_directory import load_run
from keras_elmo.training.teacher_cache import HEADER_FILE
from keras_elmo.training.teacher_cache import INDEX_FILE
from keras_elmo.training.teacher_cache import OUTPUTS_FILE
from keras_elmo.training.teacher_cache import RECORD
from keras_elmo.training.teacher_cache import open_teacher_cache
from keras_elmo_cli import main
from tests.helpers import MODEL_DIR
from tests.helpers import STEPWISE_TRAIN_FLAGS
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import TRAIN_TEXT
from tests.helpers import TRAIN_VOCAB
from tests.helpers import change_lstm_weights
from tests.helpers import folder_digest
from tests.helpers import tiny_bilm_kwargs
from tests.helpers import train_interrupted_then_resumed

WORD_TEACHER = os.path.join(
    os.path.dirname(__file__), "fixtures", "bilm-tf-words", "model"
)
FLAGS = [
    *TINY_TRAIN_FLAGS,
    "--tokens-per-batch", "64",
    "--num-sampled", "100",
    "--dropout", "0",
    "--checkpoint-every", "2",
    *STEPWISE_TRAIN_FLAGS,
]  # fmt: skip
# The fixture text in batches of 64 tokens: 5 batches an epoch, 7
# sentences (one split in two by --max-length 30).
STEPS_PER_EPOCH = 5
SENTENCES = 7
# The fixture teacher: 3 layers of 32.
IDENTITY = {
    "teacher_digest": "1" * 64,
    "text_digest": "2" * 64,
    "teacher_precision": "float32",
    "precision": "float16",
    "layers": [0, 1, 2],
    "width": 32,
}
# The rounding of a float32 value to the nearest float16 (11 significant
# bits): at most half a unit of the last place, 2^-11 of the value (2^-25
# below float16's normal range); and the float32 arithmetic of one
# teacher on different batches, on any CPU.
FLOAT16_RELATIVE = 2.0**-11
FLOAT32_SLACK = 1e-5


def _student():
    vocabulary = Vocabulary.from_file(TRAIN_VOCAB)
    model = DistilledLanguageModel(
        BiLM(**tiny_bilm_kwargs()),
        vocabulary_size=len(vocabulary),
        teacher_layers=3,
        teacher_width=32,
    )
    model.build()
    model.attach_teacher(keras_elmo.load_bilm(MODEL_DIR))
    return model, vocabulary


def _batches(cached, vocabulary, epochs):
    """`(x, tokens)` of `epochs` shuffled epochs of the fixture text, as a
    run with a cache reads them."""
    scan = scan_corpus([TRAIN_TEXT], max_length=30, tokens_per_batch=64)
    assert scan.steps_per_epoch == STEPS_PER_EPOCH
    dataset = lm_dataset(
        scan, vocabulary, seed=3, extra_inputs=cached.extra_inputs(None)
    )
    for x, _, _ in dataset.take(epochs * STEPS_PER_EPOCH):
        x = dict(x)
        yield x, x.pop(SENTENCE_TOKENS).numpy()


def _teacher_alone(teacher, tokens):
    """The teacher's outputs `(positions, layers, width)` of one sentence,
    run alone, float32."""
    words = [token.decode() for token in tokens if token]
    x = {"character_ids": keras_elmo.batch_to_ids([words])}
    outputs = teacher(x, keep_boundaries=True)["layer_outputs"]
    return np.stack([np.asarray(layer)[0] for layer in outputs], axis=1)


def _check_targets(targets, tokens, teacher, precision):
    for row, sentence in zip(targets.astype("float32"), tokens):
        expected = _teacher_alone(teacher, sentence)
        positions = len(expected)
        bound = FLOAT32_SLACK
        if precision == "float16":
            bound = bound + FLOAT16_RELATIVE * np.abs(expected)
        assert np.all(np.abs(row[:positions] - expected) <= bound)
        assert not row[positions:].any()  # padding


def _counting(cached):
    """Counts the sentences the teacher runs on."""
    counted = [0]
    teacher = cached.teacher

    def counting(x):
        counted[0] += int(x["character_ids"].shape[0])
        return teacher(x)

    cached.teacher = counting
    return counted


@pytest.mark.parametrize("precision", ["float16", "float32"])
def test_the_student_learns_the_teacher_outputs_within_the_cache_precision(
    tmp_path, precision
):
    model, vocabulary = _student()
    teacher = keras_elmo.load_bilm(MODEL_DIR)  # another instance
    identity = {**IDENTITY, "precision": precision}
    cache, _ = open_teacher_cache(str(tmp_path), identity, 2**30)
    cached = CachedTeacher(cache, model, verbose=0)
    counted = _counting(cached)
    with contextlib.closing(cache):
        for x, tokens in _batches(cached, vocabulary, epochs=2):
            targets = cached.targets(x, tokens)
            assert targets.dtype == precision
            _check_targets(targets, tokens, teacher, precision)
            _check_step_targets(model, x, tokens, targets, precision)
        # Each sentence went through the teacher once: the second epoch
        # read them all.
        assert counted[0] == len(cache.entries) == SENTENCES


def test_a_teacher_that_reads_words_is_cached_from_its_own_inputs(tmp_path):
    # A word-input teacher runs on its own ids of the batch's tokens
    # (`teacher_inputs`), which the batches with the cache no longer carry.
    source = keras_elmo.loading.classify(WORD_TEACHER)
    teacher = source.load_bilm()
    width = 2 * teacher.projection_dim
    vocabulary = Vocabulary.from_file(TRAIN_VOCAB)
    model = DistilledLanguageModel(
        BiLM(**tiny_bilm_kwargs()),
        vocabulary_size=len(vocabulary),
        teacher_layers=3,
        teacher_width=width,
    )
    model.build()
    model.attach_teacher(teacher, source.read().vocabulary)
    identity = {**IDENTITY, "width": width}
    cache, _ = open_teacher_cache(str(tmp_path), identity, 2**30)
    cached = CachedTeacher(cache, model, verbose=0)
    scan = scan_corpus([TRAIN_TEXT], max_length=30, tokens_per_batch=64)
    extra = cached.extra_inputs(model.teacher_token_inputs)
    batches = lm_dataset(scan, vocabulary, seed=3, extra_inputs=extra)
    with contextlib.closing(cache):
        dataset = cached.dataset(batches)
        for (x, _, _), (plain, _, _) in zip(
            dataset.take(2 * STEPS_PER_EPOCH), batches
        ):
            assert TEACHER_INPUTS not in x and SENTENCE_TOKENS not in x
            plain = dict(plain)
            tokens = plain.pop(SENTENCE_TOKENS).numpy()
            _check_step_targets(
                model, plain, tokens, x[TEACHER_OUTPUTS], "float16"
            )
        assert len(cache.entries) == SENTENCES


def _check_step_targets(model, x, tokens, targets, precision):
    """The step's targets are the same with the cache as without, at the
    positions of `<S> tokens </S>`."""
    given = model.teacher_outputs({**x, TEACHER_OUTPUTS: targets})
    computed = model.teacher_outputs(x)
    positions = np.sum(tokens != b"", axis=1) + 2
    for layer in model.matched_teacher_layers:
        for i, end in enumerate(positions):
            got = np.asarray(given[layer][i, :end])
            want = np.asarray(computed[layer][i, :end])
            bound = FLOAT32_SLACK
            if precision == "float16":
                bound = bound + FLOAT16_RELATIVE * np.abs(want)
            assert np.all(np.abs(got - want) <= bound)


def _config(directory, size_limit):
    """A distilled run's config with a teacher cache (what
    `cached_teacher` reads), of the fixture teacher and text."""
    from elmo_core.settings.distillation import teacher_cache_settings
    from elmo_core.settings.sizes import bilm_size
    from keras_elmo.training.distill_settings import distill_settings
    from keras_elmo.training.run_setup import run_config

    cache = teacher_cache_settings(str(directory), size=size_limit)
    teacher = keras_elmo.load_bilm(MODEL_DIR)
    distill = distill_settings(MODEL_DIR, teacher, teacher_cache=cache)
    return run_config(
        {},
        train_files=[TRAIN_TEXT],
        bilm=bilm_size("tiny"),
        vocabulary_size=10,
        distill=distill,
    )


def test_beyond_the_size_limit_the_teacher_runs_and_says_so(tmp_path, capsys):
    model, vocabulary = _student()
    teacher = keras_elmo.load_bilm(MODEL_DIR)
    limit = 8 * 1024  # 29 % of the fixture text's 28 KiB
    config = _config(tmp_path, limit)
    scan = scan_corpus([TRAIN_TEXT], max_length=30, tokens_per_batch=64)
    with cached_teacher(config, scan, model, 1, verbose=1) as cached:
        counted = _counting(cached)
        for x, tokens in _batches(cached, vocabulary, epochs=2):
            targets = cached.targets(x, tokens)
            _check_targets(targets, tokens, teacher, "float16")
        cache = cached.cache
        assert cache.full and 0 < len(cache.entries) < SENTENCES
        assert cache.size <= limit
    files = [OUTPUTS_FILE, INDEX_FILE]
    assert sum(os.path.getsize(tmp_path / name) for name in files) <= limit
    # The sentences beyond the limit went through the teacher each epoch.
    assert counted[0] == 2 * SENTENCES - len(cache.entries)
    out = capsys.readouterr().out
    assert "about 29% fit within its size limit" in out
    assert out.count("teacher cache: full") == 1
    assert "the teacher runs on the sentences it does not hold" in out


def test_a_cache_holds_one_run_s_outputs_on_one_device(tmp_path):
    model, _ = _student()
    config = _config(tmp_path, 2**20)
    scan = scan_corpus([TRAIN_TEXT], max_length=30, tokens_per_batch=64)
    with pytest.raises(KerasElmoError, match="2 replicas") as error:
        with cached_teacher(config, scan, model, 2, verbose=0):
            pass
    assert error.value.argument == "teacher_cache"
    with cached_teacher(config, scan, model, 1, verbose=0):
        with pytest.raises(KerasElmoError, match="in use by another run"):
            open_teacher_cache(str(tmp_path), IDENTITY, 2**20)


# === End to end ===


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A distillation of two epochs of the fixture text with a teacher
    cache, its teacher a copy of the fixture's: `(folder, its output)`."""
    work = tmp_path_factory.mktemp("filled")
    shutil.copytree(MODEL_DIR, work / "teacher")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _distill(
            work / "run", 2 * STEPS_PER_EPOCH,
            "--teacher-cache", str(work / "cache"),
            teacher=str(work / "teacher"), quiet=False,
        )  # fmt: skip
    return work, out.getvalue()


def _distill(output, steps, *extra, teacher, train=TRAIN_TEXT, code=0,
             quiet=True):  # fmt: skip
    flags = FLAGS if quiet else [f for f in FLAGS if f != "--quiet"]
    args = [
        "distill", "--teacher", str(teacher), "--train", str(train),
        "--vocab", TRAIN_VOCAB, "--output", str(output),
        "--steps", str(steps), *flags, *extra,
    ]  # fmt: skip
    assert main(args) == code


def test_a_distillation_fills_its_cache_once_and_records_it(filled):
    work, out = filled
    assert f"teacher cache: {work / 'cache'} holds 0 sentences" in out
    assert "all fit, the teacher runs on each once" in out
    with open(work / "run" / "config.json") as f:
        settings = json.load(f)["distill"]["teacher_cache"]
    assert settings == {
        "directory": str(work / "cache"),
        "precision": "float16",
        "size_limit": 10 * 2**30,
    }
    index = os.path.getsize(work / "cache" / INDEX_FILE)
    assert index == SENTENCES * RECORD.itemsize  # each sentence once
    with open(work / "cache" / HEADER_FILE) as f:
        header = json.load(f)
    assert header["layers"] == [0, 1, 2] and header["width"] == 32
    assert header["teacher_precision"] == "float32"


def test_an_interrupted_run_resumes_with_its_cache(
    filled, tmp_path, monkeypatch, capsys
):
    work, _ = filled
    cache = tmp_path / "cache"
    train_interrupted_then_resumed(
        monkeypatch,
        lambda code: _distill(
            tmp_path / "run", 2 * STEPS_PER_EPOCH,
            "--teacher-cache", str(cache),
            teacher=work / "teacher", code=code, quiet=False,
        ),
    )  # fmt: skip
    out = capsys.readouterr().out
    resumed = out[out.index("resuming") :]
    # The resumed part starts from what the first part cached.
    assert re.search(r"teacher cache: \S+ holds [1-9][0-9]* sentences", resumed)
    assert os.path.getsize(cache / INDEX_FILE) == SENTENCES * RECORD.itemsize
    whole, _, _ = load_run(str(work / "run"))
    again, _, _ = load_run(str(tmp_path / "run"))
    for got, want in zip(again.get_weights(), whole.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("change", ["teacher", "text"])
def test_a_cache_of_another_teacher_or_text_is_refused(
    filled, tmp_path, capsys, change
):
    work, _ = filled
    cache = tmp_path / "cache"
    shutil.copytree(work / "cache", cache)
    before = folder_digest(cache)
    teacher, train = work / "teacher", TRAIN_TEXT
    if change == "teacher":
        teacher = tmp_path / "teacher"
        shutil.copytree(work / "teacher", teacher)
        change_lstm_weights(teacher)
    else:
        train = tmp_path / "data.txt"
        shutil.copy(TRAIN_TEXT, train)
        with open(train, "a") as f:
            f.write("one more sentence .\n")
    _distill(tmp_path / "run", 2, "--teacher-cache", str(cache),
             teacher=teacher, train=train, code=2)  # fmt: skip
    error = capsys.readouterr().err
    assert f"holds the outputs of another {change}" in error
    assert "--teacher-cache" in error and "Traceback" not in error
    assert not os.path.exists(tmp_path / "run")  # refused before the run
    assert folder_digest(cache) == before


# === Damaged caches ===


def _open(cache, filled):
    """Opens `cache`, a copy of the `filled` run's, as that run would."""
    with open(filled[0] / "cache" / HEADER_FILE) as f:
        header = json.load(f)
    identity = {key: header[key] for key in IDENTITY}
    return open_teacher_cache(str(cache), identity, 2**30)


def _records(cache):
    return np.fromfile(cache / INDEX_FILE, RECORD)


def _flip_a_byte(cache):
    with open(cache / OUTPUTS_FILE, "r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0x40]))


def _cut_outputs(cache):
    size = os.path.getsize(cache / OUTPUTS_FILE)
    os.truncate(cache / OUTPUTS_FILE, size - 100)


def _move_a_record(cache):
    records = _records(cache)
    records[3]["offset"] += 2
    records.tofile(cache / INDEX_FILE)


def _shrink_a_record(cache):
    records = _records(cache)
    records[0]["positions"] = 2
    records.tofile(cache / INDEX_FILE)


def _record_twice(cache):
    records = _records(cache)
    first = records[0].copy()
    with open(cache / OUTPUTS_FILE, "r+b") as f:
        data = f.read(int(first["positions"]) * 3 * 32 * 2)
        first["offset"] = f.seek(0, os.SEEK_END)
        f.write(data)
    np.concatenate([records, first[None]]).tofile(cache / INDEX_FILE)


def _write_header(text):
    def write(cache):
        with open(cache / HEADER_FILE, "w") as f:
            f.write(text)

    return write


def _other_version(cache):
    with open(cache / HEADER_FILE) as f:
        header = json.load(f)
    _write_header(json.dumps({**header, "version": 99}))(cache)


@pytest.mark.parametrize(
    "damage, why",
    [
        (_flip_a_byte, "do not match their checksum"),
        (_cut_outputs, "outputs.bin holds fewer"),
        (_move_a_record, "do not follow one another"),
        (_shrink_a_record, "fewer positions than <S> token </S>"),
        (_record_twice, "a sentence recorded twice"),
        (_write_header("{not json"), "teacher_cache.json is not valid JSON"),
        (_write_header('{"format": 1}'), "is not a cache's header"),
        (_other_version, "not a keras_elmo teacher cache of version 1"),
    ],
)
def test_a_damaged_cache_is_refused_with_how_to_fix_it(
    filled, tmp_path, damage, why
):
    cache = tmp_path / "cache"
    shutil.copytree(filled[0] / "cache", cache)
    damage(cache)
    with pytest.raises(KerasElmoError) as error:
        opened, _ = _open(cache, filled)
        with contextlib.closing(opened):
            for entry in opened.entries.values():
                opened.read(entry, entry[1])
    message = str(error.value)
    assert why in message and error.value.argument == "teacher_cache"
    if damage is not _other_version:
        assert "Delete the directory: the run fills it again" in message


def test_what_an_interrupted_write_left_is_dropped_and_said(filled, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(filled[0] / "cache", cache)
    records = _records(cache)
    os.truncate(cache / INDEX_FILE, os.path.getsize(cache / INDEX_FILE) - 5)
    opened, notes = _open(cache, filled)
    with contextlib.closing(opened):
        assert len(opened.entries) == SENTENCES - 1
        for entry in opened.entries.values():
            opened.read(entry, entry[1])  # whole
    assert [note.split(" bytes of ")[1].split(",")[0] for note in notes] == [
        "index.bin", "outputs.bin"
    ]  # fmt: skip
    # The last record went, and its outputs after it.
    assert os.path.getsize(cache / INDEX_FILE) == (SENTENCES - 1) * 32
    assert os.path.getsize(cache / OUTPUTS_FILE) == int(records[-1]["offset"])


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda d: (d / "notes.txt").write_text("mine"), "notes.txt"),
        (lambda d: (d / INDEX_FILE).write_bytes(b"x" * 32),
         "data without a header"),
    ],
)  # fmt: skip
def test_a_folder_that_is_no_cache_is_left_alone(tmp_path, make, why):
    cache = tmp_path / "cache"
    cache.mkdir()
    make(cache)
    before = folder_digest(cache)
    with pytest.raises(KerasElmoError, match=why):
        open_teacher_cache(str(cache), IDENTITY, 2**30)
    assert folder_digest(cache) == before


# === Settings ===


@pytest.mark.parametrize(
    "value, size",
    [(2048, 2048), ("2048", 2048), ("500M", 500 * 2**20), ("20g", 20 * 2**30),
     ("1.5GiB", 3 * 2**29), (" 8 KB ", 8192)],
)  # fmt: skip
def test_cache_sizes(value, size):
    assert parse_cache_size(value) == size


@pytest.mark.parametrize(
    "value", ["ten", "", "-1", 0, -5, True, 1.5, "1e3", "5P", "2 ** 10", None]
)
def test_wrong_cache_sizes_are_refused(value):
    with pytest.raises(KerasElmoError, match="such as 500M or 20G") as error:
        parse_cache_size(value)
    assert error.value.argument == "teacher_cache_size"


CACHE = "--teacher-cache"


@pytest.mark.parametrize(
    "extra, words",
    [
        ([f"{CACHE}-size", "ten"], [f"{CACHE}-size", "ten"]),
        ([f"{CACHE}-precision", "float32"],
         [f"{CACHE}-precision sets the teacher cache", CACHE]),
        ([CACHE, "{output}"], [f"{CACHE} is or holds", "--output"]),
        ([CACHE, "{train}"], [f"{CACHE} is an existing file"]),
        ([CACHE, "{notes}"], [f"{CACHE} holds what is not"]),
        ([CACHE, "{cache}", f"{CACHE}-precision", "bfloat16"],
         [f"argument {CACHE}-precision", "bfloat16"]),
    ],
)  # fmt: skip
def test_bad_cache_settings_are_refused_by_their_flags(
    tmp_path, capsys, extra, words
):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("mine")
    paths = {
        "output": tmp_path / "run",
        "train": TRAIN_TEXT,
        "notes": tmp_path / "notes",
        "cache": tmp_path / "cache",
    }
    extra = [word.format(**paths) for word in extra]
    _distill(tmp_path / "run", 1, *extra, teacher=MODEL_DIR, code=2)
    error = capsys.readouterr().err
    for word in words:
        assert word in error
    assert "Traceback" not in error
    assert not os.path.exists(tmp_path / "run")
