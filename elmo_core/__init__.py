"""elmo_core: ELMo without Keras or TensorFlow.

The part of keras-elmo that runs with NumPy alone (and, where a feature
needs one, its own extra: ONNX Runtime, LiteRT, spaCy, Biopython): the
runtime of exported biLMs, the character ids, text and FASTA in, the
error family, file checks, the pretrained-model table and cache, the
settings of a training run and the files that embedding writes. Nothing
here imports Keras or TensorFlow, so that a device runs an exported biLM
with this package alone and the `keras-elmo` command (`keras_elmo_cli`)
answers `--help` at once. The Keras layers, training and the exports are
the package `keras_elmo`, which builds on this one.

The folders, lowest first (a module imports its own folder or lower
ones; docs/architecture.md):

- `errors/`, `characters/`, `files/`, `version.py`, `progress.py`: the
  error family and the checks of user values, the character-id rules,
  what lies at a user's path and atomic writes, the version, progress
  lines;
- `text/`, `formats/`, `settings/`, `pretrained/`: text files read and
  split into tokens (one path for every command), files of other
  programs read within bounds, what defines a training run, presets and
  downloads;
- `proteins/`, `ids/`, `preparation/`: FASTA records, tokens to the
  biLM's ids on the host, raw text prepared as a corpus;
- `runtime/`: exported biLMs and models run by ONNX Runtime and LiteRT;
- `embedding_files/`: the files embedding writes and reads.
"""

from elmo_core import characters
from elmo_core import embedding_files
from elmo_core import errors
from elmo_core import ids
from elmo_core import preparation
from elmo_core import pretrained
from elmo_core import proteins
from elmo_core import runtime
from elmo_core import text
from elmo_core.characters import batch_to_ids
from elmo_core.errors import KerasElmoError
from elmo_core.preparation import prepare
from elmo_core.version import __version__

__all__ = [
    "KerasElmoError",
    "__version__",
    "batch_to_ids",
    "characters",
    "embedding_files",
    "errors",
    "ids",
    "prepare",
    "preparation",
    "pretrained",
    "proteins",
    "runtime",
    "text",
]
