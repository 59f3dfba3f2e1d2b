"""`keras-elmo distill`: a student biLM learns a teacher's layers.

The layer loss is checked against the same arithmetic done here in NumPy
on the teacher and student outputs of separate calls; the command is
checked end to end with the bilm-tf fixture as the teacher (and a
word-input and an ELMoForManyLangs teacher), resumed, and refused on a
bad teacher and bad sizes.
"""

import json
import os
import shutil

import numpy as np
import pytest

import keras_elmo
from elmo_core.ids.vocabulary import Vocabulary
from elmo_core.settings.distillation import LAYER_LOSSES
from keras_elmo.data import lm_dataset
from keras_elmo.data import scan_corpus
from keras_elmo.data.word_ids import lookup_table
from keras_elmo.layers import BiLM
from keras_elmo.loading import classify
from keras_elmo.models import DistilledLanguageModel
from keras_elmo.models.distilled_language_model import matched_layers
from keras_elmo.training.run_directory import load_run
from keras_elmo.training.teacher_start import start_from_teacher
from keras_elmo_cli import main
from tests.helpers import MODEL_DIR
from tests.helpers import TRAIN_TEXT
from tests.helpers import TRAIN_VOCAB
from tests.helpers import change_lstm_weights
from tests.helpers import folder_digest
from tests.helpers import subprocess_report
from tests.helpers import tiny_bilm_kwargs
from tests.helpers import train_interrupted_then_resumed
from tests.helpers import two_cpu_strategy
from tests.shared import DISTILL_FLAGS
from tests.shared import RUN_STEPS
from tests.shared import copied
from tests.shared import printed

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
WORD_TEACHER = os.path.join(FIXTURES, "bilm-tf-words", "model")
EFML_TEACHER = os.path.join(FIXTURES, "elmo_for_many_langs", "word_model")
# The shared distillation run's flags (tests/shared.py): a tiny student,
# runs of seconds.
FLAGS = DISTILL_FLAGS


def _distill(output, steps, *extra, teacher=MODEL_DIR, code=0, quiet=True):
    flags = FLAGS if quiet else [f for f in FLAGS if f != "--quiet"]
    args = [
        "distill", "--teacher", teacher, "--train", TRAIN_TEXT,
        "--vocab", TRAIN_VOCAB, "--output", str(output),
        "--steps", str(steps), *flags, *extra,
    ]  # fmt: skip
    assert main(args) == code


def _batch(vocabulary):
    scan = scan_corpus([TRAIN_TEXT], max_length=30, tokens_per_batch=200)
    dataset = lm_dataset(scan, vocabulary, shuffle=False, repeat=False)
    return next(iter(dataset))


def _layer_loss(student, teacher, maps, matched, x, kind):
    """The layer loss by hand: per position of `<S> tokens </S>`, the
    distance of each mapped student layer to its teacher layer."""
    ours = student(x, keep_boundaries=True)
    theirs = teacher(x, keep_boundaries=True)["layer_outputs"]
    mask = np.asarray(ours["mask"], "float64")
    total = 0.0
    for k, layer in enumerate(ours["layer_outputs"]):
        kernel, bias = maps[k]
        mapped = np.asarray(layer, "float64") @ kernel + bias
        target = np.asarray(theirs[matched[k]], "float64")
        distance = 0.0
        if kind in ("mse", "both"):
            distance += np.mean((mapped - target) ** 2, axis=-1)
        if kind in ("cosine", "both"):
            dot = np.sum(mapped * target, axis=-1)
            norms = np.linalg.norm(mapped, axis=-1) * np.linalg.norm(
                target, axis=-1
            )
            distance += 1.0 - dot / np.maximum(norms, 1e-6)
        total += np.sum(distance * mask)
    return total / len(matched) / mask.sum()


