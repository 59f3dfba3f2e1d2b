"""Official ELMo weights in and out: `options.json` + hdf5 (SPEC §1, §4-7).

The config mapping (`options_to_config`, `config_to_options`) is kept apart
from the weight porting (`_weight_datasets`), as in the KerasHub converters:
it is `elmo_core.formats.bilm_tf_options`.
"""

import json
import os

import h5py
import keras
import numpy as np

from elmo_core.errors import KerasElmoError
from elmo_core.errors import WeightFileError
from elmo_core.files import atomic_output
from elmo_core.files import check_output_file
from elmo_core.files import hdf5_output
from elmo_core.formats.bilm_tf_options import check_weight_file
from elmo_core.formats.bilm_tf_options import config_to_options
from elmo_core.formats.bilm_tf_options import options_file_config
from elmo_core.formats.hdf5_datasets import checked_dataset
from elmo_core.formats.hdf5_datasets import read_weights
from elmo_core.settings.bilm_size import check_bilm_memory
from keras_elmo.layers.bilm import BiLM
from keras_elmo.layers.token_encoders.word_encoder import check_bilm_vocabulary

# A dataset may declare at most this many times the weight file's size:
# float weights compress by less than 2x, so 20x is no real file.
MAX_DATASET_RATIO = 20


def _lstm_prefix(direction, index):
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{index}/LSTMCell"


def _weight_datasets(bilm):
    """`(dataset name, [variables], axis)` for every dataset of a BiLM.

    A dataset maps to one variable, or to several concatenated along `axis`
    (the official `W_0` holds the input and the recurrent kernel).
    """
    entries = _ENCODER_DATASETS[bilm.token_encoder](bilm)
    for direction, layers in enumerate(
        (bilm.forward_layers, bilm.backward_layers)
    ):
        for i, layer in enumerate(layers):
            prefix = _lstm_prefix(direction, i)
            entries.append(
                (f"{prefix}/W_0", [layer.kernel, layer.recurrent_kernel], 0)
            )
            entries.append((f"{prefix}/B", [layer.bias], None))
            if layer.projection_kernel is not None:
                entries.append(
                    (f"{prefix}/W_P_0", [layer.projection_kernel], None)
                )
    return entries


def _word_datasets(bilm):
    # One row per vocabulary line; bilm-tf adds the padding row on loading.
    return [("embedding", [bilm.word_embedding.embeddings], None)]


def _character_datasets(bilm):
    cnn = bilm.char_cnn
    entries = [("char_embed", [cnn.embeddings], None)]
    for i, (kernel, bias) in enumerate(zip(cnn.kernels, cnn.biases)):
        # Official kernels are (1, width, dim, n): a 2-D conv of height 1.
        entries.append((f"CNN/W_cnn_{i}", [kernel], "conv"))
        entries.append((f"CNN/b_cnn_{i}", [bias], None))
    for k, highway in enumerate(bilm.highway_layers):
        entries += [
            (f"CNN_high_{k}/W_carry", [highway.carry_kernel], None),
            (f"CNN_high_{k}/b_carry", [highway.carry_bias], None),
            (f"CNN_high_{k}/W_transform", [highway.transform_kernel], None),
            (f"CNN_high_{k}/b_transform", [highway.transform_bias], None),
        ]
    if bilm.token_projection is not None:
        entries += [
            ("CNN_proj/W_proj", [bilm.token_projection.kernel], None),
            ("CNN_proj/b_proj", [bilm.token_projection.bias], None),
        ]
    return entries


# The token-encoder datasets of each `BiLM.token_encoder` that has an
# official (bilm-tf) layout; the LSTM datasets are common to all.
_ENCODER_DATASETS = {
    "characters": _character_datasets,
    "words": _word_datasets,
}


def _file_shape(variables, axis):
    shapes = [tuple(v.shape) for v in variables]
    if axis == "conv":
        return (1, *shapes[0])
    if axis is None:
        return shapes[0]
    return (sum(s[0] for s in shapes), *shapes[0][1:])


def _open_hdf5(weight_file, mode):
    if mode == "r":
        check_weight_file(weight_file)
    try:
        return h5py.File(weight_file, mode)
    except OSError as e:
        raise WeightFileError(
            f"Could not open {weight_file} as an HDF5 weight file ({e}). Is "
            "it a complete download of the official .hdf5 weights?"
        ) from None


def _blamed(error, kwargs):
    """The error of `BiLM(**config)`, blamed on the caller's own argument
    (one of `kwargs`) when it is about one, else on the file."""
    if error.argument in kwargs:
        return KerasElmoError(
            f"load_bilm({error.argument}=...): {error.message}",
            error.argument,
            received=error.received,
        )
    return error.within("options.json describes no valid biLM", WeightFileError)


