"""ELMoForManyLangs model folders in: the equivalent Keras `BiLM`.

ELMoForManyLangs (EFML, HIT-SCIR, MIT licence) publishes ELMo biLMs for 44
languages as model folders:

- `config.json`: the training run's options; `config_path` names the
  network's config file, often by an absolute path of the trainer's
  machine. EFML then tries the file's base name in the model folder, then
  its own packaged configs (`cnn_50_100_512_4096_sample.json` and
  `cnn_0_100_512_4096_sample.json`, both the same network);
- the network config: `encoder` (`projection_dim`, `dim`, `n_layers`,
  `cell_clip`, `proj_clip`) and `token_embedder` (`filters`, `n_highway`,
  `activation`, `char_dim`, `word_dim`, `max_characters_per_token`);
- `char.dic` and `word.dic`: one `entry<TAB>id` a line;
- `token_embedder.pkl` and `encoder.pkl`: PyTorch state dicts, read here
  without PyTorch (`elmo_core.formats.torch_pickle`).

The folder, its configs and dictionaries are read by
`elmo_core.formats.elmo_for_many_langs_files`; this module converts them.

The conversion is explicit (each rule checked against EFML's code by the
fixture parity test): convolution weights `(n, d, w)` -> `(w, d, n)`;
EFML's highway computes `g * x + (1 - g) * relu(A x)` with the gate `g`
from the second half of one linear layer, ours `t * relu(...) + (1 - t) *
x`, so the gate weights are negated (`t = 1 - g`); LSTM gates are stored
(i, f, g, o) with the forget bias in the weights, ours (i, j, f, o) with
1.0 added at run time; EFML always has skip connections and an LSTM
projection.
"""

import os

import numpy as np

from elmo_core.errors import KerasElmoError
from elmo_core.errors import WeightFileError
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.formats.elmo_for_many_langs_files import find_model_dir
from elmo_core.formats.elmo_for_many_langs_files import read_dictionary
from elmo_core.formats.elmo_for_many_langs_files import read_network_config
from elmo_core.formats.torch_pickle import read_state_dict
from elmo_core.ids.elmo_for_many_langs_ids import CHARACTER_SPECIALS
from elmo_core.ids.elmo_for_many_langs_ids import MAX_CHARACTERS_PER_TOKEN_RANGE
from elmo_core.ids.elmo_for_many_langs_ids import WORD_SPECIALS
from keras_elmo.layers.bilm import BiLM


def _get(config, section, key, source, kind=int, minimum=None, maximum=None):
    value = (
        config.get(section, {}).get(key)
        if isinstance(config.get(section), dict)
        else None
    )
    check = check_integer if kind is int else check_number
    try:
        return check(
            value,
            where=f"{source} `{section}.{key}`",
            minimum=minimum,
            maximum=maximum,
        )
    except KerasElmoError as error:
        raise error.within(kind=WeightFileError) from None


def _named(section, name):
    value = section.get("name", "")
    return isinstance(value, str) and value.lower() == name


def _filters(filters, source):
    """`token_embedder.filters`: a non-empty list of [width, num_filters]
    pairs of integers >= 1, each checked by name."""
    if (
        not isinstance(filters, list)
        or not filters
        or not all(isinstance(f, list) and len(f) == 2 for f in filters)
    ):
        raise WeightFileError(
            f"{source} `token_embedder.filters` must be a list of [width, "
            "num_filters] pairs.",
            received=filters,
        )
    checked = []
    for i, (width, count) in enumerate(filters):
        key = f"{source} `token_embedder.filters[{i}]`"
        try:
            checked.append(
                [
                    check_integer(width, where=f"{key} width", minimum=1),
                    check_integer(count, where=f"{key} num_filters", minimum=1),
                ]
            )
        except KerasElmoError as error:
            raise error.within(kind=WeightFileError) from None
    return checked


