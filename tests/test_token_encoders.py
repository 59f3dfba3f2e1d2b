"""The token-encoder contract: a new kind is one registered class, and
`BiLM` builds it, saves it and reads old configs without naming its
arguments."""

import keras
import numpy as np
import pytest
from keras import ops

from elmo_core.errors import KerasElmoError
from keras_elmo.layers import BiLM
from keras_elmo.layers.token_encoders import TOKEN_ENCODERS
from keras_elmo.layers.token_encoders import TokenEncoder
from keras_elmo.layers.token_encoders import get_token_encoder
from keras_elmo.layers.token_encoders import register_token_encoder


class ToyEncoder(TokenEncoder):
    """One id a token, in a table of `num_buckets` rows (0 is padding)."""

    name = "toy"
    aliases = ("toy_v0",)
    input_name = "toy_ids"

    def __init__(self, projection_dim, dtype, num_buckets=5):
        super().__init__(projection_dim, dtype)
        self.num_buckets = int(num_buckets)
        self.toy_table = keras.layers.Embedding(
            self.num_buckets, projection_dim, dtype=dtype, name="toy_table"
        )

    def layers(self):
        return {"toy_table": self.toy_table}

    def config(self):
        return {"num_buckets": self.num_buckets}

    def build(self):
        self.toy_table.build((None, None))

    def check(self, ids):
        return ids

    def mask(self, ids):
        return ops.not_equal(ids, 0)

    def boundaries(self):
        return np.int32(1), np.int32(2)

    def encode(self, ids):
        return self.toy_table(ops.cast(ids, "int32"))


@pytest.fixture
def toy():
    register_token_encoder(ToyEncoder)
    yield ToyEncoder
    TOKEN_ENCODERS.pop("toy")


def test_a_fourth_kind_needs_no_change_to_bilm(toy):
    bilm = BiLM(token_encoder="toy", num_buckets=7, units=8, projection_dim=4)
    ids = np.array([[3, 4, 0], [5, 0, 0]], "int32")
    out = bilm(ids)
    assert out["mask"].numpy().tolist() == [
        [True, True, False],
        [True, False, False],
    ]
    assert out["layer_outputs"][0].shape == (2, 3, 8)
    # Its sublayer is the BiLM's own, its argument in the BiLM's config.
    assert bilm.toy_table is bilm.encoder.toy_table
    assert any("toy_table" in w.path for w in bilm.weights)
    config = bilm.get_config()
    assert config["num_buckets"] == 7 and config["token_encoder"] == "toy"
    again = BiLM.from_config(config)
    again.build()
    again.set_weights(bilm.get_weights())
    np.testing.assert_array_equal(
        np.asarray(again({"toy_ids": ids})["layer_outputs"][-1]),
        np.asarray(out["layer_outputs"][-1]),
    )
    # An older name of the kind still reads.
    assert BiLM.from_config(dict(config, token_encoder="toy_v0")).num_buckets


def test_arguments_of_another_kind_are_refused(toy):
    with pytest.raises(KerasElmoError, match="`num_buckets` is an argument"):
        BiLM(units=8, projection_dim=4, num_buckets=3)
    with pytest.raises(KerasElmoError, match="token_encoder 'characters'"):
        BiLM(token_encoder="toy", units=8, projection_dim=4, filters=[[1, 2]])


def test_the_contract_and_the_registry():
    assert get_token_encoder("elmoformanylangs").name == "elmo_for_many_langs"
    with pytest.raises(KerasElmoError, match="must be one of"):
        get_token_encoder("bytes")
    with pytest.raises(KerasElmoError, match="TokenEncoder subclass"):
        register_token_encoder(object)
    base = TokenEncoder(4, "float32")
    for method in ("layers", "config", "build", "boundaries"):
        with pytest.raises(NotImplementedError):
            getattr(base, method)()
    assert TOKEN_ENCODERS["characters"].arguments()[:2] == (
        "filters",
        "char_embedding_dim",
    )