def read_bilm(options_file, weight_file, vocabulary=None, **kwargs):
    """Builds a `BiLM` from local official `options.json` + hdf5 weights.

    Local files only: `keras_elmo.load_bilm` resolves names, URLs and
    folders to these files first (see `keras_elmo.loading`).

    Accepts `n_characters` 261 or 262, files without `CNN_proj` (when the
    char CNN width equals the projection size) and without `W_P_0` (when
    `projection_dim == dim`). Every dataset is checked against the shape the
    options imply; a mismatch names the dataset and both shapes.

    Options without `char_cnn` give a word-input biLM (bilm-tf's format:
    the table `embedding` has one row per vocabulary line, the padding row
    is not stored); its size comes from the file and must equal
    `n_tokens_vocab` when the options have it, and the vocabulary's size
    when one is given.

    Args:
        options_file: str, path of `options.json` (or the parsed dict).
        weight_file: str, path of the hdf5 weights.
        vocabulary: for a word-input biLM, optionally its vocabulary (a
            path, a list of tokens or a `elmo_core.ids.Vocabulary`),
            checked against the table. Defaults to `None`.
        **kwargs: extra `BiLM` arguments, e.g. `stateful=True`, `dropout`.

    Returns:
        A built `keras_elmo.layers.BiLM` holding the weights.
    """
    config = options_file_config(options_file)
    with _open_hdf5(weight_file, "r") as f:
        if config.get("token_encoder") == "words":
            config["vocabulary_size"] = _word_table_size(f, weight_file, config)
        else:
            config["use_token_projection"] = _has_token_projection(
                f, weight_file, config
            )
        _check_sizes_against_file(config, f, weight_file)
        config.update(kwargs)
        try:
            bilm = BiLM(**config)
        except KerasElmoError as error:
            raise _blamed(error, kwargs) from None
        except ValueError as error:
            raise WeightFileError(
                f"options.json describes no valid biLM: {error}"
            ) from None
        if vocabulary is not None:
            check_bilm_vocabulary(
                bilm.encoder, vocabulary, f"weights {weight_file}"
            )
        check_bilm_memory(bilm.arguments(), f"The biLM of {weight_file}")
        _build_for_loading(bilm)
        for name, variables, axis in _weight_datasets(bilm):
            expected = _file_shape(variables, axis)
            item = checked_dataset(f, name, weight_file)
            if item is None:
                raise WeightFileError(
                    f"{weight_file} has no dataset {name!r} of shape "
                    f"{expected}, which the options imply. Is the options "
                    "file the one of these weights?"
                )
            found = tuple(item.shape)
            if found != expected:
                raise WeightFileError(
                    f"Dataset {name!r} in {weight_file} has shape {found}, "
                    f"but the options imply {expected}. Is the options file "
                    "the one of these weights?"
                )
            _assign(variables, axis, read_weights(item, name, weight_file))
    return bilm


def _build_for_loading(bilm):
    """Builds `bilm` with zeros in its LSTM weights, which the file
    overwrites: drawing those 80 % of the weights at random first, only
    to replace them, was most of the time a load took before the file
    was read."""
    lstms = bilm.forward_layers + bilm.backward_layers
    initializers = [layer.kernel_initializer for layer in lstms]
    for layer in lstms:
        layer.kernel_initializer = keras.initializers.Zeros()
    bilm.build()
    for layer, initializer in zip(lstms, initializers):
        layer.kernel_initializer = initializer


def _check_sizes_against_file(config, f, weight_file):
    """The sizes of the options against the weight file's shapes, before
    any layer is built: a count (layers, highway layers, filters) at most
    the datasets the file has, and each size the shape of a dataset it
    sizes. The full check of every dataset follows once the biLM is
    built."""

    def compare(key, name, expected):
        item = checked_dataset(f, name, weight_file)
        found = tuple(item.shape) if item is not None else None
        if found is None:
            raise WeightFileError(
                f"{weight_file} has no dataset {name!r} of shape "
                f"{tuple(expected)}, which the options imply (`{key}`). Is "
                "the options file the one of these weights?"
            )
        if found != tuple(expected):
            raise WeightFileError(
                f"Dataset {name!r} in {weight_file} has shape {found}, but "
                f"the options imply {tuple(expected)} (from `{key}`). Is the "
                "options file the one of these weights?"
            )
        _check_backed(item, name, weight_file)

    def count(key, value, group):
        held = len(group) if isinstance(group, h5py.Group) else 0
        if value > held:
            raise WeightFileError(
                f"options.json has `{key}` = {value:,}, but {weight_file} "
                f"holds {held} such entries. Is the options file the one "
                "of these weights?"
            )

    layers, units = config["num_layers"], config["units"]
    projection = config["projection_dim"]
    count("lstm.n_layers", layers, f.get("RNN_0/RNN/MultiRNNCell"))
    for key, layer in (("lstm.dim", 0), ("lstm.n_layers", layers - 1)):
        compare(
            key, f"{_lstm_prefix(0, layer)}/W_0", (2 * projection, 4 * units)
        )
    if config.get("token_encoder") == "words":
        return
    dim = config["char_embedding_dim"]
    table = checked_dataset(f, "char_embed", weight_file)
    rows = table.shape[0] if table is not None else 0
    compare("char_cnn.embedding.dim", "char_embed", (rows, dim))
    filters = config["filters"]
    count("char_cnn.filters", len(filters), f.get("CNN"))
    for i, (width, num) in enumerate(filters):
        compare(
            f"char_cnn.filters[{i}]", f"CNN/W_cnn_{i}", (1, width, dim, num)
        )
    highway = config["num_highway_layers"]
    count("char_cnn.n_highway", highway, f)
    features = sum(n for _, n in filters)
    if highway:
        compare(
            "char_cnn.n_highway",
            f"CNN_high_{highway - 1}/W_carry",
            (features, features),
        )