def network_config_to_bilm(config, source):
    """Maps an EFML network config to `BiLM` arguments (without the
    vocabularies)."""
    encoder = config.get("encoder")
    embedder = config.get("token_embedder")
    if not isinstance(encoder, dict) or not isinstance(embedder, dict):
        raise WeightFileError(
            f"{source} needs `encoder` and `token_embedder` sections."
        )
    if not (_named(encoder, "elmo") and _named(embedder, "cnn")):
        raise WeightFileError(
            f"{source} describes another encoder and token embedder than "
            "'elmo' with 'cnn': keras_elmo reads the ELMo biLMs (the "
            "published models), not EFML's plain-LSTM variants.",
            received={
                "encoder": encoder.get("name"),
                "token_embedder": embedder.get("name"),
            },
        )
    if _get(config, "token_embedder", "char_dim", source, minimum=0) < 1:
        raise WeightFileError(
            f"{source} has token_embedder.char_dim 0 (a word-only model); "
            "keras_elmo reads EFML models with characters (all published "
            "ones)."
        )
    filters = _filters(embedder.get("filters"), source)
    activation = embedder.get("activation")
    if activation not in ("relu", "tanh"):
        raise WeightFileError(
            f"{source} `token_embedder.activation` must be 'relu' or 'tanh'.",
            received=activation,
        )
    units = _get(config, "encoder", "dim", source, minimum=1)
    projection_dim = _get(
        config, "encoder", "projection_dim", source, minimum=1
    )
    if projection_dim >= units:
        raise WeightFileError(
            f"{source} has encoder.projection_dim {projection_dim} >= "
            f"encoder.dim {units}; keras_elmo's LSTM projects only to a "
            "smaller size (every published model has 512 < 4096)."
        )
    clips = {}
    for key in ("cell_clip", "proj_clip"):
        value = encoder.get(key)
        # EFML clips only when the value is truthy.
        clips[key] = (
            _get(config, "encoder", key, source, float, 0) or None
            if value is not None
            else None
        )
    word_dim = _get(config, "token_embedder", "word_dim", source, minimum=0)
    return {
        "token_encoder": "elmo_for_many_langs",
        "filters": filters,
        "char_embedding_dim": _get(
            config, "token_embedder", "char_dim", source
        ),
        "activation": activation,
        "num_highway_layers": _get(
            config, "token_embedder", "n_highway", source, minimum=0
        ),
        "max_characters_per_token": _get(
            config,
            "token_embedder",
            "max_characters_per_token",
            source,
            minimum=MAX_CHARACTERS_PER_TOKEN_RANGE[0],
            maximum=MAX_CHARACTERS_PER_TOKEN_RANGE[1],
        ),
        "word_embedding_dim": word_dim or None,
        "units": units,
        "projection_dim": projection_dim,
        "num_layers": _get(config, "encoder", "n_layers", source, minimum=1),
        "cell_clip": clips["cell_clip"],
        "proj_clip": clips["proj_clip"],
        "use_skip_connections": True,
    }


def _lstm_weights(state, prefix, units):
    """EFML LstmCellWithProjection -> (kernel, recurrent, bias, projection).

    EFML's gate blocks are (input, forget, candidate, output) with the
    forget bias stored; ours are (input, candidate, forget, output) with 1.0
    added at run time.
    """
    order = np.concatenate(
        [np.arange(k * units, (k + 1) * units) for k in (0, 2, 1, 3)]
    )
    bias = state[f"{prefix}.state_linearity.bias"][order].copy()
    bias[2 * units : 3 * units] -= 1.0
    return (
        state[f"{prefix}.input_linearity.weight"].T[:, order],
        state[f"{prefix}.state_linearity.weight"].T[:, order],
        bias,
        state[f"{prefix}.state_projection.weight"].T,
    )


