"""The seconds one training step of a size takes on this machine,
measured before a run starts, and the size of a run chosen by them
(`run_size_choice`).

A time-budgeted run with no size given is sized by the compute the
machine has (`elmo_core.settings.recipe.choose_budget_size`): before the
run's model is built, `measure_step_seconds` builds the candidate,
trains it on a few batches of the run's own text and times the steps
after the first (which trace the step). The candidate is then dropped;
the run starts from fresh weights whichever size is chosen.
"""

import itertools
import time

import keras
import numpy as np

from elmo_core.settings.recipe import BUDGET_SETTINGS
from elmo_core.settings.recipe import BUDGET_SIZES
from elmo_core.settings.recipe import budget_settings
from elmo_core.settings.recipe import choose_budget_size
from elmo_core.settings.sizes import bilm_size
from elmo_core.settings.training_config import JIT_COMPILE
from elmo_core.text.lines import read_lines
from keras_elmo.training.run_setup import run_config
from keras_elmo.training.run_setup import run_size
from keras_elmo.training.run_setup import size_flags
from keras_elmo.training.threads import use_training_threads

# Tokens a row of the probe's batches holds: a sentence of the middle
# length bucket of the bundled books (`bucket_plan`'s boundaries).
PROBE_LENGTH = 25
# Steps that trace and warm up (not timed), then steps timed: at least
# `PROBE_STEPS` and `PROBE_SECONDS` seconds, at most `MAX_PROBE_STEPS`.
UNTIMED_STEPS = 2
PROBE_STEPS = 5
PROBE_SECONDS = 3.0
MAX_PROBE_STEPS = 40