@pytest.mark.parametrize("num_layers", [1, 2, 3])
def test_the_loss_is_the_language_model_plus_the_layer_distances(num_layers):
    vocabulary = Vocabulary.from_file(TRAIN_VOCAB)
    student = BiLM(**tiny_bilm_kwargs(num_layers=num_layers), dropout=0.0)
    model = DistilledLanguageModel(
        student,
        vocabulary_size=len(vocabulary),
        num_sampled=len(vocabulary),  # the full softmax: no sampling
        dropout=0.0,
        teacher_layers=3,
        teacher_width=32,
        lm_weight=0.5,
        layer_weight=2.0,
    )
    model.build()
    model.attach_teacher(keras_elmo.load_bilm(MODEL_DIR))
    x, y, weights = _batch(vocabulary)
    outputs = model(x, training=True)
    maps = [(m.kernel.numpy(), m.bias.numpy()) for m in model.layer_maps]
    matched = {1: [0, 2], 2: [0, 1, 2], 3: [0, 1, 1, 2]}[num_layers]
    assert model.matched == matched
    teacher = keras_elmo.load_bilm(MODEL_DIR)  # another instance
    # Every kind of layer loss on the same outputs: the loss reads
    # `layer_loss` when it is computed.
    for kind in LAYER_LOSSES:
        model.layer_loss = kind
        trained = model.compute_loss(x, y, outputs, weights, training=True)
        language = model.compute_loss(x, y, outputs, weights, training=False)
        expected = _layer_loss(student, teacher, maps, matched, x, kind)
        assert expected > 0.01
        np.testing.assert_allclose(
            float(trained) - 0.5 * float(language),
            2.0 * expected,
            rtol=1e-4,
            err_msg=kind,
        )


@pytest.mark.parametrize("student_reads", ["characters", "words"])
@pytest.mark.parametrize("teacher_source", [WORD_TEACHER, EFML_TEACHER])
def test_a_teacher_reads_its_own_ids_of_the_batch_tokens(
    student_reads, teacher_source
):
    # The student's vocabulary is not the word teacher's: the teacher
    # must read the ids of its own, made in the input pipeline.
    import tensorflow as tf

    from elmo_core.ids.host_ids import host_inputs
    from keras_elmo.data.datasets import make_lm_batch

    given = Vocabulary.from_file(TRAIN_VOCAB).tokens
    vocabulary = Vocabulary(given[:3] + given[:2:-1])  # words reversed
    source = classify(teacher_source)
    own = source.read().vocabulary
    sentences = [
        ["the", "quantum", "zebras", "make", "embeddings", "."],
        ["neural", "language", "models", "unseen-word"],
    ]
    kwargs = tiny_bilm_kwargs()
    if student_reads == "words":
        kwargs = {k: kwargs[k] for k in ("units", "projection_dim",
                  "num_layers")}  # fmt: skip
        kwargs.update(token_encoder="words", vocabulary_size=len(vocabulary))
    teacher = source.load_bilm()
    model = DistilledLanguageModel(
        BiLM(**kwargs),
        vocabulary_size=len(vocabulary),
        teacher_layers=teacher.num_layers + 1,
        teacher_width=2 * teacher.projection_dim,
    )
    model.build()
    model.attach_teacher(teacher, own)
    width = max(len(s) for s in sentences)
    tokens = tf.constant([s + [""] * (width - len(s)) for s in sentences])
    x, _, _ = make_lm_batch(
        tokens,
        lookup_table(vocabulary),
        vocabulary.bos_id,
        vocabulary.eos_id,
        student_reads,
        model.teacher_token_inputs,
    )
    got = model.teacher_outputs(x)
    ids = host_inputs(teacher.encoder, sentences, own)
    want = teacher(ids, keep_boundaries=True)["layer_outputs"]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-6)


def test_layers_are_matched_by_relative_depth():
    assert matched_layers(3, 3) == [0, 1, 2]
    assert matched_layers(3, 5) == [0, 2, 4]
    assert matched_layers(2, 5) == [0, 4]
    assert matched_layers(5, 3) == [0, 1, 1, 2, 2]
    assert matched_layers(1, 3) == [0]