def _assignments(bilm, token_state, encoder_state):
    """`(variable, value)` for every weight of the BiLM."""
    cnn = bilm.char_cnn
    items = [(cnn.embeddings, token_state["char_emb_layer.embedding.weight"])]
    for i, (kernel, bias) in enumerate(zip(cnn.kernels, cnn.biases)):
        # Conv1d weights are (out, in, width); ours (width, in, out).
        weight = token_state[f"convolutions.{i}.weight"]
        items.append((kernel, weight.transpose(2, 1, 0)))
        items.append((bias, token_state[f"convolutions.{i}.bias"]))
    features = cnn.output_dim
    for k, highway in enumerate(bilm.highway_layers):
        weight = token_state[f"highways._layers.{k}.weight"]
        bias = token_state[f"highways._layers.{k}.bias"]
        # Rows [0, F) give the transform, rows [F, 2F) the gate g; ours
        # gates the transform with t = 1 - g = sigmoid(-(...)).
        items += [
            (highway.transform_kernel, weight[:features].T),
            (highway.transform_bias, bias[:features]),
            (highway.carry_kernel, -weight[features:].T),
            (highway.carry_bias, -bias[features:]),
        ]
    if bilm.word_embedding is not None:
        items.append(
            (
                bilm.word_embedding.embeddings,
                token_state["word_emb_layer.embedding.weight"],
            )
        )
    items += [
        (bilm.token_projection.kernel, token_state["projection.weight"].T),
        (bilm.token_projection.bias, token_state["projection.bias"]),
    ]
    for direction, layers in (
        ("forward", bilm.forward_layers),
        ("backward", bilm.backward_layers),
    ):
        for i, layer in enumerate(layers):
            values = _lstm_weights(
                encoder_state, f"{direction}_layer_{i}", bilm.units
            )
            variables = (
                layer.kernel,
                layer.recurrent_kernel,
                layer.bias,
                layer.projection_kernel,
            )
            items += list(zip(variables, values))
    return items


def _check_state(state, expected, path):
    """Every expected key present with its shape; no key left over."""
    for key, shape in expected.items():
        if key not in state:
            raise WeightFileError(
                f"{path} has no tensor {key!r} of shape {shape}, which the "
                "model's config implies. Is the config the one of these "
                "weights?"
            )
        if tuple(state[key].shape) != tuple(shape):
            raise WeightFileError(
                f"Tensor {key!r} in {path} has shape "
                f"{tuple(state[key].shape)}, but the config and dictionaries "
                f"imply {tuple(shape)}. Is the config the one of these "
                "weights?"
            )
    extra = sorted(set(state) - set(expected))
    if extra:
        raise WeightFileError(
            f"{path} has tensors the config does not describe: {extra[:5]}. "
            "Is the config the one of these weights?"
        )


def _expected_shapes(arguments, num_chars, num_words):
    """Tensor name -> shape of EFML's two state dicts."""
    width = arguments["char_embedding_dim"]
    features = sum(n for _, n in arguments["filters"])
    token = {"char_emb_layer.embedding.weight": (num_chars, width)}
    if arguments["word_embedding_dim"]:
        token["word_emb_layer.embedding.weight"] = (
            num_words,
            arguments["word_embedding_dim"],
        )
    for i, (w, n) in enumerate(arguments["filters"]):
        token[f"convolutions.{i}.weight"] = (n, width, w)
        token[f"convolutions.{i}.bias"] = (n,)
    for k in range(arguments["num_highway_layers"]):
        token[f"highways._layers.{k}.weight"] = (2 * features, features)
        token[f"highways._layers.{k}.bias"] = (2 * features,)
    projection_in = features + (arguments["word_embedding_dim"] or 0)
    token["projection.weight"] = (arguments["projection_dim"], projection_in)
    token["projection.bias"] = (arguments["projection_dim"],)
    units, size = arguments["units"], arguments["projection_dim"]
    encoder = {}
    for direction in ("forward", "backward"):
        for i in range(arguments["num_layers"]):
            prefix = f"{direction}_layer_{i}"
            encoder[f"{prefix}.input_linearity.weight"] = (4 * units, size)
            encoder[f"{prefix}.state_linearity.weight"] = (4 * units, size)
            encoder[f"{prefix}.state_linearity.bias"] = (4 * units,)
            encoder[f"{prefix}.state_projection.weight"] = (size, units)
    return token, encoder


