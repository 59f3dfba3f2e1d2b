"""Training on windows of continuous text (`--windows N`, bilm-tf's
recipe): the streams the batches are cut from, the LSTM state carried
from one window to the next (two windows equal one window twice as long),
resume in the middle of the streams, and two replicas equal one device."""

import json
import shutil

import numpy as np
import pytest

from elmo_core.ids.vocabulary import Vocabulary
from keras_elmo.data.windows import window_batches
from keras_elmo.training.run_directory import load_run
from keras_elmo_cli import main
from tests.helpers import STEPWISE_TRAIN_FLAGS
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import TRAIN_TEXT
from tests.helpers import TRAIN_VOCAB
from tests.helpers import subprocess_report
from tests.helpers import train_interrupted_then_resumed
from tests.helpers import two_cpu_strategy


def _sentences(path=TRAIN_TEXT):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f if line.split()]


def _streams(batches, rows, vocabulary):
    """Each row's forward and backward streams, rebuilt from the batches'
    word ids, with the target of each position."""
    words = {i + 1: t for i, t in enumerate(vocabulary.tokens)}
    forward = [[] for _ in range(rows)]
    backward = [[] for _ in range(rows)]
    for x, y, w in batches:
        assert w.min() == 1.0
        for r in range(rows):
            ahead = [words[i] for i in x["token_ids"][r]]
            # The backward window is reversed in time.
            behind = [words[i] for i in x["backward_token_ids"][r][::-1]]
            forward[r].append((ahead, list(y[r, 0])))
            backward[r].append((behind, list(y[r, 1][::-1])))
    return forward, backward


def _check_stream(windows, vocabulary, sentences, reverse):
    tokens = [t for window, _ in windows for t in window]
    targets = [t for _, target in windows for t in target]
    # Each position's target is the next token of the stream.
    ids = [vocabulary.id(t) for t in tokens]
    assert targets[:-1] == ids[1:]
    # The stream is whole sentences, each between its boundaries.
    first, last = ("</S>", "<S>") if reverse else ("<S>", "</S>")
    text = " ".join(tokens).split(f"{last} {first}")
    # Word ids: a word out of the vocabulary reads as <UNK>.
    sentences = [[vocabulary.tokens[vocabulary.id(t)] for t in s]
                 for s in sentences]  # fmt: skip
    known = {" ".join(s[::-1] if reverse else s) for s in sentences}
    inner = [part.strip().removeprefix(first).removesuffix(last).strip()
             for part in text[1:-1]]  # fmt: skip
    assert inner and all(part in known for part in inner)


def test_windows_are_cut_from_streams_of_whole_sentences():
    vocabulary = Vocabulary.from_file(TRAIN_VOCAB)
    batches = window_batches(
        [TRAIN_TEXT], vocabulary, rows=3, length=5, seed=2,
        token_encoder="words",
    )  # fmt: skip
    taken = [next(batches) for _ in range(40)]
    assert taken[0][0]["token_ids"].shape == (3, 5)
    assert taken[0][1].shape == (3, 2, 5)
    forward, backward = _streams(taken, 3, vocabulary)
    sentences = _sentences()
    for r in range(3):
        _check_stream(forward[r], vocabulary, sentences, reverse=False)
        _check_stream(backward[r], vocabulary, sentences, reverse=True)
    # The directions draw their sentences in different orders.
    assert forward[0][:4] != [(w[::-1], t) for w, t in backward[0][:4]]


def test_a_start_step_gives_the_batches_after_it():
    vocabulary = Vocabulary.from_file(TRAIN_VOCAB)

    def batches(start):
        stream = window_batches(
            [TRAIN_TEXT], vocabulary, rows=2, length=4, seed=1,
            start_step=start,
        )  # fmt: skip
        return [next(stream) for _ in range(6)]

    whole, later = batches(0), batches(3)
    for (x, y, _), (x2, y2, _) in zip(whole[3:], later):
        np.testing.assert_array_equal(x["character_ids"], x2["character_ids"])
        np.testing.assert_array_equal(
            x["backward_character_ids"], x2["backward_character_ids"]
        )
        np.testing.assert_array_equal(y, y2)
    # The boundaries are read as bilm-tf's <S> and </S> characters.
    ids = whole[0][0]["character_ids"][0, 0]
    assert ids[:3].tolist() == [259, 257, 260]


def _window_model():
    import keras_elmo
    from keras_elmo.models import ELMoLanguageModel

    bilm = keras_elmo.layers.BiLM(
        filters=[[1, 4], [2, 8]], char_embedding_dim=4,
        num_highway_layers=1, units=16, projection_dim=8,
    )  # fmt: skip
    model = ELMoLanguageModel(bilm, vocabulary_size=10, window_rows=2)
    model.build()
    return model


