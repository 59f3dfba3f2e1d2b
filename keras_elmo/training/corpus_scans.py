"""The corpus scans of a run, and the batches read from them.

Every input file is scanned before anything is written, so that a bad
one fails the run at once; the scan's batches are global batches of
`replicas` x the config's token budget, cut per replica under a strategy
(`keras_elmo.training.distribute`).
"""

import dataclasses
import functools

from elmo_core.progress import say
from elmo_core.settings.training_config import window_rows
from keras_elmo.data.datasets import lm_dataset
from keras_elmo.data.datasets import scan_corpus
from keras_elmo.data.windows import windows_dataset
from keras_elmo.data.windows import windows_per_epoch
from keras_elmo.training.distribute import distribute_lm_dataset


def scan_files(config, files, replicas, what, verbose, windows=False):
    """Scans `files` for global batches of `replicas` x the config's token
    budget, and reports what it found (`what`: "training" data, ...);
    `windows`: the batches are windows, which split no sentence."""
    scan = scan_corpus(
        files,
        max_length=config.max_length,
        tokens_per_batch=config.tokens_per_batch * replicas,
        on_bad_line=config.on_bad_line,
    )
    for line in scan.summary():
        if not (windows and "split into pieces" in line):
            say(verbose, f"{what} data: {line}")
    return scan


def scan_data(config, replicas, verbose):
    """`(training scan, validation scan or None)` of a config's files; on
    windows, the training scan counts batches of windows."""
    windows = bool(config.window_length)
    scan = scan_files(
        config, config.train_files, replicas, "training", verbose, windows
    )
    if windows:
        scan = _in_windows(scan, config, replicas, verbose)
    if not config.validation_files:
        return scan, None
    files = config.validation_files
    return scan, scan_files(config, files, replicas, "validation", verbose)


def _in_windows(scan, config, replicas, verbose):
    """`scan` with its epoch counted in batches of windows."""
    length = config.window_length
    rows = window_rows(config, replicas)
    steps = windows_per_epoch(scan.num_tokens, scan.num_sentences, rows, length)
    say(
        verbose,
        f"training data: windows of {length} tokens of continuous text, "
        f"{rows:,} rows a step (the LSTM state carried from step to step): "
        f"{steps:,} batches per epoch",
    )
    return dataclasses.replace(scan, steps_per_epoch=steps)


def scan_dataset(
    strategy, scan, vocabulary, model, window_length=0, teacher_cache=None,
    **kwargs,
):  # fmt: skip
    """The batches of `scan` for `model` (padded to their length bucket
    under XLA), cut per replica under a `strategy` (None: one device):
    sentences (`lm_dataset`, which `kwargs` go to, with the inputs of a
    distilled model's teacher when it reads its own, or with its outputs
    from a `teacher_cache`, a `CachedTeacher`), or with `window_length`
    windows of continuous text (`windows_dataset`)."""
    kwargs["token_encoder"] = model.bilm.token_encoder
    if window_length:
        make = functools.partial(
            windows_dataset,
            scan.files,
            vocabulary,
            model.window_rows,
            window_length,
            seed=kwargs.get("seed", 0),
            start_step=kwargs.get("start_step", 0),
            token_encoder=kwargs["token_encoder"],
            on_bad_line="skip" if scan.skipped_lines else "error",
        )
    else:
        kwargs["pad_to_bucket"] = bool(model.jit_compile)
        kwargs["extra_inputs"] = getattr(model, "teacher_token_inputs", None)
        make = functools.partial(lm_dataset, scan, vocabulary, **kwargs)
    if teacher_cache is not None:
        make = _through(teacher_cache, scan, vocabulary, kwargs)
    if strategy is None:
        return make()
    return distribute_lm_dataset(strategy, make)


def _through(teacher_cache, scan, vocabulary, kwargs):
    """The `lm_dataset` maker of `kwargs` whose batches carry the teacher's
    outputs from `teacher_cache`."""
    kwargs["extra_inputs"] = teacher_cache.extra_inputs(kwargs["extra_inputs"])
    return lambda: teacher_cache.dataset(lm_dataset(scan, vocabulary, **kwargs))
