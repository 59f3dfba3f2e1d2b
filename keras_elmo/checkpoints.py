"""Official ELMo weights in and out: `options.json` + hdf5 (SPEC §1, §4-7).

The config mapping (`options_to_config`, `config_to_options`) is kept apart
from the weight porting (`_weight_datasets`), as in the KerasHub converters.
"""

import json
import os

import h5py
import numpy as np

from keras_elmo.layers.bilm import BiLM


class WeightFileError(ValueError):
    """An options or weight file that does not fit the model it describes."""


def _read_options(options_file):
    if isinstance(options_file, dict):
        return options_file
    if not os.path.exists(options_file):
        raise FileNotFoundError(
            f"Options file not found: {options_file}. Pass the options.json "
            "that came with the weights (e.g. "
            "elmo_2x4096_512_2048cnn_2xhighway_options.json)."
        )
    try:
        with open(options_file, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise WeightFileError(
            f"Options file {options_file} is not valid JSON: {e}"
        ) from None


def _get(options, path, default=KeyError):
    value = options
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            if default is KeyError:
                raise WeightFileError(
                    f"options.json has no `{path}`; it is required (see the "
                    "official options files for the layout)."
                )
            return default
        value = value[key]
    return value


def options_to_config(options):
    """Maps an official options dict to `BiLM` constructor arguments."""
    n_characters = _get(options, "char_cnn.n_characters", 262)
    if n_characters not in (261, 262):
        raise WeightFileError(
            f"options.json has char_cnn.n_characters={n_characters}; "
            "expected 261 (training files) or 262 (inference files)."
        )
    max_chars = _get(options, "char_cnn.max_characters_per_token", 50)
    if max_chars != 50:
        raise WeightFileError(
            "options.json has char_cnn.max_characters_per_token="
            f"{max_chars}; keras_elmo supports 50, the value of every "
            "published model."
        )
    activation = _get(options, "char_cnn.activation")
    if activation not in ("relu", "tanh"):
        raise WeightFileError(
            f"options.json has char_cnn.activation={activation!r}; expected "
            "'relu' or 'tanh'."
        )
    return {
        "filters": [list(f) for f in _get(options, "char_cnn.filters")],
        "char_embedding_dim": _get(options, "char_cnn.embedding.dim"),
        "activation": activation,
        "num_highway_layers": _get(options, "char_cnn.n_highway", 0),
        "units": _get(options, "lstm.dim"),
        "projection_dim": _get(options, "lstm.projection_dim"),
        "num_layers": _get(options, "lstm.n_layers"),
        "cell_clip": _get(options, "lstm.cell_clip", None),
        "proj_clip": _get(options, "lstm.proj_clip", None),
        "use_skip_connections": bool(
            _get(options, "lstm.use_skip_connections", False)
        ),
    }


def config_to_options(bilm):
    """The official (inference) options dict of a `BiLM`."""
    return {
        "lstm": {
            "dim": bilm.units,
            "projection_dim": bilm.projection_dim,
            "n_layers": bilm.num_layers,
            "cell_clip": bilm.cell_clip,
            "proj_clip": bilm.proj_clip,
            "use_skip_connections": bilm.use_skip_connections,
        },
        "char_cnn": {
            "embedding": {"dim": bilm.char_embedding_dim},
            "filters": [list(f) for f in bilm.filters],
            "n_highway": bilm.num_highway_layers,
            "activation": bilm.activation,
            "n_characters": 262,
            "max_characters_per_token": bilm.max_characters_per_token,
        },
    }


def _lstm_prefix(direction, index):
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{index}/LSTMCell"


def _weight_datasets(bilm):
    """`(dataset name, [variables], axis)` for every dataset of a BiLM.

    A dataset maps to one variable, or to several concatenated along `axis`
    (the official `W_0` holds the input and the recurrent kernel).
    """
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


def _file_shape(variables, axis):
    shapes = [tuple(v.shape) for v in variables]
    if axis == "conv":
        return (1, *shapes[0])
    if axis is None:
        return shapes[0]
    return (sum(s[0] for s in shapes), *shapes[0][1:])


def _open_hdf5(weight_file, mode):
    if mode == "r" and not os.path.exists(weight_file):
        raise FileNotFoundError(
            f"Weight file not found: {weight_file}. Pass the hdf5 file that "
            "came with the options (e.g. ..._weights.hdf5)."
        )
    try:
        return h5py.File(weight_file, mode)
    except OSError as e:
        raise WeightFileError(
            f"Could not open {weight_file} as an HDF5 weight file ({e}). Is "
            "it a complete download of the official .hdf5 weights?"
        ) from None


def load_bilm(options_file, weight_file, **kwargs):
    """Builds a `BiLM` from official ELMo `options.json` + hdf5 weights.

    Accepts `n_characters` 261 or 262, files without `CNN_proj` (when the
    char CNN width equals the projection size) and without `W_P_0` (when
    `projection_dim == dim`). Every dataset is checked against the shape the
    options imply; a mismatch names the dataset and both shapes.

    Args:
        options_file: str, path of `options.json` (or the parsed dict).
        weight_file: str, path of the hdf5 weights.
        **kwargs: extra `BiLM` arguments, e.g. `stateful=True`, `dropout`.

    Returns:
        A built `keras_elmo.layers.BiLM` holding the weights.

    Example:

    >>> bilm = keras_elmo.load_bilm(
    ...     "tests/fixtures/bilm-tf/model/options.json",
    ...     "tests/fixtures/bilm-tf/model/lm_weights.hdf5")
    >>> bilm.count_params()
    105120
    """
    options = _read_options(options_file)
    config = options_to_config(options)
    with _open_hdf5(weight_file, "r") as f:
        has_projection = "CNN_proj/W_proj" in f
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
        config["use_token_projection"] = has_projection
        config.update(kwargs)
        try:
            bilm = BiLM(**config)
        except ValueError as e:
            raise WeightFileError(f"options.json describes no valid biLM: {e}")
        bilm.build()
        for name, variables, axis in _weight_datasets(bilm):
            expected = _file_shape(variables, axis)
            if name not in f or not isinstance(f[name], h5py.Dataset):
                raise WeightFileError(
                    f"{weight_file} has no dataset {name!r} of shape "
                    f"{expected}, which the options imply. Is the options "
                    "file the one of these weights?"
                )
            found = tuple(f[name].shape)
            if found != expected:
                raise WeightFileError(
                    f"Dataset {name!r} in {weight_file} has shape {found}, "
                    f"but the options imply {expected}. Is the options file "
                    "the one of these weights?"
                )
            try:
                value = np.asarray(f[name][...], dtype="float32")
            except OSError as e:
                raise WeightFileError(
                    f"Could not read dataset {name!r} of {weight_file} "
                    f"({e}); the file looks damaged."
                ) from None
            _assign(variables, axis, value)
    return bilm


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

    The files load with `load_bilm` (and with AllenNLP / bilm-tf) and give
    the same outputs; the round trip is exact.

    Args:
        bilm: a built `keras_elmo.layers.BiLM`.
        options_file: str, path to write `options.json` to.
        weight_file: str, path to write the hdf5 weights to.
        extra_datasets: optional dict `name -> array` written beside the
            biLM weights (e.g. the softmax of a trained language model).
    """
    if not bilm.built:
        bilm.build()
    with open(options_file, "w", encoding="utf-8") as f:
        json.dump(config_to_options(bilm), f, indent=2)
    with _open_hdf5(weight_file, "w") as f:
        for name, variables, axis in _weight_datasets(bilm):
            f.create_dataset(name, data=_file_value(variables, axis))
        for name, value in (extra_datasets or {}).items():
            f.create_dataset(name, data=np.asarray(value))