def test_two_windows_equal_one_window_twice_as_long():
    import keras_elmo

    model = _window_model()
    rng = np.random.default_rng(0)
    words = [["".join(rng.choice(list("abcdef"), 3)) for _ in range(8)]
             for _ in range(2)]  # fmt: skip
    forward = keras_elmo.batch_to_ids(words)
    backward = keras_elmo.batch_to_ids([w[::-1] for w in words])
    whole = model(
        {"character_ids": forward, "backward_character_ids": backward}
    )
    for per_layer in model.window_states:
        for part in per_layer:
            for variable in part:
                variable.assign(np.zeros(variable.shape, "float32"))
    # Forward: tokens 0-3, then 4-7. Backward (reversed in time): the
    # stream it reads is positions 7..0, so its first window is the rows'
    # last four positions.
    first = model(
        {
            "character_ids": forward[:, :4],
            "backward_character_ids": backward[:, 4:],
        }
    )
    carried = float(np.abs(model.window_states[0][0][0].numpy()).max())
    second = model(
        {
            "character_ids": forward[:, 4:],
            "backward_character_ids": backward[:, :4],
        }
    )
    assert carried > 0
    got_forward = np.concatenate([first["forward"], second["forward"]], 1)
    got_backward = np.concatenate([second["backward"], first["backward"]], 1)
    np.testing.assert_allclose(got_forward, whole["forward"], atol=1e-5)
    np.testing.assert_allclose(got_backward, whole["backward"], atol=1e-5)
    # A sentence batch still starts from zeros and leaves the state alone.
    before = model.window_states[1][1][1].numpy()
    one = model({"character_ids": keras_elmo.batch_to_ids([["ab"]])})
    again = model({"character_ids": keras_elmo.batch_to_ids([["ab"]])})
    np.testing.assert_array_equal(one["forward"], again["forward"])
    np.testing.assert_array_equal(before, model.window_states[1][1][1])


FLAGS = [
    *TINY_TRAIN_FLAGS,
    "--windows", "4",
    "--tokens-per-batch", "12",
    "--max-length", "10",
    "--num-sampled", "8",
    *STEPWISE_TRAIN_FLAGS,
]  # fmt: skip


def _train(output, steps, *extra, code=0):
    args = [
        "train", "--train", TRAIN_TEXT, "--vocab", TRAIN_VOCAB,
        "--output", str(output), "--steps", str(steps),
        "--checkpoint-every", "3", *FLAGS, *extra,
    ]  # fmt: skip
    assert main(args) == code


def _state(run):
    """`(name, value)` of every model variable, in the model's order (the
    paths hold numbers Keras counts per process)."""
    model, _, _ = load_run(str(run))
    return [(v.name, v.numpy()) for v in model.variables]


def test_a_resumed_run_goes_on_from_its_carried_state(tmp_path, monkeypatch):
    _train(tmp_path / "whole", 6)
    whole = _state(tmp_path / "whole")
    train_interrupted_then_resumed(
        monkeypatch, lambda code: _train(tmp_path / "resumed", 6, code=code)
    )
    resumed = _state(tmp_path / "resumed")
    states = [value for name, value in whole if name.startswith("window_")]
    assert len(states) == 8  # 2 layers x 2 directions x (c, h)
    assert all(np.abs(value).max() > 0 for value in states)
    assert [n for n, _ in whole] == [n for n, _ in resumed]
    for (name, want), (_, got) in zip(whole, resumed):
        np.testing.assert_allclose(got, want, atol=1e-6, err_msg=name)


def test_windows_train_evaluate_and_export(tmp_path, capsys):
    run = tmp_path / "run"
    args = [
        "train", "--train", TRAIN_TEXT, "--vocab", TRAIN_VOCAB,
        "--output", str(run), "--steps", "3", "--checkpoint-every", "3",
        *[f for f in FLAGS if f != "--quiet"], "--max-length", "6",
        "--validation", TRAIN_TEXT, "--validate-every", "3",
    ]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    # Windows split no sentence; the held-out sentences are split.
    split = [x for x in printed.split("\n") if "split into pieces" in x]
    assert split and all(x.startswith("validation data:") for x in split)
    assert "training data: windows of 4 tokens" in printed
    history = json.loads((run / "history.json").read_text())
    assert np.isfinite(history[-1]["valid_perplexity"])
    assert main(["export-weights", "--model", str(run), "--output",
                 str(tmp_path / "export")]) == 0  # fmt: skip
    assert (tmp_path / "export" / "weights.hdf5").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--windows", "40"], "must hold one window"),
        (["--windows", "-1"], "--windows"),
        (["--windows", "4", "--token-encoder", "words", "--size", "bad"],
         "--size"),
    ],
)  # fmt: skip
def test_bad_windows_are_refused(tmp_path, capsys, flags, message):
    args = [
        "train", "--train", TRAIN_TEXT, "--vocab", TRAIN_VOCAB,
        "--output", str(tmp_path / "run"), "--steps", "1",
        *TINY_TRAIN_FLAGS, "--tokens-per-batch", "12", "--max-length", "10",
        *flags,
    ]  # fmt: skip
    assert main(args) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
    assert not (tmp_path / "run").exists()


