"""The training recipe: what `train` chooses by corpus size, that it says
so, and that a flag the user gives wins."""

import collections
import json
import os

import pytest

from elmo_core.settings import recipe
from elmo_core.settings.recipe import choose_recipe
from elmo_core.settings.recipe import count_tokens
from elmo_core.settings.training_config import TrainingConfig
from keras_elmo_cli import main
from tests.helpers import FIXTURES
from tests.helpers import TINY_TRAIN_FLAGS

DATA = os.path.join(FIXTURES, "train", "data.txt")  # 134 tokens
VOCAB = os.path.join(FIXTURES, "train", "vocab.txt")


@pytest.mark.parametrize(
    "tokens, epochs",
    [(1_047_731, 10.0), (100, 10.0), (2_000_000, 5.0), (3_000_000, 3.0),
     (6_000_000, 2.0), (19_999_999, 1.0)],
)  # fmt: skip
def test_a_small_corpus(tokens, epochs):
    chosen = choose_recipe(tokens)
    assert chosen.name == "small corpus"
    assert chosen.settings == {
        "min_count": 2,
        "optimizer": "adam",
        "learning_rate": 0.006,
        "learning_rate_schedule": "linear",
        "warmup_steps": 100,
        "dropout": 0.05,
        "weight_decay": 0.1,
        "tokens_per_batch": 1024,
        "num_sampled": 2048,
    }
    assert chosen.epochs == epochs
    assert choose_recipe(tokens, length_given=True).epochs is None


def test_a_large_corpus_gets_the_original_recipe():
    chosen = choose_recipe(20_000_000)
    assert chosen.name == "large corpus"
    assert chosen.settings == {
        "min_count": 1,
        "optimizer": "adagrad",
        "learning_rate": None,  # Adagrad's 0.2
        "learning_rate_schedule": "constant",
        "warmup_steps": 0,
        "dropout": 0.1,
        "weight_decay": 0.0,  # none: bilm-tf had none
        "tokens_per_batch": 4096,
        "num_sampled": 8192,
    }
    assert chosen.epochs == 1.0
    fields = TrainingConfig.__dataclass_fields__
    training = dict(chosen.settings)
    assert training.pop("min_count") == 1  # `--build-vocab`'s, not a field
    assert all(fields[k].default == v for k, v in training.items())