def test_distill_trains_a_student_that_exports_and_loads(
    tmp_path, distilled_run
):
    # The shared run (tests/shared.py distill_run, which also checks that
    # the teacher is only read), copied.
    copied(distilled_run, tmp_path / "run")
    with open(tmp_path / "run" / "config.json") as f:
        config = json.load(f)
    assert config["distill"]["teacher"] == MODEL_DIR
    assert config["distill"]["teacher_layers"] == 3
    assert config["bilm"]["units"] == 16
    # The checkpoint holds the student, its maps and softmax: no teacher.
    with open(tmp_path / "run" / "checkpoint" / "meta.json") as f:
        keys = [key for key, _ in json.load(f)["variables"]]
    assert any("layer_map_2" in key for key in keys)
    teacher_weights = keras_elmo.load_bilm(MODEL_DIR).count_params()
    model, _, _ = load_run(str(tmp_path / "run"))
    saved = sum(
        np.prod(shape)
        for key, shape in _meta_shapes(tmp_path / "run")
        if not key.startswith(("optimizer", "seed"))
    )
    assert saved < model.count_params() + teacher_weights
    assert main(["export-weights", "--model", str(tmp_path / "run"),
                 "--output", str(tmp_path / "export")]) == 0  # fmt: skip
    exported = keras_elmo.load_bilm(str(tmp_path / "export"))
    assert exported.units == 16 and exported.projection_dim == 8
    x = {"character_ids": keras_elmo.batch_to_ids([["The", "cat", "."]])}
    np.testing.assert_allclose(
        exported(x)["layer_outputs"][-1],
        model.bilm(x)["layer_outputs"][-1],
        atol=1e-6,
    )
    assert main(["evaluate", "--model", str(tmp_path / "run"),
                 "--data", TRAIN_TEXT, "--quiet"]) == 0  # fmt: skip


def _meta_shapes(run):
    with open(run / "checkpoint" / "meta.json") as f:
        return json.load(f)["variables"]


def _student_layer_loss(run, teacher):
    """The layer loss of a run's student (and maps) on the fixture text,
    computed by hand."""
    model, vocabulary, _ = load_run(str(run))
    x, _, _ = _batch(vocabulary)
    maps = [(m.kernel.numpy(), m.bias.numpy()) for m in model.layer_maps]
    return _layer_loss(model.bilm, teacher, maps, model.matched, x, "mse")


# Large: ~37 s; test_teacher_cache's student learns the teacher outputs by
# default
@pytest.mark.large
def test_the_student_learns_the_teacher_layers(tmp_path):
    teacher = keras_elmo.load_bilm(MODEL_DIR)
    _distill(tmp_path / "first", 1, "--lm-weight", "0")
    _distill(tmp_path / "more", 60, "--lm-weight", "0",
             "--learning-rate", "0.01")  # fmt: skip
    first = _student_layer_loss(tmp_path / "first", teacher)
    more = _student_layer_loss(tmp_path / "more", teacher)
    assert more < 0.5 * first


# ~25 s each; their ids are checked by default (test_a_teacher_reads_...).
@pytest.mark.large
@pytest.mark.parametrize("teacher", [WORD_TEACHER, EFML_TEACHER])
def test_teachers_that_read_tokens_otherwise(tmp_path, teacher, capsys):
    # A word-input teacher reads its own vocabulary's ids, an
    # ELMoForManyLangs teacher its own character ids: the batches carry
    # them beside the student's character ids.
    _distill(tmp_path / "run", 3, teacher=teacher)
    model, _, config = load_run(str(tmp_path / "run"))
    source = keras_elmo.load_bilm(teacher)
    assert config.distill["teacher_layers"] == source.num_layers + 1
    assert config.distill["teacher_width"] == 2 * source.projection_dim
    assert model.bilm.token_encoder == "characters"


