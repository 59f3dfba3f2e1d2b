"""Training word-input biLMs: the language model, the data, the command."""

import json
import os

import h5py
import numpy as np
import pytest
import tensorflow as tf

from elmo_core.errors import KerasElmoError
from elmo_core.ids.vocabulary import Vocabulary
from keras_elmo.data.datasets import lm_dataset
from keras_elmo.data.datasets import scan_corpus
from keras_elmo.layers.bilm import BiLM
from keras_elmo.loading import load_bilm
from keras_elmo.models.elmo_language_model import ELMoLanguageModel
from keras_elmo.optimizers.sparse_adagrad import SparseAdagrad
from keras_elmo.training.run_directory import load_run
from keras_elmo_cli import main
from tests.helpers import checkpoint_step
from tests.helpers import kill_and_resume

TRAIN = os.path.join(os.path.dirname(__file__), "fixtures", "bilm-tf", "train")
DATA = os.path.join(TRAIN, "data.txt")
VOCAB = os.path.join(TRAIN, "vocab.txt")


def _word_model(vocab, **kwargs):
    bilm = BiLM(
        units=16,
        projection_dim=8,
        token_encoder="words",
        vocabulary_size=len(vocab),
    )
    model = ELMoLanguageModel(bilm, len(vocab), seed=1, **kwargs)
    model.compile(optimizer=SparseAdagrad(learning_rate=0.2))
    return model


def test_word_batches_hold_vocabulary_ids():
    vocab = Vocabulary.from_file(VOCAB)
    scan = scan_corpus([DATA], max_length=20, tokens_per_batch=64)
    chars = next(iter(lm_dataset(scan, vocab, shuffle=False)))
    words = next(
        iter(lm_dataset(scan, vocab, shuffle=False, token_encoder="words"))
    )
    x, y, w = words
    assert sorted(x) == ["token_ids"]
    ids = x["token_ids"].numpy()
    # The same sentences and targets; inputs are target-vocabulary ids + 1.
    np.testing.assert_array_equal(y, chars[1])
    np.testing.assert_array_equal(w, chars[2])
    forward = y.numpy()[:, 0, : ids.shape[1]]
    real = ids > 0
    np.testing.assert_array_equal(ids[real], forward[real] + 1)
    np.testing.assert_array_equal(
        real, chars[0]["character_ids"].numpy().any(-1)
    )
    with pytest.raises(KerasElmoError, match="token_encoder"):
        lm_dataset(scan, vocab, token_encoder="bytes")


def test_word_language_model_loss_goes_down():
    vocab = Vocabulary.from_file(VOCAB)
    scan = scan_corpus([DATA], max_length=20, tokens_per_batch=128)
    data = lm_dataset(scan, vocab, seed=3, token_encoder="words")
    evaluation = lm_dataset(
        scan, vocab, shuffle=False, repeat=False, token_encoder="words"
    )
    model = _word_model(vocab, num_sampled=8)
    # From bilm-tf's uniform start, not the fresh Zipf bias (checked in
    # tests/test_elmo_language_model.py): what the bounds were made for.
    model.build()
    model.softmax_bias.assign(np.zeros(model.softmax_bias.shape))
    before = model.evaluate(evaluation, verbose=0, return_dict=True)
    history = model.fit(
        data, epochs=4, steps_per_epoch=20, shuffle=False, verbose=0
    )
    after = model.evaluate(evaluation, verbose=0, return_dict=True)
    losses = history.history["loss"]
    assert losses[-1] < losses[0], losses
    # Full-softmax perplexity on the training text: from about the
    # vocabulary size (32) to a fraction of it.
    assert before["perplexity"] > 25
    assert after["perplexity"] < 0.7 * before["perplexity"], (before, after)


def test_table_and_softmax_sizes_must_agree():
    vocab = Vocabulary.from_file(VOCAB)
    bilm = BiLM(
        units=16, projection_dim=8, token_encoder="words", vocabulary_size=10
    )
    with pytest.raises(KerasElmoError, match="must be 10.*vocabulary_size=32"):
        ELMoLanguageModel(bilm, len(vocab))


# === `keras-elmo train --token-encoder words` and the commands after it ===

TINY_WORDS = [
    "--token-encoder", "words",
    "--units", "16",
    "--projection-dim", "8",
    "--max-length", "30",
    "--tokens-per-batch", "64",
    "--num-sampled", "8",
]  # fmt: skip


