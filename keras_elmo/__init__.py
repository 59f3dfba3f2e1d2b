"""keras_elmo: ELMo biLMs as native Keras 3 layers (TensorFlow, JAX and
PyTorch backends; training and exports on TensorFlow only).

The public names are imported on first use, so that `import keras_elmo`
(and the NumPy-only `keras_elmo.characters`, the runtime of exported
files, the command line's `--help`) does not load TensorFlow, and the
`keras-elmo` command can quiet TensorFlow's start-up logs before it is
imported.

The package's Keras classes are registered with Keras all the same: at
once when Keras is already imported, else as soon as it is (in either
order, on every backend), so that `keras.saving.load_model` finds every
layer, model and optimizer of a `.keras` file after `import keras_elmo`.
"""

import importlib
import os

# TensorFlow unless the user chose a backend (KERAS_BACKEND=jax or torch,
# set before keras is imported); see keras_elmo/utils/backend.py.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from keras_elmo.utils.after_import import when_imported  # noqa: E402
from keras_elmo.utils.lazy import lazy_exports  # noqa: E402
from keras_elmo.utils.version import __version__  # noqa: E402

# Public name -> the module that defines it.
_EXPORTS = {
    "BiLM": "keras_elmo.layers",
    "CharCNN": "keras_elmo.layers",
    "ELMoEmbedding": "keras_elmo.layers",
    "Highway": "keras_elmo.layers",
    "ProjectedLSTM": "keras_elmo.layers",
    "ScalarMix": "keras_elmo.layers",
    "DownloadError": "keras_elmo.errors",
    "KerasElmoError": "keras_elmo.errors",
    "WeightFileError": "keras_elmo.errors",
    "batch_to_ids": "keras_elmo.characters",
    "distill": "keras_elmo.cli.distill",
    "tokens_to_char_ids": "keras_elmo.data.character_ids",
    "load_bilm": "keras_elmo.loading",
    "prepare": "keras_elmo.preparation.prepare_text",
    "save_bilm": "keras_elmo.formats.bilm_tf",
}
_SUBMODULES = (
    "corpus",
    "data",
    "export",
    "layers",
    "models",
    "optimizers",
    "pretrained",
    "runtime",
)

# Every module that registers a class or function with Keras
# (`@keras.saving.register_keras_serializable(package="keras_elmo")`).
SERIALIZABLE_MODULES = (
    "keras_elmo.layers.bilm",
    "keras_elmo.layers.char_cnn",
    "keras_elmo.layers.elmo_embedding",
    "keras_elmo.layers.highway",
    "keras_elmo.layers.projected_lstm",
    "keras_elmo.layers.scalar_mix",
    "keras_elmo.models.elmo_language_model",
    "keras_elmo.models.distilled_language_model",
    "keras_elmo.optimizers.loss_scale_optimizer",
    "keras_elmo.optimizers.sparse_adagrad",
    "keras_elmo.optimizers.sparse_adam",
    "keras_elmo.training.learning_rate",
    "keras_elmo.export.saved_model_layer",
)


def _register_serializables():
    for module in SERIALIZABLE_MODULES:
        importlib.import_module(module)


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, _SUBMODULES)
when_imported("keras", "keras_elmo", _register_serializables)

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
    "data",
    "distill",
    "export",
    "layers",
    "load_bilm",
    "models",
    "optimizers",
    "prepare",
    "pretrained",
    "runtime",
    "save_bilm",
    "tokens_to_char_ids",
]