def _check_counts(arguments, states, paths, source):
    """The layer and filter counts of the config, each at most what the
    weight files hold tensors for (before any loop over them)."""
    counts = {
        "encoder.n_layers": (arguments["num_layers"], 1, paths[1]),
        "token_embedder.n_highway": (
            arguments["num_highway_layers"],
            0,
            paths[0],
        ),
        "token_embedder.filters": (len(arguments["filters"]), 1, paths[0]),
    }
    for key, (count, smallest, path) in counts.items():
        state = states[paths.index(path)]
        if count > smallest and count > len(state):
            raise WeightFileError(
                f"{source} has `{key}` {count:,}, but {path} holds only "
                f"{len(state)} tensors, too few for that many. Is the "
                "config the one of these weights?"
            )


def _check_dictionary_ids(dictionary, entries, table, path):
    """A dictionary's ids, each a row of its embedding table in `path`."""
    rows = None if table is None or table.ndim != 2 else table.shape[0]
    largest = max(entries.values())
    if rows is not None and largest >= rows:
        entry = max(entries, key=entries.get)
        raise WeightFileError(
            f"{dictionary} gives {entry[:20]!r} id {largest}, but its "
            f"embedding table in {path} has {rows} rows (ids 0..{rows - 1})."
            f" Is {os.path.basename(dictionary)} the one of these weights?"
        )


def load_elmo_for_many_langs(model_dir, **kwargs):
    """Builds the Keras `BiLM` of an ELMoForManyLangs model folder.

    No PyTorch needed: the state dicts are read with NumPy. The result
    reads tokens as EFML does (its character and word vocabularies, looked
    up in-graph by `ELMoEmbedding`, or by `bilm.encoder.batch_to_inputs`)
    and gives EFML's outputs (`Embedder.sents2elmo(output_layer=-2)`).
    Stateless by default; `stateful=True` carries each batch row's LSTM
    state into the next call as EFML does (EFML orders a batch's rows
    longest sentence first).

    Args:
        model_dir: str, the model folder (or a folder holding just one).
        **kwargs: extra `BiLM` arguments, e.g. `stateful=True`.

    Returns:
        A built `keras_elmo.layers.BiLM` with
        `token_encoder="elmo_for_many_langs"`.
    """
    model_dir = find_model_dir(os.fspath(model_dir))
    config, source = read_network_config(model_dir)
    arguments = network_config_to_bilm(config, source)
    characters = read_dictionary(
        os.path.join(model_dir, "char.dic"), CHARACTER_SPECIALS
    )
    words = None
    if arguments["word_embedding_dim"]:
        words = read_dictionary(
            os.path.join(model_dir, "word.dic"), WORD_SPECIALS
        )
    num_chars = max(characters.values()) + 1
    num_words = 0 if words is None else max(words.values()) + 1
    paths = [
        os.path.join(model_dir, name)
        for name in ("token_embedder.pkl", "encoder.pkl")
    ]
    states = [read_state_dict(path) for path in paths]
    _check_counts(arguments, states, paths, source)
    dictionaries = [("char.dic", characters, "char_emb_layer")]
    if words is not None:
        dictionaries.append(("word.dic", words, "word_emb_layer"))
    for name, entries, table in dictionaries:
        _check_dictionary_ids(
            os.path.join(model_dir, name),
            entries,
            states[0].get(f"{table}.embedding.weight"),
            paths[0],
        )
    for state, shapes, path in zip(
        states, _expected_shapes(arguments, num_chars, num_words), paths
    ):
        _check_state(state, shapes, path)
    arguments.update(characters=characters, words=words)
    arguments.update(kwargs)
    try:
        bilm = BiLM(**arguments)
    except KerasElmoError as error:
        context = f"{source} describes no valid biLM"
        raise error.within(context, WeightFileError) from None
    except ValueError as error:
        raise WeightFileError(
            f"{source} describes no valid biLM: {error}"
        ) from None
    bilm.build()
    for variable, value in _assignments(bilm, *states):
        variable.assign(np.asarray(value, dtype="float32"))
    return bilm
