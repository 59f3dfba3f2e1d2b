"""`load_bilm(source, **arguments)`: for every kind of source and every
argument, frozen or trainable, the biLM holds exactly the saved weights
(and gives the saved biLM's numbers where the argument does not change
them), or the call is refused by a `KerasElmoError` naming the argument.

A tagger holds its biLM frozen unless `fine_tune=True`: the override
once copied only *trainable* weights, so a frozen biLM came back with
random ones and nothing said so.
"""

import os

import keras
import numpy as np
import pytest

import keras_elmo
from elmo_core.errors import KerasElmoError
from keras_elmo.layers.bilm_weights import learned_weights
from tests.helpers import COMPAT_RUN
from tests.helpers import HALF_POLICIES
from tests.helpers import MODEL_DIR
from tests.helpers import OPTIONS
from tests.helpers import ROOT
from tests.helpers import WEIGHTS
from tests.model_server import serve_fixture_as

MANY_LANGS = os.path.join(
    ROOT, "tests", "fixtures", "elmo_for_many_langs", "word_model"
)
SENTENCES = [["The", "cat", "sat", "."], ["Hello", "world"], ["ELMo"]]

# Arguments that leave the numbers as saved (the stateful biLM's first
# batch starts from zeros; dropout is off outside training).
SAME_NUMBERS = [
    {"dropout": 0.1},
    {"stateful": True},
    {"stateful": True, "max_batch_size": 64},
    {"max_batch_size": 7},
    {"trainable": False},
    {"trainable": True},
    {"name": "another_name"},
    {"deduplicate_tokens": False},
    {"dropout": 0.3, "stateful": True, "trainable": False},
]
# The numbers are checked for these (a new biLM traces its call anew);
# the weights for all.
NUMBERS_CHECKED = SAME_NUMBERS[1:3] + SAME_NUMBERS[-1:]
# Arguments that change what the biLM computes, not its weights.
SAME_WEIGHTS = [
    {"cell_clip": 0.5},
    {"proj_clip": 0.25},
    {"dtype": HALF_POLICIES[-1]},
    {"use_skip_connections": True},
]
# Arguments that change a size the weights fix: refused by name, with
# the first weight they no longer fit.
SIZES = [
    {"units": 32},
    {"units": 128},
    {"projection_dim": 8},
    {"num_layers": 3},
    {"num_layers": 1},
    {"num_highway_layers": 0},
    {"char_embedding_dim": 8},
    {"filters": [[1, 4]]},
    {"units": 128, "dropout": 0.1},
]
# Arguments no BiLM takes, or values it refuses.
WRONG = [
    {"dtype": "bogus"},
    {"bogus": 1},
    {"dropout": 2.0},
    {"max_batch_size": 0, "stateful": True},
    {"units": "wide"},
]


def _tagger(path, fine_tune):
    tokens = keras.Input(shape=(None,), dtype="string")
    embedding = keras_elmo.ELMoEmbedding(
        keras_elmo.load_bilm(MODEL_DIR), fine_tune=fine_tune
    )
    keras.Model(tokens, embedding(tokens)).save(path)
    return path


def _bare(path, trainable):
    bilm = keras_elmo.load_bilm(MODEL_DIR, trainable=trainable)
    ids = keras.Input(shape=(None, 50), dtype="int32")
    keras.Model(ids, bilm(ids)["layer_outputs"]).save(path)
    return path


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """kind -> (load_bilm's positional arguments, reference biLM)."""
    folder = tmp_path_factory.mktemp("sources")
    fixture = keras_elmo.load_bilm(OPTIONS, WEIGHTS)
    kinds = {
        "official files": ((OPTIONS, WEIGHTS), fixture),
        "export folder": ((MODEL_DIR,), fixture),
        "run folder": ((COMPAT_RUN,), None),
        "ELMoForManyLangs folder": ((MANY_LANGS,), None),
    }
    for frozen in (True, False):
        word = "frozen" if frozen else "trainable"
        tagger = _tagger(str(folder / f"tagger_{word}.keras"), not frozen)
        bare = _bare(str(folder / f"bilm_{word}.keras"), not frozen)
        kinds[f".keras tagger, {word} biLM"] = ((tagger,), fixture)
        kinds[f".keras biLM, {word}"] = ((bare,), fixture)
    # Each reference read without arguments by its own reader.
    return {
        kind: (source, bilm or keras_elmo.load_bilm(*source))
        for kind, (source, bilm) in kinds.items()
    }


