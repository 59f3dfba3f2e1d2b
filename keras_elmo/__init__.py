"""keras_elmo: ELMo biLMs as native Keras 3 layers (TensorFlow backend)."""

import os
import sys

# The package is written for the TensorFlow backend of Keras 3.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
if os.path.basename(sys.argv[0]) == "keras-elmo":
    # The command line should print its own progress, not TensorFlow's
    # start-up logs; this must be set before TensorFlow is imported.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras_elmo import data  # noqa: E402
from keras_elmo import layers  # noqa: E402
from keras_elmo import models  # noqa: E402
from keras_elmo import optimizers  # noqa: E402
from keras_elmo.checkpoints import WeightFileError  # noqa: E402
from keras_elmo.checkpoints import load_bilm  # noqa: E402
from keras_elmo.checkpoints import save_bilm  # noqa: E402
from keras_elmo.data.character_ids import batch_to_ids  # noqa: E402
from keras_elmo.data.character_ids import tokens_to_char_ids  # noqa: E402
from keras_elmo.layers import BiLM  # noqa: E402
from keras_elmo.layers import CharCNN  # noqa: E402
from keras_elmo.layers import ELMoEmbedding  # noqa: E402
from keras_elmo.layers import Highway  # noqa: E402
from keras_elmo.layers import ProjectedLSTM  # noqa: E402
from keras_elmo.layers import ScalarMix  # noqa: E402
from keras_elmo.version import __version__  # noqa: E402

__all__ = [
    "BiLM",
    "CharCNN",
    "ELMoEmbedding",
    "Highway",
    "ProjectedLSTM",
    "ScalarMix",
    "WeightFileError",
    "__version__",
    "batch_to_ids",
    "data",
    "layers",
    "models",
    "optimizers",
    "load_bilm",
    "save_bilm",
    "tokens_to_char_ids",
]