def _train_args(output, *extra, vocab=VOCAB):
    return [
        "train",
        "--train", DATA,
        "--vocab", vocab,
        "--output", str(output),
        "--quiet",
        *TINY_WORDS,
        *extra,
    ]  # fmt: skip


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.mark.large
def test_train_evaluate_export_embed_serve(tmp_path, capsys):
    run = tmp_path / "run"
    # float32 whatever the CPU: the run's own model is compared with its
    # export below.
    args = _train_args(
        run, "--validation", DATA, "--steps", "4", "--checkpoint-every", "2",
        "--validate-every", "2", "--mixed-precision", "off",
    )  # fmt: skip
    assert main(args) == 0
    with open(run / "config.json") as f:
        bilm = json.load(f)["bilm"]
    assert bilm["token_encoder"] == "words"
    assert bilm["vocabulary_size"] == 32
    assert "filters" not in bilm
    assert checkpoint_step(run) == 4
    capsys.readouterr()
    assert main(["evaluate", "--model", str(run), "--data", DATA]) == 0
    assert "held-out perplexity" in capsys.readouterr().out

    export = tmp_path / "export"
    assert (
        main(["export-weights", "--model", str(run), "--output", str(export)])
        == 0
    )
    with open(export / "options.json") as f:
        options = json.load(f)
    assert "char_cnn" not in options and options["n_tokens_vocab"] == 32
    with h5py.File(export / "weights.hdf5") as f:
        assert f["embedding"].shape == (32, 8)
    model, vocab, _ = load_run(str(run))
    bilm = load_bilm(
        str(export / "options.json"),
        str(export / "weights.hdf5"),
        vocabulary=str(export / "vocab.txt"),
    )
    sentences = [["the", "unseen", "words"], ["of"], []]
    ids = vocab.batch_to_ids(sentences)
    for a, b in zip(
        model.bilm(ids)["layer_outputs"], bilm(ids)["layer_outputs"]
    ):
        np.testing.assert_array_equal(a, b)

    # embed: the vocabulary comes from beside options.json.
    text = tmp_path / "sentences.txt"
    text.write_text("the unseen words\nof\n\n", encoding="utf-8")
    layers = tmp_path / "layers.hdf5"
    assert (
        main(
            [
                "embed",
                "--model",
                str(export),
                "--input",
                str(text),
                "--output",
                str(layers),
                "--quiet",
            ]
        )  # fmt: skip
        == 0
    )
    expected = np.stack([np.asarray(x) for x in bilm(ids)["layer_outputs"]])
    with h5py.File(layers) as f:
        for i, sentence in enumerate(sentences):
            np.testing.assert_allclose(
                f[str(i)][...], expected[:, i, : len(sentence)], atol=1e-6
            )
    # export-savedmodel from the run: the SavedModel carries the vocabulary.
    served = tmp_path / "savedmodel"
    assert (
        main(
            ["export-savedmodel", "--model", str(run), "--output", str(served)]
        )  # fmt: skip
        == 0
    )
    loaded = tf.saved_model.load(str(served))
    got = loaded.signatures["default"](
        sentences=tf.constant(["the unseen words", "of", ""])
    )
    np.testing.assert_allclose(
        got["lstm_outputs2"], expected[2], atol=1e-5, rtol=0
    )
    # Official files without a vocabulary beside them need --bilm-vocab.
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("options.json", "weights.hdf5"):
        (bare / name).write_bytes((export / name).read_bytes())
    capsys.readouterr()
    args = [
        "embed", "--options", str(bare / "options.json"),
        "--weights", str(bare / "weights.hdf5"), "--input", str(text),
        "--output", str(tmp_path / "x.hdf5"), "--quiet",
    ]  # fmt: skip
    assert main(args) == 2
    assert "--bilm-vocab" in capsys.readouterr().err
    assert main([*args, "--bilm-vocab", str(export / "vocab.txt")]) == 0


@pytest.mark.large
def test_init_from_needs_the_same_vocabulary(tmp_path, capsys):
    run = tmp_path / "run"
    args = _train_args(run, "--steps", "2", "--checkpoint-every", "2")
    assert main(args) == 0
    assert checkpoint_step(run) == 2
    second = tmp_path / "second"
    args = [
        "train", "--train", DATA, "--vocab", VOCAB, "--output", str(second),
        "--steps", "1", "--checkpoint-every", "1", "--tokens-per-batch", "64",
        "--max-length", "30", "--init-from", str(run),
    ]  # fmt: skip
    assert main(args) == 0
    assert "biLM and softmax" in capsys.readouterr().out
    with open(second / "config.json") as f:
        assert json.load(f)["bilm"]["token_encoder"] == "words"
    other_vocab = tmp_path / "vocab.txt"
    other_vocab.write_text(
        _read(VOCAB).replace("\nthe\n", "\nThe\n"), encoding="utf-8"
    )
    third = tmp_path / "third"
    args[args.index(VOCAB)] = str(other_vocab)
    args[args.index(str(second))] = str(third)
    assert main(args) == 2
    assert "needs the same vocabulary" in capsys.readouterr().err
    # A char CNN size flag makes no sense for words.
    assert main(_train_args(tmp_path / "f", "--filters", "[[1, 4]]")) == 2
    assert "--filters size(s) the char CNN" in capsys.readouterr().err


def test_vocabulary_must_start_with_the_boundaries(tmp_path, capsys):
    moved = tmp_path / "vocab.txt"
    lines = _read(VOCAB).split("\n")[:-1]
    moved.write_text("\n".join(lines[2:] + lines[:2]) + "\n")
    args = _train_args(tmp_path / "run", "--steps", "1", vocab=str(moved))
    assert main(args) == 2
    assert "first two lines" in capsys.readouterr().err


# Large: ~20 s; an interrupted run resumes from its checkpoint by default in
# process
# (tests/test_windows.py::test_a_resumed_run_goes_on_from_its_carried_state).
@pytest.mark.large
def test_resume_after_kill(tmp_path):
    run = tmp_path / "run"
    arguments = _train_args(run, "--steps", "60", "--checkpoint-every", "5")
    kill_and_resume(arguments, run, tmp_path, 60)