def _numbers(bilm):
    out = bilm(bilm.encoder.batch_to_inputs(SENTENCES))
    return np.stack(
        [keras.ops.convert_to_numpy(x) for x in out["layer_outputs"]]
    )


def _weights(bilm):
    return [keras.ops.convert_to_numpy(w) for w in learned_weights(bilm)]


def _applies(reference, arguments):
    """Whether every argument is one of this biLM's (a word-input biLM
    has no character CNN)."""
    config = reference.get_config()
    return all(name in config for name in arguments if name != "name")


def _case_id(arguments):
    return ",".join(f"{k}={v}" for k, v in arguments.items())


KINDS = [
    "official files",
    "export folder",
    "run folder",
    "ELMoForManyLangs folder",
    ".keras tagger, frozen biLM",
    ".keras tagger, trainable biLM",
    ".keras biLM, frozen",
    ".keras biLM, trainable",
]


@pytest.mark.parametrize("kind", KINDS)
def test_every_argument_keeps_the_saved_weights_or_is_refused(sources, kind):
    source, reference = sources[kind]
    want_numbers, want_weights = _numbers(reference), _weights(reference)
    for arguments in SAME_NUMBERS + SAME_WEIGHTS:
        if not _applies(reference, arguments):
            continue
        bilm = keras_elmo.load_bilm(*source, **arguments)
        got = _weights(bilm)
        assert len(got) == len(want_weights), (kind, arguments)
        for a, b in zip(got, want_weights):
            np.testing.assert_array_equal(a, b, err_msg=f"{kind} {arguments}")
        for name, value in arguments.items():
            assert bilm.get_config()[name] in (value, {"name": value}) or (
                name == "dtype"
            ), (kind, name)
        if arguments in NUMBERS_CHECKED:
            np.testing.assert_allclose(
                _numbers(bilm),
                want_numbers,
                atol=1e-6,
                err_msg=f"{kind} {arguments}",
            )
    for arguments in SIZES:
        if not _applies(reference, arguments):
            continue
        if all(reference.get_config()[k] == v for k, v in arguments.items()):
            continue  # the sizes it has
        with pytest.raises(KerasElmoError) as raised:
            keras_elmo.load_bilm(*source, **arguments)
        error = raised.value
        changed = [
            k for k, v in arguments.items() if reference.get_config()[k] != v
        ]
        assert error.argument in changed, (kind, arguments, str(error))
        # The first weight it no longer fits, or (for sizes no BiLM of
        # the others can have) why it is no BiLM at all.
        message = str(error)
        assert "there but" in message or "not a valid" in message, message
    for arguments in WRONG:
        with pytest.raises(KerasElmoError) as raised:
            keras_elmo.load_bilm(*source, **arguments)
        assert raised.value.argument in arguments, (kind, arguments)


def test_a_preset_name_takes_the_same_arguments(tmp_path, monkeypatch):
    with serve_fixture_as(monkeypatch, tmp_path / "cache", "tiny"):
        reference = keras_elmo.load_bilm(MODEL_DIR)
        bilm = keras_elmo.load_bilm("tiny", stateful=True, dropout=0.1)
        np.testing.assert_allclose(
            _numbers(bilm), _numbers(reference), atol=1e-6
        )
        with pytest.raises(KerasElmoError) as raised:
            keras_elmo.load_bilm("tiny", units=32)
        assert raised.value.argument == "units"
        with pytest.raises(KerasElmoError) as raised:
            keras_elmo.load_bilm("tiny", dtype="bogus")
        assert raised.value.argument == "dtype"