def _check_backed(item, name, weight_file):
    """A dataset holds at most `MAX_DATASET_RATIO` times the file's bytes
    (plus 1 MiB): a chunked dataset can declare any shape in a tiny file,
    and the biLM built from it would allocate that shape."""
    bound = MAX_DATASET_RATIO * os.path.getsize(weight_file) + 2**20
    if item.size * item.dtype.itemsize > bound:
        raise WeightFileError(
            f"Dataset {name!r} in {weight_file} declares shape "
            f"{item.shape}, {item.size * item.dtype.itemsize:,} bytes, "
            f"far more than the file's {os.path.getsize(weight_file):,}; "
            "the file is damaged or hostile."
        )


def _has_token_projection(f, weight_file, config):
    projection = checked_dataset(f, "CNN_proj/W_proj", weight_file)
    has_projection = projection is not None
    num_features = sum(n for _, n in config["filters"])
    if not has_projection and num_features != config["projection_dim"]:
        raise WeightFileError(
            f"{weight_file} has no dataset 'CNN_proj/W_proj', but the "
            f"char CNN gives {num_features} features and "
            f"lstm.projection_dim is {config['projection_dim']}, so a "
            f"projection of shape ({num_features}, "
            f"{config['projection_dim']}) is needed. Is the options "
            "file the one of these weights?"
        )
    return has_projection


def _word_table_size(f, weight_file, config):
    """Rows of the word table `embedding`, checked against the options."""
    table = checked_dataset(f, "embedding", weight_file)
    if table is None or len(table.shape) != 2:
        raise WeightFileError(
            f"{weight_file} has no 2-D dataset 'embedding'. The options have "
            "no char_cnn section, so they describe a word-input biLM, whose "
            "token table is 'embedding' (n_vocab, projection_dim). Is the "
            "options file the one of these weights?"
        )
    _check_backed(table, "embedding", weight_file)
    rows = int(table.shape[0])
    expected = config.get("vocabulary_size")
    if expected is not None and int(expected) != rows:
        raise WeightFileError(
            f"options.json has n_tokens_vocab={expected}, but the word table "
            f"'embedding' in {weight_file} has {rows} rows (one per "
            "vocabulary line). Is the options file the one of these weights?"
        )
    return rows


def _assign(variables, axis, value):
    if axis == "conv":
        variables[0].assign(value[0])
    elif axis is None:
        variables[0].assign(value)
    else:
        sizes = np.cumsum([v.shape[0] for v in variables])[:-1]
        for variable, part in zip(variables, np.split(value, sizes, axis=0)):
            variable.assign(part)


def _file_value(variables, axis):
    values = [np.asarray(v.numpy(), dtype="float32") for v in variables]
    if axis == "conv":
        return values[0][None]
    if axis is None:
        return values[0]
    return np.concatenate(values, axis=0)


def save_bilm(bilm, options_file, weight_file, extra_datasets=None):
    """Writes a `BiLM` as official `options.json` + hdf5 weights.

    The files load with `read_bilm` and `keras_elmo.load_bilm` (and with
    AllenNLP / bilm-tf) and give
    the same outputs; the round trip is exact.

    Args:
        bilm: a built `keras_elmo.layers.BiLM`.
        options_file: str, path to write `options.json` to.
        weight_file: str, path to write the hdf5 weights to.
        extra_datasets: optional dict `name -> array` written beside the
            biLM weights (e.g. the softmax of a trained language model).

    Example:

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> bilm = keras_elmo.load_bilm("tests/fixtures/bilm-tf/model")
    >>> keras_elmo.save_bilm(bilm, os.path.join(folder, "options.json"),
    ...                      os.path.join(folder, "weights.hdf5"))
    >>> keras_elmo.load_bilm(folder).count_params() == bilm.count_params()
    True
    """
    from keras_elmo.layers.bilm import BiLM

    if not isinstance(bilm, BiLM):
        raise KerasElmoError(
            "`bilm` must be a keras_elmo.layers.BiLM.", "bilm", received=bilm
        )
    options_file = check_output_file(options_file, (), "options_file")
    weight_file = check_output_file(weight_file, (options_file,), "weight_file")
    if extra_datasets is not None and not isinstance(extra_datasets, dict):
        raise KerasElmoError(
            "`extra_datasets` must be a dict {name: array} or None.",
            "extra_datasets",
            received=extra_datasets,
        )
    if not bilm.built:
        bilm.build()
    with atomic_output(options_file) as temporary:
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(config_to_options(bilm), f, indent=2)
    with hdf5_output(weight_file) as f:
        for name, variables, axis in _weight_datasets(bilm):
            f.create_dataset(name, data=_file_value(variables, axis))
        for name, value in (extra_datasets or {}).items():
            f.create_dataset(name, data=np.asarray(value))