def _two_replicas_versus_one_device():
    """Runs in a subprocess; prints a JSON report."""
    import functools

    from elmo_core.settings.training_config import TrainingConfig
    from keras_elmo.data.windows import windows_dataset
    from keras_elmo.training.compiled_model import build_model
    from keras_elmo.training.distribute import DistributedLoop
    from keras_elmo.training.distribute import distribute_lm_dataset
    from tests.helpers import tiny_bilm_kwargs

    strategy = two_cpu_strategy()
    vocab = Vocabulary.from_file(TRAIN_VOCAB)

    def config(tokens_per_batch):
        return TrainingConfig(
            train_files=[TRAIN_TEXT],
            bilm=tiny_bilm_kwargs(units=16, projection_dim=8),
            vocabulary_size=len(vocab),
            tokens_per_batch=tokens_per_batch,
            max_length=10,
            window_length=4,
            num_sampled=len(vocab),  # the full softmax
            dropout=0.0,
            optimizer="adagrad",
            learning_rate=1.0,
            seed=1,
        )

    # One device: 6 rows a step; two replicas: 3 rows each.
    one = build_model(config(24))
    with strategy.scope():
        two = build_model(config(12), replicas=2)
    for mine, theirs in zip(two.variables, one.variables):
        mine.assign(theirs.numpy())
    make = functools.partial(windows_dataset, [TRAIN_TEXT], vocab, 6, 4, seed=3)
    steps = 4
    losses_one = [
        one.train_on_batch(x, y, sample_weight=w, return_dict=True)["loss"]
        for x, y, w in make().take(steps)
    ]
    loop = DistributedLoop(two, strategy)
    batches = iter(distribute_lm_dataset(strategy, make))
    losses_two = [loop.train_step(batches)["loss"] for _ in range(steps)]
    states = [v for v in one.variables if "window_" in v.path]
    print(
        "REPORT "
        + json.dumps(
            {
                "losses": [float(x) for x in losses_one],
                "loss_difference": float(
                    np.max(np.abs(np.subtract(losses_one, losses_two)))
                ),
                "weight_difference": max(
                    float(np.max(np.abs(a.numpy() - b.numpy())))
                    for a, b in zip(one.variables, two.variables)
                ),
                "state_rows_moved": [
                    int((np.abs(v.numpy()).max(axis=1) > 0).sum())
                    for v in states
                ],
            }
        )
    )


def test_two_replicas_carry_their_own_rows_as_one_device_does():
    report = subprocess_report(
        "tests.test_windows:_two_replicas_versus_one_device"
    )
    assert all(np.isfinite(report["losses"]))
    assert report["loss_difference"] < 1e-5, report
    assert report["weight_difference"] < 1e-5, report
    # Every row of every state was carried (none left at zero).
    assert report["state_rows_moved"] == [6] * 8, report


@pytest.fixture(scope="module")
def three_steps(tmp_path_factory):
    run = tmp_path_factory.mktemp("windows") / "run"
    _train(run, 3)
    return run


@pytest.mark.parametrize("replicas", [10**9, 0, True, "2", 1.5])
def test_a_checkpoint_claiming_odd_replicas_is_damaged(
    tmp_path, capsys, replicas, three_steps
):
    # A run of windows keeps state for every replica's rows: a count from
    # the file is checked before anything is allocated.
    run = tmp_path / "run"
    shutil.copytree(three_steps, run)
    meta = run / "checkpoint" / "meta.json"
    values = json.loads(meta.read_text())
    values["num_replicas"] = replicas
    meta.write_text(json.dumps(values))
    code = main(["evaluate", "--model", str(run), "--data", TRAIN_TEXT])
    error = capsys.readouterr().err
    assert code != 0 and "num_replicas" in error and "damaged" in error
    assert "Traceback" not in error