# Large: ~20 s; an interrupted distillation resumes to the same weights by
# default with a teacher cache
# (tests/test_teacher_cache.py::test_an_interrupted_run_resumes_with_its_cache).
@pytest.mark.large
def test_an_interrupted_distillation_resumes_to_the_same_weights(
    tmp_path, monkeypatch
):
    extra = ["--checkpoint-every", "2"]
    _distill(tmp_path / "whole", 4, *extra)
    train_interrupted_then_resumed(
        monkeypatch,
        lambda code: _distill(tmp_path / "resumed", 4, *extra, code=code),
    )
    whole, _, _ = load_run(str(tmp_path / "whole"))
    resumed, _, _ = load_run(str(tmp_path / "resumed"))
    for got, want in zip(resumed.get_weights(), whole.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_resume_with_another_teacher_is_refused(
    tmp_path, capsys, distilled_run
):
    copied(distilled_run, tmp_path / "run")
    _distill(tmp_path / "run", 4, teacher=WORD_TEACHER, code=2)
    error = capsys.readouterr().err
    assert "other settings" in error and "teacher" in error


def test_a_teacher_changed_under_its_name_is_refused(tmp_path, capsys):
    import shutil

    teacher = tmp_path / "teacher"
    shutil.copytree(MODEL_DIR, teacher)
    _distill(tmp_path / "run", 2, teacher=str(teacher))
    change_lstm_weights(teacher)
    _distill(tmp_path / "run", 4, teacher=str(teacher), code=2)
    error = capsys.readouterr().err
    # Issue 63: the generic "other settings" with two 64-digit digests.
    assert "is not the one the run in" in error
    assert "its weights differ (changed in place since?)" in error
    assert "--teacher" in error and "Traceback" not in error


def test_a_run_resumes_with_the_command_that_started_it(
    tmp_path, capsys, distilled_run, trained_run
):
    copied(distilled_run, tmp_path / "run")
    train = ["train", "--train", TRAIN_TEXT, "--vocab", TRAIN_VOCAB,
             "--steps", "4", *FLAGS]  # fmt: skip
    assert main([*train, "--output", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err
    assert "resume it by distilling from `teacher` " in error
    copied(trained_run, tmp_path / "plain")
    _distill(tmp_path / "plain", 4, code=2)
    assert "holds a training run (of train, not distill)" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "teacher, message",
    [
        ("no/such/model", "--teacher"),
        (TRAIN_TEXT, "--teacher"),
        ("", "--teacher: expected a value"),
    ],
)
def test_a_bad_teacher_is_refused_by_its_flag(
    tmp_path, capsys, teacher, message
):
    _distill(tmp_path / "run", 2, teacher=teacher, code=2)
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
    assert not (tmp_path / "run").exists()


def test_the_teacher_cannot_be_the_output(tmp_path, capsys):
    shutil.copytree(MODEL_DIR, tmp_path / "export")
    before = folder_digest(tmp_path / "export")
    _distill(tmp_path / "export", 2, teacher=str(tmp_path / "export"),
             code=2)  # fmt: skip
    assert "--output" in capsys.readouterr().err
    assert folder_digest(tmp_path / "export") == before


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--units", "0"], "--units"),
        (["--units", "4"], "--projection-dim"),
        (["--size", "huge"], "--size"),
        (["--filters", "[[1, -4]]"], "--filters"),
        (["--windows", "20"], "--windows"),
        (["--layer-loss", "l1"], "--layer-loss"),
        (["--lm-weight", "nan"], "--lm-weight"),
        (["--lm-weight", "-1"], "--lm-weight"),
        (["--lm-weight", "0", "--layer-weight", "0"], "--layer-weight"),
    ],
)
def test_bad_sizes_and_settings_are_refused_by_their_flags(
    tmp_path, capsys, extra, message
):
    _distill(tmp_path / "run", 2, *extra, code=2)
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
    assert not (tmp_path / "run").exists()


# === The student starting from the teacher's character layers ===


def _built(**overrides):
    bilm = BiLM(**tiny_bilm_kwargs(**overrides))
    bilm(keras_elmo.batch_to_ids([["a", "b"]]))
    return bilm


def test_the_student_starts_from_the_teacher_strongest_filters():
    teacher = keras_elmo.load_bilm(MODEL_DIR)  # filters 4, 8, 16 of 1-3
    # Width 1: more than the teacher has; 2: fewer; 6: none of the
    # teacher's.
    student = _built(filters=[[1, 6], [2, 3], [6, 2]])
    fresh = [k.numpy().copy() for k in student.char_cnn.kernels]
    start = start_from_teacher(student, teacher, "filters", "the fixture")
    assert start.endswith("character embeddings and 7 of 11 filters")
    np.testing.assert_array_equal(
        student.char_cnn.embeddings.numpy(),
        teacher.char_cnn.embeddings.numpy(),
    )
    theirs = teacher.char_cnn
    ours = student.char_cnn
    # Width 1: the teacher's 4 filters in their order, 2 left fresh.
    np.testing.assert_array_equal(
        ours.kernels[0].numpy()[:, :, :4], theirs.kernels[0].numpy()
    )
    np.testing.assert_array_equal(
        ours.kernels[0].numpy()[:, :, 4:], fresh[0][:, :, 4:]
    )
    np.testing.assert_array_equal(
        ours.biases[0].numpy()[:4], theirs.biases[0].numpy()
    )
    # Width 2: the 3 of the teacher's 8 with the largest weights.
    kernel = theirs.kernels[1].numpy()
    norms = [np.linalg.norm(kernel[:, :, j]) for j in range(8)]
    strongest = sorted(sorted(range(8), key=lambda j: -norms[j])[:3])
    np.testing.assert_array_equal(
        ours.kernels[1].numpy(), kernel[:, :, strongest]
    )
    np.testing.assert_array_equal(
        ours.biases[1].numpy(), theirs.biases[1].numpy()[strongest]
    )
    np.testing.assert_array_equal(ours.kernels[2].numpy(), fresh[2])


