"""The corpus scans of a run, and the batches read from them.

Every input file is scanned before anything is written, so that a bad
one fails the run at once; the scan's batches are global batches of
`replicas` x the config's token budget, cut per replica under a strategy
(`keras_elmo.training.distribute`).
"""

from keras_elmo.data.datasets import lm_dataset
from keras_elmo.data.datasets import scan_corpus
from keras_elmo.training.distribute import distribute_lm_dataset
from keras_elmo.utils.progress import say


def scan_files(config, files, replicas, what, verbose):
    """Scans `files` for global batches of `replicas` x the config's token
    budget, and reports what it found (`what`: "training" data, ...)."""
    scan = scan_corpus(
        files,
        max_length=config.max_length,
        tokens_per_batch=config.tokens_per_batch * replicas,
        on_bad_line=config.on_bad_line,
    )
    for line in scan.summary():
        say(verbose, f"{what} data: {line}")
    return scan


def scan_data(config, replicas, verbose):
    """`(training scan, validation scan or None)` of a config's files."""
    scan = scan_files(config, config.train_files, replicas, "training", verbose)
    if not config.validation_files:
        return scan, None
    files = config.validation_files
    return scan, scan_files(config, files, replicas, "validation", verbose)


def scan_dataset(strategy, scan, vocabulary, model, **kwargs):
    """The batches of `scan` for `model` (padded to their length bucket
    under XLA), cut per replica under a `strategy` (None: one device).
    `kwargs` go to `lm_dataset`."""
    kwargs.update(
        pad_to_bucket=bool(model.jit_compile),
        token_encoder=model.bilm.token_encoder,
    )
    if strategy is None:
        return lm_dataset(scan, vocabulary, **kwargs)
    return distribute_lm_dataset(strategy, scan, vocabulary, **kwargs)