def probe_tokens(files, tokens_per_batch, on_bad_line="error"):
    """A `(rows, PROBE_LENGTH)` array of the first tokens of `files`, as
    many rows as a batch of `tokens_per_batch` holds (`<S>` and `</S>`
    included), the text repeated where it is shorter; None for no text."""
    rows = max(1, tokens_per_batch // (PROBE_LENGTH + 2))
    wanted = rows * PROBE_LENGTH
    tokens = []
    for path in files:
        for _, line in read_lines(path, on_bad_line):
            tokens.extend(line)
            if len(tokens) >= wanted:
                break
    if not tokens:
        return None
    tokens = np.resize(np.array(tokens, dtype=object), wanted)
    return tokens.astype(str).reshape(rows, PROBE_LENGTH)


def measure_step_seconds(config, vocabulary, tokens, jit_compile="auto"):
    """The median seconds of a training step of `config` (a
    `TrainingConfig`) on the batch of `tokens` (`probe_tokens`), run by
    `fit` as a run's steps are: from a dataset whose batches have no fixed
    shape (a compiled step's loop takes its shapes from the batch)."""
    import tensorflow as tf

    from keras_elmo.data.datasets import make_lm_batch
    from keras_elmo.data.word_ids import lookup_table
    from keras_elmo.training.compiled_model import build_model

    model = build_model(config, total_steps=1000, jit_compile=jit_compile)
    table = lookup_table(vocabulary)
    batches = tf.data.Dataset.from_generator(
        lambda: itertools.repeat(tokens),
        output_signature=tf.TensorSpec((None, None), tf.string),
    ).map(
        lambda batch: make_lm_batch(
            batch,
            table,
            vocabulary.bos_id,
            vocabulary.eos_id,
            config.bilm.get("token_encoder", "characters"),
        )
    )
    timer = StepTimer()
    model.fit(
        batches,
        steps_per_epoch=UNTIMED_STEPS + MAX_PROBE_STEPS,
        callbacks=[timer],
        shuffle=False,
        verbose=0,
    )
    return float(np.median(timer.times))


class StepTimer(keras.callbacks.Callback):
    """The seconds of each step after the untimed ones; stops the probe
    once it holds `PROBE_STEPS` steps and `PROBE_SECONDS` seconds."""

    def __init__(self):
        super().__init__()
        self.times, self.started, self.last = [], None, None

    def on_train_batch_end(self, batch, logs=None):
        now = time.monotonic()
        if batch >= UNTIMED_STEPS:
            self.times.append(now - self.last)
        elif batch == UNTIMED_STEPS - 1:
            self.started = now
        self.last = now
        if len(self.times) >= PROBE_STEPS and (
            now - self.started >= PROBE_SECONDS
        ):
            self.model.stop_training = True


def budget_size(values, vocabulary, train_files, budget_seconds, corpus):
    """`(name, size, reason)` of a new time-budgeted run with no size
    given: the name and `BiLM` arguments of the size `choose_budget_size`
    picks by timing the
    candidates on this machine, with the run's settings (`values`, a dict
    of `train`'s arguments after the recipe) and text. `corpus`: as for
    `choose_budget_size`. Sets the training threads first (see
    `keras_elmo.training.threads`)."""
    # Before TensorFlow's runtime starts; `fit_run` says what it set.
    use_training_threads()

    def size_of(name):
        return bilm_size(
            name,
            token_encoder=values["token_encoder"],
            vocabulary_size=len(vocabulary),
        )

    tokens = probe_tokens(
        train_files, values["tokens_per_batch"], values["on_bad_line"]
    )
    if tokens is None:  # No text: the run refuses it when it reads it.
        return BUDGET_SIZES[0][0], size_of(BUDGET_SIZES[0][0]), None

    def measure(name):
        config = run_config(
            values,
            train_files=train_files,
            bilm=size_of(name),
            vocabulary_size=len(vocabulary),
        )
        jit_compile = JIT_COMPILE.get(values["jit_compile"], "auto")
        return measure_step_seconds(config, vocabulary, tokens, jit_compile)

    name, reason = choose_budget_size(measure, budget_seconds, corpus)
    return name, size_of(name), f"size {name}: {reason}"


def run_size_choice(values, init_from, vocabulary, saved, budgeted, given):
    """`(size, reason, settings)` of a run of `train`: its `BiLM`
    arguments, why where the recipe chose them by the machine's speed,
    and the settings that go with that choice. A new time-budgeted
    small-corpus run with no size given times the candidates
    (`budget_size`); a run resumed without a size keeps the size and
    settings it chose.

    `values`: `train`'s arguments after the recipe; `init_from`: the
    source it starts from, or None; `saved`: the resumed run's config
    values, or None; `budgeted`: `(corpus, budget)`, the corpus's files,
    tokens and the recipe's epochs (None for a run the budget does not
    size) and the seconds left of the budget (None: no budget);
    `given`: the recipe's setting names the user gave."""
    corpus, budget = budgeted
    size_given = values["size"] or values["options"] or size_flags(values)
    source_size = init_from and init_from.bilm_size
    if saved is not None and saved.get("size_choice"):
        # Resumed: what it chose, unless given again (the resume compares).
        kept = {
            name: saved[name]
            for settings in BUDGET_SETTINGS.values()
            for name in settings
            if name not in given
        }
        size = saved["bilm"]
        if size_given or init_from:
            size = run_size(values, source_size, len(vocabulary))
        return size, saved["size_choice"], kept
    if size_given or init_from or None in (corpus, budget) or saved:
        return run_size(values, source_size, len(vocabulary)), None, {}
    files, num_tokens, epochs = corpus
    name, size, reason = budget_size(
        values,
        vocabulary,
        files,
        budget,
        (num_tokens, values["tokens_per_batch"], epochs),
    )
    settings = budget_settings(name, given) if reason else {}
    if reason and values["verbose"]:
        print(f"recipe: {reason}", flush=True)
        if settings:
            chosen = ", ".join(f"{k}={v:g}" for k, v in settings.items())
            print(f"recipe: with {name}, chose {chosen}", flush=True)
    return size, reason, settings
