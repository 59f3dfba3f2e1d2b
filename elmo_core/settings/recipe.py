"""The training recipe: settings chosen by the size of the corpus.

`keras-elmo train` takes the settings a user leaves unset from the recipe
for the corpus it trains on, and prints what it chose and why; a flag the
user gives always wins. Two recipes:

- a corpus under `SMALL_CORPUS_TOKENS` tokens (a language or domain with a
  few million tokens, trained on a CPU) gets `SMALL_CORPUS`: Adam with a
  short warm-up and a linear decay to zero, weight decay, small batches
  and fewer sampled negatives (more updates per pass over little data),
  and enough epochs to see about `SMALL_CORPUS_TRAINING_TOKENS` tokens;
- a larger corpus gets bilm-tf's recipe for 1B Word (the defaults of
  `TrainingConfig`: Adagrad 0.2, constant, dropout 0.1, batches of 4,096
  tokens, 8,192 negatives) and one epoch.

The small-corpus values are those that measurably paid on the bundled
1M-token corpus (docs/benchmarks.md, "Training recipe").

A time-budgeted small-corpus run with no size given is also sized by the
compute the machine has (`choose_budget_size`): the step of each
candidate of `BUDGET_SIZES` is timed on this machine before the run
starts, and the first that fits the steps it needs in the budget trains
(docs/benchmarks.md, "Size by budget").
TensorFlow-free: `--help` reads it.
"""

import dataclasses

from elmo_core.text.lines import read_lines

# Below this many training tokens, the small-corpus recipe.
SMALL_CORPUS_TOKENS = 20_000_000
SMALL_CORPUS_RECIPE = "small corpus"
# Epochs of a small corpus: about this many tokens seen, within the bounds.
SMALL_CORPUS_TRAINING_TOKENS = 10_000_000
SMALL_CORPUS_EPOCHS = (1, 10)
SMALL_CORPUS = dict(
    min_count=2,
    optimizer="adam",
    learning_rate=0.006,
    learning_rate_schedule="linear",
    warmup_steps=100,
    dropout=0.05,
    weight_decay=0.1,
    tokens_per_batch=1024,
    num_sampled=2048,
)
# The sizes a time-budgeted small-corpus run chooses from when none is
# given, largest first, each with the steps it needs in the budget to
# beat the next one on held-out perplexity (measured on the bundled
# corpus, docs/benchmarks.md "Size by budget"); the last one needs none.
BUDGET_SIZES = (("cpu", 3200), ("mini", 0))
# The settings that go with a size the budget chose, where they differ
# from the small-corpus recipe's (a given flag still wins): a short run
# learns more at a higher rate.
BUDGET_SETTINGS = {"mini": dict(learning_rate=0.01)}
# The share of a budget its training steps get (the rest: the model's
# build, checkpoints, the held-out evaluation at the end).
STEP_SHARE = 0.9
# The settings a recipe chooses: `TrainingConfig` fields, and how
# `--build-vocab` builds the vocabulary (`VOCABULARY_SETTINGS`).
RECIPE_SETTINGS = tuple(SMALL_CORPUS)
# The large corpus keeps every word seen: a corpus of 20M tokens and more
# sees most words it keeps more than once.
VOCABULARY_SETTINGS = dict(min_count=1)


def large_corpus_setting(name):
    """The large-corpus recipe's value of the setting `name`."""
    from elmo_core.settings.training_config import TrainingConfig

    if name in VOCABULARY_SETTINGS:
        return VOCABULARY_SETTINGS[name]
    return TrainingConfig.__dataclass_fields__[name].default


@dataclasses.dataclass
class Recipe:
    """The settings chosen for a corpus, and why.

    `settings` holds `TrainingConfig` fields; `epochs` is None when a time
    budget or the user sets the length of the run.
    """

    name: str
    reason: str
    settings: dict
    epochs: float = None

    def describe(self, given=(), flags=None):
        """Lines saying what the recipe chose (and which settings the user
        gave instead), as `name=value`, or as the command line's `flags`
        (`{setting: flag}`, "epochs" included) when given."""
        values = dict(self.settings)
        if self.epochs is not None:
            values["epochs"] = self.epochs
        chosen = [
            f"{flags[name]} {_show(value)}"
            if flags
            else f"{name}={_show(value)}"
            for name, value in values.items()
            if name not in given
        ]
        lines = [f"recipe: {self.name} ({self.reason})"]
        if chosen:
            lines.append(
                f"recipe: chose {(' ' if flags else ', ').join(chosen)}"
            )
        kept = [
            flags[name] if flags else name
            for name in given
            if name in RECIPE_SETTINGS
        ]
        if kept:
            lines.append(f"recipe: kept your {', '.join(kept)}")
        return lines