def test_counting_stops_at_the_limit(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("a b c d e\n" * 10)
    assert count_tokens([str(path)]) == 50
    assert count_tokens([str(path), str(path)], limit=12) == 15
    assert count_tokens([str(path), str(path)], limit=60) == 60


def _train(output, *extra, quiet=False):
    args = [
        "train", "--train", DATA, "--vocab", VOCAB,
        "--output", str(output), *TINY_TRAIN_FLAGS, "--steps", "1",
        *extra,
    ]  # fmt: skip
    return main(args + (["--quiet"] if quiet else []))


def _config(run):
    with open(os.path.join(run, "config.json")) as f:
        return json.load(f)


def test_train_says_what_it_chose_and_keeps_given_flags(tmp_path, capsys):
    run = tmp_path / "run"
    assert _train(run, "--dropout", "0.3", "--num-sampled", "8") == 0
    printed = capsys.readouterr().out
    assert (
        "recipe: small corpus (134 training tokens, under 20,000,000" in printed
    )
    assert (
        "recipe: chose optimizer=adam, learning_rate=0.006, "
        "learning_rate_schedule=linear, warmup_steps=100, weight_decay=0.1, "
        "tokens_per_batch=1024\n"
    ) in printed
    assert "recipe: kept your dropout, num_sampled" in printed
    config = _config(run)
    assert config["dropout"] == 0.3 and config["num_sampled"] == 8
    assert config["optimizer"] == "adam" and config["learning_rate"] == 0.006
    assert config["learning_rate_schedule"] == "linear"
    assert config["warmup_steps"] == 100
    assert config["weight_decay"] == 0.1
    assert config["tokens_per_batch"] == 1024
    # --steps sets the length: the recipe chose no epochs.
    assert "epochs=" not in printed


@pytest.mark.large
def test_a_given_optimizer_keeps_its_own_rate(tmp_path, capsys):
    run = tmp_path / "run"
    args = ("--optimizer", "adagrad", "--initial-accumulator", "0.5")
    assert _train(run, *args) == 0
    printed = capsys.readouterr().out
    assert (
        "recipe: chose learning_rate_schedule=linear, warmup_steps=100"
        in printed
    )
    assert "learning_rate=" not in printed
    config = _config(run)
    assert config["optimizer"] == "adagrad"
    assert config["learning_rate"] is None  # Adagrad's default, not 0.006
    assert config["initial_accumulator_value"] == 0.5


def test_adagrad_flags_with_the_recipes_adam_are_refused(tmp_path, capsys):
    assert _train(tmp_path / "r", "--initial-accumulator", "0.5") != 0
    error = capsys.readouterr().err
    assert "--initial-accumulator is Adagrad's; --optimizer adam (the " in error
    assert "recipe's) has none" in error
    assert not (tmp_path / "r").exists()


def test_a_large_corpus_through_the_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(recipe, "SMALL_CORPUS_TOKENS", 100)
    run = tmp_path / "run"
    assert _train(run, "--num-sampled", "8") == 0
    printed = capsys.readouterr().out
    assert "recipe: large corpus (at least 100 training tokens" in printed
    config = _config(run)
    assert config["optimizer"] == "adagrad"
    assert config["learning_rate_schedule"] == "constant"
    assert config["tokens_per_batch"] == 4096


def test_the_recipe_chooses_the_epochs(tmp_path, capsys):
    run = tmp_path / "run"
    args = [
        "train", "--train", DATA, "--vocab", VOCAB, "--output", str(run),
        *TINY_TRAIN_FLAGS, "--tokens-per-batch", "64", "--num-sampled", "8",
        "--checkpoint-every", "100",
    ]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "epochs=10" in printed
    # 134 tokens (7 pieces of at most 30) in batches of 64 tokens: 5
    # batches an epoch, 10 epochs.
    assert "5 batches of <= 64 tokens per epoch" in printed
    assert "training steps 1..50 (10.00 epochs)" in printed


def test_help_shows_the_recipe_defaults(capsys):
    assert main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "default: 1024 under 20M training tokens, else 4096" in text
    assert "default: adam under 20M training tokens, else adagrad" in text
    assert "under 20,000,000 training tokens the small-corpus recipe" in text


def _vocabulary_run(output, *extra):
    args = [
        "train", "--train", DATA, "--build-vocab", "--output", str(output),
        *TINY_TRAIN_FLAGS, "--steps", "1", "--num-sampled", "8", *extra,
    ]  # fmt: skip
    return main(args)


def _distinct_words(min_count):
    with open(DATA, encoding="utf-8") as f:
        counts = collections.Counter(f.read().split())
    return sum(1 for n in counts.values() if n >= min_count)


def test_the_small_corpus_vocabulary_leaves_single_words_out(tmp_path, capsys):
    # A word seen once becomes <UNK>, so the biLM learns to predict words
    # it has not seen: held-out text has them (docs/benchmarks.md).
    run = tmp_path / "run"
    assert _vocabulary_run(run) == 0
    printed = capsys.readouterr().out
    assert "recipe: chose min_count=2, optimizer=adam" in printed
    words = _distinct_words(2)
    assert f"built a vocabulary of {words + 3:,} tokens" in printed
    assert len((run / "vocab.txt").read_text().split("\n")) - 1 == words + 3
    assert _distinct_words(1) > words  # the fixture has words seen once
    # A given --min-count wins.
    assert _vocabulary_run(tmp_path / "all", "--min-count", "1") == 0
    printed = capsys.readouterr().out
    assert "recipe: kept your min_count" in printed
    assert f"built a vocabulary of {_distinct_words(1) + 3:,}" in printed


def test_a_given_vocabulary_has_no_minimum_count(tmp_path, capsys):
    assert _train(tmp_path / "run") == 0
    printed = capsys.readouterr().out
    assert "--min-count" not in printed


def _timed(seconds):
    """A `measure` that gives `seconds` a step for each size asked."""
    asked = []

    def measure(name):
        asked.append(name)
        return seconds[name]

    return measure, asked


def test_the_budget_size_follows_the_measured_speed():
    (large, needed), (small, _) = recipe.BUDGET_SIZES
    corpus = (1_000_000, 1024, 10.0)
    # Fast enough for the large size's steps: it trains, nothing else is
    # timed.
    seconds = 600 * recipe.STEP_SHARE / (needed + 10)
    measure, asked = _timed({large: seconds})
    name, reason = recipe.choose_budget_size(measure, 600.0, corpus)
    assert (name, asked) == (large, [large])
    assert f"a step of {large} took {seconds:.2f} s here" in reason
    assert f"buys about {needed + 10:,} steps" in reason
    assert "of the 10 epochs the recipe wants" in reason
    # Slower: the smaller size, and why.
    measure, asked = _timed({large: seconds * 2})
    name, reason = recipe.choose_budget_size(measure, 600.0, corpus)
    assert (name, asked) == (small, [large])
    assert f"under the {needed:,} {large} needs, the smaller {small}" in reason
    # The epochs the budget reaches, at most (tokens a step / corpus).
    steps = recipe.budget_steps(seconds * 2, 600.0)
    assert f"at most {steps * 1024 / 1_000_000:.1f} of the 10" in reason


def _budgeted(output, *extra):
    args = [
        "train", "--train", DATA, "--vocab", VOCAB, "--output", str(output),
        "--tokens-per-batch", "64", "--num-sampled", "8",
        "--max-length", "30", "--checkpoint-every", "10",
        "--time-budget", "3s", *extra,
    ]  # fmt: skip
    return main(args)


def test_a_budgeted_run_is_sized_by_the_speed_measured_here(
    tmp_path, capsys, monkeypatch
):
    import keras_elmo.runs.train as train_module
    from elmo_core.settings import time_budget
    from elmo_core.settings.sizes import SIZES
    from keras_elmo.training import fit_options
    from keras_elmo.training import speed_probe

    # A short budget, two small sizes for the candidates, and a machine
    # too slow for the first (timed for real in the test below).
    for module in (time_budget, train_module, fit_options):
        monkeypatch.setattr(module, "MINIMUM_BUDGET_S", 1.0)
    sizes = (("tiny-lstm", 1000), ("tiny", 0))
    monkeypatch.setattr(recipe, "BUDGET_SIZES", sizes)
    settings = {"tiny": {"learning_rate": 0.02}}
    monkeypatch.setattr(recipe, "BUDGET_SETTINGS", settings)
    timed = []

    def measure(config, vocabulary, tokens, jit_compile):
        timed.append((config.bilm["cell_clip"], tokens.shape))
        return 0.5

    monkeypatch.setattr(speed_probe, "measure_step_seconds", measure)
    run = tmp_path / "run"
    assert _budgeted(run) == 0
    printed = capsys.readouterr().out
    # tiny-lstm (no clip) timed on the text, in a batch of 64 tokens.
    assert timed == [(None, (2, 25))]
    assert "recipe: size tiny: a step of tiny-lstm took 0.50 s here" in printed
    assert "under the 1,000 tiny-lstm needs, the smaller tiny" in printed
    assert "recipe: with tiny, chose learning_rate=0.02\n" in printed
    config = _config(run)
    assert config["learning_rate"] == 0.02
    assert config["size_choice"].startswith("size tiny: a step of tiny-lstm")
    assert config["bilm"]["projection_dim"] == SIZES["tiny"]["projection_dim"]
    assert config["bilm"]["cell_clip"] == SIZES["tiny"]["cell_clip"]
    # Resumed with the same command: its size, not timed again.
    assert _budgeted(run) == 0
    assert "already trained" in capsys.readouterr().out
    # And with the size and rate it chose given: the same run.
    assert _budgeted(run, "--size", "tiny", "--learning-rate", "0.02") == 0
    assert "already trained" in capsys.readouterr().out
    assert len(timed) == 1
    # A size given wins, and nothing is timed.
    other = tmp_path / "given"
    assert _budgeted(other, "--size", "tiny-lstm") == 0
    assert len(timed) == 1
    config = _config(other)
    assert config["size_choice"] is None
    assert config["bilm"]["cell_clip"] is None
    assert config["learning_rate"] == 0.006
    # A rate given wins over the one that goes with the size.
    rate = tmp_path / "rate"
    assert _budgeted(rate, "--learning-rate", "0.001") == 0
    assert "chose learning_rate" not in capsys.readouterr().out
    config = _config(rate)
    assert config["size_choice"].startswith("size tiny")
    assert config["learning_rate"] == 0.001


def test_the_probe_times_training_steps_on_the_corpus(tmp_path):
    from elmo_core.ids.vocabulary import Vocabulary
    from elmo_core.settings.sizes import SIZES
    from keras_elmo.training import speed_probe

    # A text shorter than a batch is repeated to fill it; no text: None.
    tokens = speed_probe.probe_tokens([DATA], 1024)
    assert tokens.shape == (37, speed_probe.PROBE_LENGTH)
    with open(DATA, encoding="utf-8") as f:
        words = f.read().split()
    assert tokens.ravel().tolist()[: len(words) + 3] == words + words[:3]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert speed_probe.probe_tokens([str(empty)], 1024) is None
    config = TrainingConfig(
        train_files=[DATA],
        bilm=dict(SIZES["tiny"]),
        vocabulary_size=32,
        tokens_per_batch=128,
        num_sampled=8,
        max_length=30,
    )
    vocabulary = Vocabulary.from_file(VOCAB)
    tokens = speed_probe.probe_tokens([DATA], 128)
    seconds = speed_probe.measure_step_seconds(config, vocabulary, tokens)
    assert 0 < seconds < 60
