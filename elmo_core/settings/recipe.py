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
TensorFlow-free: `--help` reads it.
"""

import dataclasses

from elmo_core.text.lines import read_lines

# Below this many training tokens, the small-corpus recipe.
SMALL_CORPUS_TOKENS = 20_000_000
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
            "small corpus",
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
