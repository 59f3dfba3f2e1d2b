"""A new run from what a user gives: its vocabulary, size and config.

The rules `keras-elmo train` applies to its flags live here, so the
command line only parses and calls: which vocabulary a run reads
(`run_vocabulary`), which biLM size (`run_size`) and the `TrainingConfig`
of the values given (`run_config`).
"""

import dataclasses
import os

from elmo_core.errors import KerasElmoError
from elmo_core.settings.sizes import SIZE_ARGUMENTS
from elmo_core.settings.sizes import bilm_size


def run_vocabulary(
    output,
    train_files,
    vocab=None,
    build_vocab=False,
    min_count=1,
    max_vocab_size=None,
    on_bad_line="error",
    verbose=1,
):
    """The output vocabulary of a run: the file `vocab`, or with
    `build_vocab` the one the run in `output` built already, else one built
    from `train_files` (tokens seen `min_count` times, at most
    `max_vocab_size`)."""
    from elmo_core.formats.run_layout import VOCAB_FILE
    from elmo_core.ids.vocabulary import Vocabulary

    existing = os.path.join(output, VOCAB_FILE)
    if vocab and build_vocab:
        raise KerasElmoError(
            "Give either `vocab` or `build_vocab`, not both.",
            "vocab",
            received=vocab,
        )
    if vocab:
        return Vocabulary.from_file(vocab)
    if build_vocab and os.path.isfile(existing):
        return Vocabulary.from_file(existing)
    if build_vocab:
        vocabulary = Vocabulary.from_corpus(
            train_files,
            min_count=min_count,
            max_size=max_vocab_size,
            on_bad_line=on_bad_line,
        )
        if verbose:
            print(f"built a vocabulary of {len(vocabulary):,} tokens")
        return vocabulary
    raise KerasElmoError(
        "Give the output vocabulary as `vocab` (a file of one token a line, "
        "<S> </S> <UNK> first), or set `build_vocab` to build it from the "
        "training files.",
        "vocab",
    )


def size_flags(values):
    """The single size values given (`units`, ..., `filters`,
    `use_skip_connections`) of a dict of settings (None: not given)."""
    flags = {
        name: values[name]
        for name in [*SIZE_ARGUMENTS, "filters"]
        if values.get(name) is not None
    }
    if values.get("use_skip_connections") is not None:
        flags["use_skip_connections"] = values["use_skip_connections"]
    return flags


def run_size(values, source_size=None, vocabulary_size=None):
    """The `BiLM` arguments of a new run, from the flag values `values` (a
    dict, e.g. `vars(args)`; None: not given): a training size name
    (`size`, one of `elmo_core.settings.sizes.SIZES`), an official options
    file (`options`, its path), single values (`size_flags`) and the
    `token_encoder`; with none of them, `source_size()`, the size of the
    weights the run starts from. See `elmo_core.settings.sizes.bilm_size`.
    """
    from elmo_core.formats.bilm_tf_options import options_file_config

    options = values.get("options")
    return bilm_size(
        values.get("size"),
        options_file_config(options) if options else None,
        size_flags(values),
        source_size,
        token_encoder=values.get("token_encoder"),
        vocabulary_size=vocabulary_size,
    )


def run_config(values, **fields):
    """The `TrainingConfig` of `fields` and of the `values` (a dict of flag
    values, e.g. `vars(args)`) named as its fields; others are ignored."""
    from elmo_core.settings.training_config import TrainingConfig

    names = {field.name for field in dataclasses.fields(TrainingConfig)}
    given = {name: values[name] for name in names if name in values}
    return TrainingConfig(**{**given, **fields})
