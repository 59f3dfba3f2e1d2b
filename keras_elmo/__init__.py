"""keras_elmo: ELMo biLMs as native Keras 3 layers (TensorFlow, JAX and
PyTorch backends; training and exports on TensorFlow).

`import keras_elmo` imports Keras, on the backend Keras itself is set to
(`KERAS_BACKEND`, or `~/.keras/keras.json`; this package never chooses
one), and every Keras class of the package: `keras.saving.load_model`
finds each layer, model, optimizer and schedule of a `.keras` file
because its module was imported here. TensorFlow is imported by the
features built on it when they are used (training, the exports, string
tokens in a graph, `keras_elmo.data`); on JAX and PyTorch, nothing below
imports it before.

What needs neither Keras nor TensorFlow (the runtime of exported files,
character ids, text and FASTA reading, the errors, the pretrained-model
table and cache) is the package `elmo_core`; the `keras-elmo` command is
`keras_elmo_cli`. The names of `elmo_core` that Keras code uses most are
named here too.
"""

from elmo_core.characters import batch_to_ids
from elmo_core.errors import DownloadError
from elmo_core.errors import KerasElmoError
from elmo_core.errors import WeightFileError
from elmo_core.preparation import prepare
from elmo_core.version import __version__
from keras_elmo import corpus
from keras_elmo import errors
from keras_elmo import layers
from keras_elmo import models
from keras_elmo import optimizers
from keras_elmo import pretrained
from keras_elmo.corpus.embedding import dump_token_embeddings
from keras_elmo.corpus.embedding import embed
from keras_elmo.formats.bilm_tf import save_bilm
from keras_elmo.layers import BiLM
from keras_elmo.layers import CharCNN
from keras_elmo.layers import ELMoEmbedding
from keras_elmo.layers import Highway
from keras_elmo.layers import ProjectedLSTM
from keras_elmo.layers import ScalarMix
from keras_elmo.loading import load_bilm
from keras_elmo.runs.distill import distill
from keras_elmo.runs.train import train
from keras_elmo.training.evaluate import evaluate

__all__ = [
    "BiLM",
    "CharCNN",
    "DownloadError",
    "ELMoEmbedding",
    "Highway",
    "KerasElmoError",
    "ProjectedLSTM",
    "ScalarMix",
    "WeightFileError",
    "__version__",
    "batch_to_ids",
    "corpus",
    "distill",
    "dump_token_embeddings",
    "embed",
    "errors",
    "evaluate",
    "layers",
    "load_bilm",
    "models",
    "optimizers",
    "prepare",
    "pretrained",
    "save_bilm",
    "train",
]


def tokens_to_char_ids(tokens, sequence_length=None):
    """Deprecated: `keras_elmo.data.tokens_to_char_ids` (TensorFlow's
    string ops, imported there). This name will be removed."""
    import warnings

    from keras_elmo.data.character_ids import tokens_to_char_ids as ids

    warnings.warn(
        "keras_elmo.tokens_to_char_ids moved to "
        "keras_elmo.data.tokens_to_char_ids; the old name will be removed.",
        DeprecationWarning,
        stacklevel=2,
    )
    return ids(tokens, sequence_length)
