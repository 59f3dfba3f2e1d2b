"""The files of a training run folder and of an export folder.

A run folder (`keras_elmo.training.RunDirectory` writes it):

    config.json     what defines the run (`TrainingConfig`)
    vocab.txt       the output vocabulary
    checkpoint/     the latest training state: every model and optimizer
                    variable (dropout and sampler seeds included), by
                    variable path, and the global step
    history.json    held-out perplexity at each validation
    time_budget.json  a run with a time budget: the planned last step, the
                    budget's seconds spent, the learning-rate decay's state
    logs/           TensorBoard

An export folder (`keras-elmo export-weights`) holds the official
`options.json` + `weights.hdf5`, the vocabulary and `softmax.hdf5`. Every
file is written atomically. The names are facts of the layout, read by
the trainer that writes the folders and by the sources that load them.
"""

import json
import os

import h5py
import numpy as np

from elmo_core.errors import InputPathError
from elmo_core.errors import RunDirectoryError
from elmo_core.errors import WeightFileError
from elmo_core.files import atomic_output
from elmo_core.files import hdf5_output
from elmo_core.files.paths import check_input_file
from elmo_core.formats.hdf5_datasets import checked_dataset
from elmo_core.formats.hdf5_datasets import read_weights

CONFIG_FILE = "config.json"
VOCAB_FILE = "vocab.txt"
HISTORY_FILE = "history.json"
PLAN_FILE = "time_budget.json"
CHECKPOINT_DIR = "checkpoint"
# 2: variables keyed by stable path (1: by position).
CHECKPOINT_FORMAT = 2
LOGS_DIR = "logs"
# The export layout (also what `--init-from DIR` and `--model DIR` read).
EXPORT_OPTIONS = "options.json"
EXPORT_WEIGHTS = "weights.hdf5"
EXPORT_SOFTMAX = "softmax.hdf5"


def read_json(path, default=None):
    """The JSON value in `path` (`default` if it does not exist); a file
    that is not JSON is an error naming it."""
    if not os.path.lexists(path):
        return default
    try:
        check_input_file(path, "Run file", "a JSON file")
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except InputPathError as error:
        raise error.within(kind=RunDirectoryError) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RunDirectoryError(
            f"{path} is not valid JSON ({error}); the file is damaged. "
            "Restore it, or start the run in a new directory."
        ) from None


def write_json(path, value):
    with atomic_output(path) as temporary:
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=2)


def write_softmax(path, kernel, bias):
    with hdf5_output(path) as f:
        f.create_dataset("softmax/W", data=np.asarray(kernel))
        f.create_dataset("softmax/b", data=np.asarray(bias))


def read_softmax(path):
    """`(kernel, bias)` of a `softmax.hdf5` file."""
    try:
        check_input_file(path, "Softmax file", "an hdf5 file")
        with h5py.File(path, "r") as f:
            return tuple(
                _softmax_values(f, name, path)
                for name in ("softmax/W", "softmax/b")
            )
    except InputPathError as error:
        raise error.within(kind=WeightFileError) from None
    except (OSError, KeyError) as error:
        raise WeightFileError(
            f"{path} is not a softmax file of an export (datasets softmax/W "
            f"and softmax/b): {error}"
        ) from None


def _softmax_values(f, name, path):
    item = checked_dataset(f, name, path)
    if item is None:
        raise KeyError(f"no dataset {name!r}")
    return read_weights(item, name, path)