@pytest.mark.parametrize("activation, what", [("relu", "embeddings"),
                                              ("tanh", "auto")])  # fmt: skip
def test_the_student_starts_from_the_teacher_embeddings_alone(activation, what):
    # Asked for, or all `auto` copies to filters of another activation.
    teacher = keras_elmo.load_bilm(MODEL_DIR)  # relu
    student = _built(activation=activation)
    fresh = [k.numpy().copy() for k in student.char_cnn.kernels]
    start = start_from_teacher(student, teacher, what, "fixture")
    assert start.endswith("the teacher's character embeddings")
    np.testing.assert_array_equal(
        student.char_cnn.embeddings.numpy(),
        teacher.char_cnn.embeddings.numpy(),
    )
    for got, want in zip(student.char_cnn.kernels, fresh):
        np.testing.assert_array_equal(got.numpy(), want)


def test_filters_of_another_activation_are_refused():
    teacher = keras_elmo.load_bilm(MODEL_DIR)  # relu
    student = _built(activation="tanh")
    with pytest.raises(keras_elmo.KerasElmoError, match="use relu and"):
        start_from_teacher(student, teacher, "filters", "the fixture")
    assert start_from_teacher(student, teacher, "none", "fixture") is None


# Large: ~20 s (54 s in a full run); starting from the teacher's filters is
# checked by default through `auto`
# (test_by_default_the_student_starts_from_what_the_teacher_allows) and
# start_from_teacher's own tests above.
@pytest.mark.large
def test_distill_from_the_teacher_filters(tmp_path, capsys):
    _distill(tmp_path / "run", 1, "--from-teacher", "filters", quiet=False)
    out = capsys.readouterr().out
    assert (
        "the student starts from the teacher's character embeddings and "
        "8 of 8 filters" in out
    )
    _, _, config = load_run(str(tmp_path / "run"))
    assert config.distill["from_teacher"] == "filters"
    # Resumed (more steps): started once, not again.
    _distill(tmp_path / "run", 2, "--from-teacher", "filters", quiet=False)
    out = capsys.readouterr().out
    assert "resuming" in out and "starts from the teacher" not in out


# Large: ~29 s; a run from before student kinds resumes by default
# (test_a_run_from_before_student_kinds_reads_as_elmo)
@pytest.mark.large
def test_a_run_from_before_from_teacher_resumes_as_it_started(tmp_path, capsys):
    # Such a run started fresh: it reads as `none`, which the default
    # (`auto`) is not.
    _distill(tmp_path / "run", 1, "--from-teacher", "none")
    path = tmp_path / "run" / "config.json"
    config = json.loads(path.read_text())
    del config["distill"]["from_teacher"]
    path.write_text(json.dumps(config))
    _distill(tmp_path / "run", 2, code=2)
    error = capsys.readouterr().err
    assert "distill.from_teacher: 'none' there, 'auto' now" in error
    _distill(tmp_path / "run", 2, "--from-teacher", "none", quiet=False)
    assert "resuming" in capsys.readouterr().out
    _, _, config = load_run(str(tmp_path / "run"))
    assert config.distill["from_teacher"] == "none"


@pytest.mark.parametrize(
    "teacher, start",
    [
        (MODEL_DIR, "character embeddings and 8 of 8 filters"),
        (WORD_TEACHER, "starts fresh (auto: the teacher (the export "),
    ],
)
def test_by_default_the_student_starts_from_what_the_teacher_allows(
    tmp_path, capsys, teacher, start, distilled_run
):
    if teacher == MODEL_DIR:  # the shared run: this teacher, the default
        run, out = distilled_run, printed(distilled_run)
    else:
        run = tmp_path / "run"
        _distill(run, 1, teacher=teacher, quiet=False)
        out = capsys.readouterr().out
    assert start in out
    _, _, config = load_run(str(run))
    assert config.distill["from_teacher"] == "auto"


def test_a_student_given_init_from_starts_from_it(
    tmp_path, capsys, distilled_run
):
    first = ["--init-from", distilled_run]
    _distill(tmp_path / "run", 1, *first, quiet=False)
    out = capsys.readouterr().out
    assert "starts" not in out and "initialised the biLM" in out
    _, _, config = load_run(str(tmp_path / "run"))
    assert config.distill["from_teacher"] == "none"


