"""Model configurations with absurd values (issue 18, section 1).

bilm-tf `options.json` and ELMoForManyLangs `config.json` / network JSON
/ `char.dic` that name 10^9 layers, units, filters or characters, strings
where numbers belong, NaN or infinity: each is a `WeightFileError` naming
the file and the key, raised before any layer is built: each case checks
that no Keras weight was made (`weights_made`), so none takes minutes or
all memory.
"""

import functools
import json
import os
import shutil

import keras
import pytest

import keras_elmo
from elmo_core.errors import WeightFileError
from tests import hostile_files
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.helpers import assert_words_in
from tests.helpers import fixture_options
from tests.helpers import named_cases

EFML = os.path.join(
    os.path.dirname(__file__), "fixtures", "elmo_for_many_langs", "char_model"
)
WORDS = os.path.join(
    os.path.dirname(__file__), "fixtures", "bilm-tf-words", "model"
)
BILLION = 10**9
NAN = float("nan")


@pytest.fixture
def weights_made(monkeypatch):
    """The names of the Keras weights made while the test runs: a hostile
    file is refused before any (a bound that holds on any machine, where
    a time limit would not)."""
    made = []
    add_weight = keras.layers.Layer.add_weight

    def recorded(layer, *args, **kwargs):
        made.append(kwargs.get("name") or layer.name)
        return add_weight(layer, *args, **kwargs)

    monkeypatch.setattr(keras.layers.Layer, "add_weight", recorded)
    return made


# (id, options changes, words of the message)
BILM_TF = [
    ("units-billion", {"lstm.dim": BILLION},
     ["'RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0'", "`lstm.dim`",
      "(32, 4000000000)"]),
    ("projection-billion",
     {"lstm.projection_dim": BILLION, "lstm.dim": BILLION},
     ["W_0", "(2000000000, 4000000000)"]),
    ("layers-billion", {"lstm.n_layers": BILLION},
     ["`lstm.n_layers` = 1,000,000,000", "holds 2 such entries"]),
    ("highway-billion", {"char_cnn.n_highway": BILLION},
     ["`char_cnn.n_highway` = 1,000,000,000"]),
    ("char-dim-billion", {"char_cnn.embedding.dim": BILLION},
     ["'char_embed'", "(261, 1000000000)"]),
    ("filter-count-billion", {"char_cnn.filters": [[1, BILLION]]},
     ["'CNN/W_cnn_0'", "(1, 1, 4, 1000000000)", "char_cnn.filters[0]"]),
    ("many-filters", {"char_cnn.filters": [[1, 4]] * 10000},
     ["`char_cnn.filters` = 10,000", "holds 10 such entries"]),
    ("chars-per-token-billion",
     {"char_cnn.max_characters_per_token": BILLION},
     ["max_characters_per_token=1000000000", "supports 50"]),
    ("units-string", {"lstm.dim": "4096"},
     ["options.json `lstm.dim` must be an integer", "Received: '4096'."]),
    ("units-nan", {"lstm.dim": NAN},
     ["options.json `lstm.dim` must be an integer", "Received: nan."]),
    ("units-infinity", {"lstm.dim": float("inf")},
     ["options.json `lstm.dim` must be an integer", "Received: inf."]),
    ("cell-clip-nan", {"lstm.cell_clip": NAN},
     ["options.json `lstm.cell_clip` must be a finite number",
      "Received: nan."]),
    ("layers-fraction", {"lstm.n_layers": 1.5},
     ["options.json `lstm.n_layers` must be an integer", "Received: 1.5."]),
]  # fmt: skip


def _assert_refused_at_once(load, weights_made, words, *paths):
    """`load()` raises a WeightFileError before it makes any weight, and
    the message names one of `paths` and each of `words`."""
    with pytest.raises(WeightFileError) as raised:
        load()
    assert weights_made == []
    message = str(raised.value)
    assert any(path in message for path in paths), message
    assert_words_in(message, words)


@pytest.mark.parametrize("changes, words", named_cases(BILM_TF))
def test_absurd_bilm_tf_options_are_refused_at_once(
    tmp_path, changes, words, weights_made
):
    path = str(tmp_path / "options.json")
    with open(path, "w") as f:
        json.dump(fixture_options(**changes), f)  # NaN and inf as JSON allows
    load = functools.partial(keras_elmo.load_bilm, path, WEIGHTS)
    _assert_refused_at_once(load, weights_made, words, path, WEIGHTS)


