"""The hdf5 layouts of embedding dumps, without TensorFlow (SPEC §12).

`keras-elmo embed` writes AllenNLP's `allennlp elmo` layout (which extends
bilm-tf's): one float32 dataset `str(i)` for line `i` of the input (from 0)
and a `sentence_to_index` dataset, shape `(1,)` of one variable-length
string: the JSON object {sentence text (the line stripped of surrounding
whitespace): its dataset key}; a sentence given twice maps to its last
line. `dump-token-embeddings` writes bilm-tf's `embedding` dataset.
"""

import json

import numpy as np

DEFAULT_SENTENCE_BATCH = 64
DEFAULT_TOKEN_BATCH = 1024
SENTENCE_INDEX = "sentence_to_index"
TOKEN_EMBEDDINGS = "embedding"

# Which layers a sentence's dataset holds (AllenNLP's --all / --top /
# --average): -> the shape of the dataset of an n-token sentence.
OUTPUT_LAYERS = {
    "all": "(num_layers + 1, n, 2 * projection_dim)",
    "top": "(n, 2 * projection_dim): the top LSTM layer",
    "average": "(n, 2 * projection_dim): the mean of all layers",
}
DEFAULT_OUTPUT_LAYERS = "all"


def select_layers(layers, output_layers):
    """The dataset of one sentence: `layers` is float32
    `(num_layers + 1, n, width)`."""
    if output_layers == "top":
        return layers[-1]
    if output_layers == "average":
        return layers.mean(axis=0, dtype=np.float32)
    return layers


def write_sentence_index(out, index):
    """Writes the `sentence_to_index` dataset of `index` {text: key} into
    the open h5py file `out`."""
    import h5py

    dataset = out.create_dataset(
        SENTENCE_INDEX, (1,), dtype=h5py.string_dtype(encoding="utf-8")
    )
    dataset[0] = json.dumps(index)