@pytest.mark.parametrize(
    "extra, teacher, message",
    [
        (["--from-teacher", "filters"], WORD_TEACHER, "reads words"),
        (["--from-teacher", "embeddings", "--char-embedding-dim", "8"],
         MODEL_DIR, "in 4 dimensions and the student in 8"),
        (["--from-teacher", "filters", "--init-from", MODEL_DIR],
         MODEL_DIR, "not both"),
        (["--from-teacher", "all"], MODEL_DIR, "--from-teacher"),
    ],
)  # fmt: skip
def test_a_student_that_cannot_start_from_its_teacher_is_refused(
    tmp_path, capsys, extra, teacher, message
):
    _distill(tmp_path / "run", 1, *extra, teacher=teacher, code=2)
    error = capsys.readouterr().err
    assert message in error and "--from-teacher" in error, error
    assert "Traceback" not in error
    assert not (tmp_path / "run").exists()


def test_distill_from_python(tmp_path):
    output = keras_elmo.distill(
        MODEL_DIR,
        TRAIN_TEXT,
        str(tmp_path / "run"),
        vocab=TRAIN_VOCAB,
        steps=2,
        units=16,
        projection_dim=8,
        tokens_per_batch=64,
        max_length=30,
        mixed_precision="off",
        verbose=0,
    )
    student = keras_elmo.load_bilm(output)
    assert student.units == 16
    with pytest.raises(keras_elmo.KerasElmoError, match="unit"):
        keras_elmo.distill(MODEL_DIR, TRAIN_TEXT, str(tmp_path / "x"),
                           vocab=TRAIN_VOCAB, unit=16)  # fmt: skip


# === Two replicas ===


def _two_replicas_report(corpus):
    """Runs in a subprocess (two logical CPUs): three distillation steps
    on two replicas and on one device, from the same weights; prints a
    JSON report."""
    import functools

    from elmo_core.settings.training_config import TrainingConfig
    from keras_elmo.training.compiled_model import build_model
    from keras_elmo.training.distill_settings import distill_settings
    from keras_elmo.training.distribute import DistributedLoop
    from keras_elmo.training.distribute import distribute_lm_dataset

    strategy = two_cpu_strategy()
    vocabulary = Vocabulary.from_file(TRAIN_VOCAB)
    # The global batch: 2 replicas x 64 tokens.
    scan = scan_corpus([corpus], max_length=30, tokens_per_batch=128)
    teacher = keras_elmo.load_bilm(MODEL_DIR)
    config = TrainingConfig(
        train_files=[corpus],
        bilm=tiny_bilm_kwargs(units=16, projection_dim=8),
        vocabulary_size=len(vocabulary),
        tokens_per_batch=64,
        max_length=30,
        num_sampled=len(vocabulary),
        dropout=0.0,
        optimizer="adam",
        learning_rate=0.01,
        clip_norm=0.2,
        distill=distill_settings(MODEL_DIR, teacher, layer_weight=3.0),
    )
    one = build_model(config)
    with strategy.scope():
        two = build_model(config)
    for mine, theirs in zip(two.variables, one.variables):
        mine.assign(theirs.numpy())
    one.attach_teacher(teacher)
    two.attach_teacher(teacher)
    batches = functools.partial(lm_dataset, scan, vocabulary, seed=5)

    def replica_loss(x, y, w):
        return two.compute_loss(x, y, two(x, training=True), w)

    shares = strategy.run(
        replica_loss, args=next(iter(distribute_lm_dataset(strategy, batches)))
    )
    losses_one = [
        one.train_on_batch(x, y, sample_weight=w, return_dict=True)["loss"]
        for x, y, w in batches().take(3)
    ]
    loop = DistributedLoop(two, strategy)
    stream = iter(distribute_lm_dataset(strategy, batches))
    losses_two = [float(loop.train_step(stream)["loss"]) for _ in range(3)]
    weights = [
        float(np.max(np.abs(a.numpy() - b.numpy())))
        for a, b in zip(one.trainable_variables, two.trainable_variables)
    ]
    report = {
        "one": [float(x) for x in losses_one],
        "two": losses_two,
        "shares": [
            float(x) for x in strategy.experimental_local_results(shares)
        ],
        "weights": max(weights),
    }
    print("REPORT " + json.dumps(report))