def test_word_options_with_absurd_table_size(tmp_path):
    path = hostile_files.edited_json(
        os.path.join(WORDS, "options.json"),
        str(tmp_path / "options.json"),
        {"n_tokens_vocab": "many"},
    )
    weights = os.path.join(WORDS, "lm_weights.hdf5")
    refused = "`n_tokens_vocab` must be an integer >= 3. Received: 'many'."
    with pytest.raises(WeightFileError, match=refused):
        keras_elmo.load_bilm(path, weights)
    hostile_files.edited_json(path, path, {"n_tokens_vocab": BILLION})
    with pytest.raises(WeightFileError, match="n_tokens_vocab=1000000000"):
        keras_elmo.load_bilm(path, weights)


@pytest.fixture
def efml(tmp_path):
    path = tmp_path / "model"
    shutil.copytree(EFML, path)
    return path


def test_weights_made_sees_a_load_that_builds(weights_made):
    # What the cases below check is there to see.
    keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    assert "embeddings" in weights_made and len(weights_made) > 10


# (id, {section.key: value} of the network config, words of the message)
EFML_CASES = [
    ("layers-billion", {"encoder.n_layers": BILLION},
     ["`encoder.n_layers` 1,000,000,000", "encoder.pkl holds only 16"]),
    ("highway-billion", {"token_embedder.n_highway": BILLION},
     ["`token_embedder.n_highway` 1,000,000,000"]),
    ("many-filters", {"token_embedder.filters": [[1, 4]] * 100000},
     ["`token_embedder.filters` 100,000", "token_embedder.pkl holds only"]),
    ("units-billion", {"encoder.dim": BILLION},
     ["'forward_layer_0.input_linearity.weight'", "(4000000000, 6)"]),
    ("char-dim-billion", {"token_embedder.char_dim": BILLION},
     ["'char_emb_layer.embedding.weight'", "(81, 1000000000)"]),
    ("chars-per-token-billion",
     {"token_embedder.max_characters_per_token": BILLION},
     ["`token_embedder.max_characters_per_token` must be an integer >= 7 "
      "and <= 1000. Received: 1000000000."]),
    ("units-string", {"encoder.dim": "10"},
     ["`encoder.dim` must be an integer >= 1. Received: '10'."]),
    ("units-nan", {"encoder.dim": NAN},
     ["`encoder.dim` must be an integer >= 1. Received: nan."]),
    ("cell-clip-nan", {"encoder.cell_clip": NAN},
     ["`encoder.cell_clip` must be a finite number", "Received: nan."]),
    ("cell-clip-infinity", {"encoder.cell_clip": float("inf")},
     ["`encoder.cell_clip` must be a finite number", "Received: inf."]),
]  # fmt: skip


@pytest.mark.parametrize("changes, words", named_cases(EFML_CASES))
def test_absurd_efml_configs_are_refused_at_once(
    efml, changes, words, weights_made
):
    network = str(efml / "tiny_cnn.json")
    hostile_files.edited_json(network, network, changes)
    load = functools.partial(keras_elmo.load_bilm, str(efml))
    _assert_refused_at_once(load, weights_made, words, str(efml))


@pytest.mark.parametrize(
    "line, words",
    [
        ("x\t-3\n", ["char.dic, line", "id -3 of 'x' is not in 0.."]),
        ("x\t99999999999\n", ["char.dic, line", "is not in 0..999999999"]),
        ("x\t500\n", ["char.dic gives 'x' id 500", "table in", "has 81 rows"]),
    ],
    ids=["negative", "huge", "past-the-table"],
)
def test_char_dic_with_bad_ids_is_blamed(efml, line, words):
    with open(efml / "char.dic", "a", encoding="utf-8") as f:
        f.write(line)
    with pytest.raises(WeightFileError) as raised:
        keras_elmo.load_bilm(str(efml))
    message = str(raised.value)
    assert_words_in(message, words)


def test_hdf5_datasets_that_declare_more_than_the_file_holds(tmp_path):
    units = 10**6
    cells = [f"RNN_0/RNN/MultiRNNCell/Cell{i}/LSTMCell/W_0" for i in range(2)]
    weights = hostile_files.hdf5_with_declared_shapes(
        WEIGHTS,
        str(tmp_path / "weights.hdf5"),
        {name: (32, 4 * units) for name in cells},
    )
    assert os.path.getsize(weights) < 2 * os.path.getsize(WEIGHTS)
    options = str(tmp_path / "options.json")
    with open(options, "w") as f:
        json.dump(fixture_options(**{"lstm.dim": units}), f)
    with pytest.raises(WeightFileError) as raised:
        keras_elmo.load_bilm(options, weights)
    message = str(raised.value)
    assert f"{cells[0]!r} in {weights} declares shape (32, 4000000)" in message
    assert "512,000,000 bytes" in message