def _show(value):
    return f"{value:g}" if isinstance(value, float) else str(value)


def count_tokens(files, limit=SMALL_CORPUS_TOKENS, on_bad_line="error"):
    """The tokens of `files`, counted up to `limit` (reading stops there:
    a larger corpus is simply "at least `limit`")."""
    count = 0
    for path in files:
        for _, tokens in read_lines(path, on_bad_line):
            count += len(tokens)
            if count >= limit:
                return count
    return count


def small_corpus_epochs(num_tokens):
    """Epochs that see about `SMALL_CORPUS_TRAINING_TOKENS` tokens."""
    low, high = SMALL_CORPUS_EPOCHS
    epochs = round(SMALL_CORPUS_TRAINING_TOKENS / max(num_tokens, 1))
    return float(min(high, max(low, epochs)))


def choose_recipe(num_tokens, length_given=False):
    """The recipe for a corpus of `num_tokens` training tokens.

    Args:
        num_tokens: int. Training tokens (`count_tokens`).
        length_given: bool. The user sets the run's length (`--epochs`,
            `--steps` or `--time-budget`): the recipe chooses no epochs.
    """
    if num_tokens < SMALL_CORPUS_TOKENS:
        epochs = None if length_given else small_corpus_epochs(num_tokens)
        return Recipe(
            SMALL_CORPUS_RECIPE,
            f"{num_tokens:,} training tokens, under "
            f"{SMALL_CORPUS_TOKENS:,}: frequent updates, a decaying rate, "
            "several epochs",
            dict(SMALL_CORPUS),
            epochs,
        )
    return Recipe(
        "large corpus",
        f"at least {SMALL_CORPUS_TOKENS:,} training tokens: bilm-tf's "
        "recipe for 1B Word",
        {name: large_corpus_setting(name) for name in RECIPE_SETTINGS},
        None if length_given else 1.0,
    )


def budget_steps(step_seconds, budget_seconds):
    """The training steps of `step_seconds` each that a budget of
    `budget_seconds` gets (`STEP_SHARE` of it)."""
    return int(budget_seconds * STEP_SHARE / step_seconds)


def choose_budget_size(measure, budget_seconds, corpus):
    """The size of a time-budgeted run with none given, and why.

    Args:
        measure: a function: a size name -> the seconds one training step
            of that size takes on this machine.
        budget_seconds: float. What is left of the time budget.
        corpus: `(num_tokens, tokens_per_batch, recipe_epochs)`: the
            training tokens, the tokens of a step, and the epochs the
            recipe wants (`small_corpus_epochs`), for the epochs the
            budget reaches.

    Returns:
        `(name, reason)`: a name of `BUDGET_SIZES`, and a line saying the
        measured speed, the steps and epochs the budget buys, and why
        (its `BUDGET_SETTINGS` go with it).
    """
    num_tokens, tokens_per_batch, recipe_epochs = corpus
    for name, needed in BUDGET_SIZES[:-1]:
        seconds = measure(name)
        steps = budget_steps(seconds, budget_seconds)
        # At most: a step's tokens also hold <S>, </S> and padding.
        epochs = steps * tokens_per_batch / max(num_tokens, 1)
        bought = (
            f"a step of {name} took {seconds:.2f} s here, so the "
            f"{budget_seconds / 60:.1f}-minute budget buys about "
            f"{steps:,} steps, at most {epochs:.1f} of the "
            f"{recipe_epochs:g} epochs the recipe wants"
        )
        if steps >= needed:
            return name, f"{bought}; {name} needs {needed:,}"
    smallest = BUDGET_SIZES[-1][0]
    return smallest, (
        f"{bought}; under the {needed:,} {name} needs, the smaller "
        f"{smallest} learns more in that compute"
    )


def budget_settings(name, given):
    """The `BUDGET_SETTINGS` of the size `name` that the user did not give
    (`given`: the recipe's setting names given); a given optimizer keeps
    its own rate."""
    skipped = set(given)
    if "optimizer" in given:
        skipped.add("learning_rate")
    settings = BUDGET_SETTINGS.get(name, {})
    return {k: v for k, v in settings.items() if k not in skipped}