@pytest.mark.large  # ~30 s; the windows' two-replica twin runs by default
def test_two_replicas_distil_as_one_device(tmp_path):
    with open(TRAIN_TEXT) as f:
        lines = f.readlines()
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(lines * 12))
    report = subprocess_report(
        "tests.test_distill:_two_replicas_report", str(corpus)
    )
    # Both replicas hold part of the first global batch.
    assert min(report["shares"]) > 0.1, report
    np.testing.assert_allclose(report["two"], report["one"], rtol=1e-5)
    assert report["weights"] < 1e-5, report


# === The student kind ===

# The lstm kind: plain LSTMs, of the same width as their output.
PLAIN = ["--student-kind", "lstm", "--projection-dim", "16"]


# Large: ~44 s; test_fused_lstm checks the student's fused ops by default
@pytest.mark.large
def test_an_lstm_student_is_plain_and_exports_fused(tmp_path):
    _distill(tmp_path / "run", 4, *PLAIN)
    with open(tmp_path / "run" / "config.json") as f:
        config = json.load(f)
    assert config["distill"]["student_kind"] == "lstm"
    size = {k: config["bilm"][k] for k in ("units", "projection_dim")}
    assert size == {"units": 16, "projection_dim": 16}
    assert config["bilm"]["cell_clip"] is config["bilm"]["proj_clip"] is None
    # It loads, mixes and fine-tunes like any biLM.
    student = keras_elmo.load_bilm(str(tmp_path / "run"))
    assert student.cell_clip is None and student.units == 16
    tokens = keras_elmo.batch_to_ids([["The", "cat", "."], ["A"]])
    elmo = keras_elmo.ELMoEmbedding(student, fine_tune=True)
    model = keras_elmo_model(elmo)
    before = [w.numpy().copy() for w in student.trainable_weights]
    model.fit(tokens, np.zeros((2, 3, 1), "float32"), verbose=0)
    assert any(
        not np.array_equal(a, b.numpy())
        for a, b in zip(before, student.trainable_weights)
    )
    # export-onnx and export-litert --model RUN write fused kernels.
    for command, name in (
        ("export-onnx", "s.onnx"),
        ("export-litert", "s.tflite"),
    ):
        path = str(tmp_path / name)
        argv = [command, "--model", str(tmp_path / "run"), "--output", path]
        assert main([*argv, "--precision", "int8", "--quiet"]) == 0
    from elmo_core.runtime import LiteRTBiLM
    from elmo_core.runtime import ONNXBiLM

    for runtime, name in ((ONNXBiLM, "s.onnx"), (LiteRTBiLM, "s.tflite")):
        exported = runtime(str(tmp_path / name))
        assert exported.metadata["export_options"]["fused_lstm"] is True
        assert exported(tokens)["layer_outputs"][1].shape == (2, 3, 32)


def keras_elmo_model(elmo):
    import keras

    inputs = keras.Input((None, 50), dtype="int32")
    outputs = keras.layers.Dense(1)(elmo(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse")
    return model


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--student-kind", "lstm"], "--projection-dim must equal --units"),
        (PLAIN + ["--cell-clip", "3"], "--cell-clip 3.0"),
        (PLAIN + ["--size", "tiny"], "--cell-clip 3.0"),
        (["--student-kind", "gru"], "--student-kind"),
    ],
)
def test_a_student_not_of_its_kind_is_refused(tmp_path, capsys, extra, message):
    _distill(tmp_path / "run", 2, *extra, code=2)
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
    assert not (tmp_path / "run").exists()


def test_train_takes_no_student_kind(tmp_path, capsys):
    output = str(tmp_path / "run")
    argv = ["train", "--train", TRAIN_TEXT, "--vocab", TRAIN_VOCAB,
            "--output", output, "--student-kind", "lstm"]  # fmt: skip
    assert main(argv) == 2
    assert "unrecognized arguments: --student-kind" in capsys.readouterr().err


def test_a_run_from_before_student_kinds_reads_as_elmo(tmp_path, distilled_run):
    copied(distilled_run, tmp_path / "run")
    path = tmp_path / "run" / "config.json"
    config = json.loads(path.read_text())
    del config["distill"]["student_kind"]
    path.write_text(json.dumps(config))
    _distill(tmp_path / "run", RUN_STEPS + 1)
    _, _, config = load_run(str(tmp_path / "run"))
    assert config.distill["student_kind"] == "elmo"