def test_hostile_weight_file_in_a_model_folder_names_it(efml):
    import numpy as np

    path = str(efml / "token_embedder.pkl")
    values = np.zeros((81, 4), "float32")
    tensors = {"char_emb_layer.embedding.weight": {
        "values": values, "offset": 400, "stride": (-4, 1)}}  # fmt: skip
    hostile_files.torch_file(path, tensors)
    with pytest.raises(WeightFileError) as raised:
        keras_elmo.load_bilm(str(efml))
    message = str(raised.value)
    assert path in message, message
    assert "tensor 'char_emb_layer.embedding.weight' stride is -4" in message


# === HDF5 datasets a weight file never holds (issue 24, class 5) ===

W_0 = "RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"


def _weights_with(tmp_path, name, make):
    import h5py

    with h5py.File(WEIGHTS, "r") as f:
        values = f[name][...]
    return hostile_files.hdf5_with_values(
        WEIGHTS, str(tmp_path / "weights.hdf5"), name, make(values)
    )


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda v: v.astype("complex64") + 1j, "holds complex64 values"),
        (lambda v: v.astype("S8"), "holds |S8 values"),
        (lambda v: v.astype("U8").astype(object), "holds object values"),
    ],
    ids=["complex", "bytes", "strings"],
)
def test_weights_that_are_not_real_numbers_are_refused(tmp_path, make, words):
    weights = _weights_with(tmp_path, "char_embed", make)
    with pytest.raises(WeightFileError) as raised:
        keras_elmo.load_bilm(OPTIONS, weights)
    message = str(raised.value)
    assert f"{weights}: dataset 'char_embed' {words}" in message, message


@pytest.mark.parametrize("bad", [NAN, float("inf"), -float("inf")])
@pytest.mark.parametrize("name", ["char_embed", W_0])
def test_non_finite_weights_are_refused_by_dataset_name(tmp_path, bad, name):
    def make(values):
        values = values.copy()
        values.flat[7] = bad
        return values

    weights = _weights_with(tmp_path, name, make)
    with pytest.raises(WeightFileError) as raised:
        keras_elmo.load_bilm(OPTIONS, weights)
    message = str(raised.value)
    assert f"dataset {name!r} holds 1 NaN or infinite values" in message


@pytest.mark.parametrize(
    "kind, words",
    [
        ("external", "'char_embed' is an external link to 'char_embed'"),
        ("soft", "'char_embed' is a soft link to '/elsewhere'"),
        ("virtual", "dataset 'char_embed' is virtual"),
        ("external-storage", "'char_embed' is stored in external files"),
    ],
)
def test_links_and_datasets_of_other_files_are_refused(tmp_path, kind, words):
    weights = hostile_files.hdf5_with_link(
        WEIGHTS, str(tmp_path / "weights.hdf5"), "char_embed", kind
    )
    with pytest.raises(WeightFileError) as raised:
        keras_elmo.load_bilm(OPTIONS, weights)
    message = str(raised.value)
    assert words in message and weights in message, message


def test_a_group_linked_from_another_file_is_refused(tmp_path):
    weights = hostile_files.hdf5_with_link(
        WEIGHTS, str(tmp_path / "weights.hdf5"), "CNN/W_cnn_0", "external"
    )
    with pytest.raises(WeightFileError, match="'CNN/W_cnn_0' is an external"):
        keras_elmo.load_bilm(OPTIONS, weights)
    weights = hostile_files.hdf5_with_link(
        WEIGHTS, str(tmp_path / "group.hdf5"), "CNN/W_cnn_0", "external-group"
    )
    with pytest.raises(WeightFileError, match="'CNN' is an external link"):
        keras_elmo.load_bilm(OPTIONS, weights)


def test_word_table_declaring_2_34_rows_is_refused_before_allocation(
    tmp_path, weights_made
):
    source = os.path.join(WORDS, "lm_weights.hdf5")
    weights = hostile_files.hdf5_with_declared_shapes(
        source, str(tmp_path / "weights.hdf5"), {"embedding": (2**34, 4)}
    )
    options = hostile_files.edited_json(
        os.path.join(WORDS, "options.json"),
        str(tmp_path / "options.json"),
        {"n_tokens_vocab": None},
    )
    with pytest.raises(WeightFileError) as raised:
        keras_elmo.load_bilm(options, weights)
    assert weights_made == []
    message = str(raised.value)
    assert "Dataset 'embedding'" in message and "(17179869184, 4)" in message


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"lstm": {"dim": ' + "9" * 6000 + "}}", "an integer of 6,000 digits"),
        ("[" * 100_000 + "]" * 100_000, "more than 100 levels deep"),
    ],
    ids=["6000-digits", "deep"],
)
def test_options_json_numbers_and_nesting_are_bounded(tmp_path, text, words):
    options = tmp_path / "options.json"
    options.write_text(text)
    with pytest.raises(WeightFileError) as raised:
        keras_elmo.load_bilm(str(options), WEIGHTS)
    message = str(raised.value)
    assert f"Options file {options}" in message and words in message, message
