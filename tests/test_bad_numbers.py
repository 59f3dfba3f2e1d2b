"""Numbers that are not numbers, and arguments of the wrong type (issue 18,
section 2): each refused with the argument named and what it received,
never a raw int() / float() / NumPy error, never another argument blamed.
"""

import math

import numpy as np
import pytest

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_fraction
from elmo_core.errors import check_integer
from elmo_core.errors import check_number
from elmo_core.errors import check_numbers
from elmo_core.errors import check_strings
from elmo_core.ids.vocabulary import Vocabulary
from elmo_core.settings.training_config import TrainingConfig
from keras_elmo.export.portable import scalar_mix_layer
from keras_elmo.layers import BiLM
from keras_elmo.layers import ELMoEmbedding
from keras_elmo.layers import ProjectedLSTM
from keras_elmo.layers import ScalarMix
from keras_elmo.models import ELMoLanguageModel
from tests.helpers import tiny_bilm_kwargs

NAN, INF = float("nan"), float("inf")
SPECIALS = ["<S>", "</S>", "<UNK>"]


@pytest.fixture(scope="module")
def bilm():
    return BiLM(**tiny_bilm_kwargs(num_layers=1))


@pytest.fixture(scope="module")
def word_bilm():
    return BiLM(
        token_encoder="words", vocabulary_size=4, units=8, projection_dim=4
    )


def _config(**changes):
    values = dict(train_files=["data.txt"], bilm={}, vocabulary_size=10)
    return TrainingConfig(**dict(values, **changes))


# (id, call(bilm, word_bilm), words of the message)
CASES = [
    # --- ELMoEmbedding ---
    ("embedding-representations-str",
     lambda b, w: ELMoEmbedding(b, num_output_representations="2"),
     ["`num_output_representations` must be an integer",
      "Received: num_output_representations='2'."]),
    ("embedding-representations-fraction",
     lambda b, w: ELMoEmbedding(b, num_output_representations=1.5),
     ["`num_output_representations` must be an integer",
      "Received: num_output_representations=1.5."]),
    ("embedding-dropout-none", lambda b, w: ELMoEmbedding(b, dropout=None),
     ["`dropout` must be a number in [0, 1). Received: dropout=None."]),
    ("embedding-dropout-nan", lambda b, w: ELMoEmbedding(b, dropout=NAN),
     ["`dropout` must be a number in [0, 1). Received: dropout=nan."]),
    ("embedding-l2-inf", lambda b, w: ELMoEmbedding(b, l2_coef=INF),
     ["`l2_coef` must be a finite number", "Received: l2_coef=inf."]),
    ("embedding-mix-nan",
     lambda b, w: ELMoEmbedding(b, scalar_mix_weights=[NAN, 0, 0]),
     ["`scalar_mix_weights`[0] must be a finite number",
      "Received: scalar_mix_weights=[nan, 0, 0]."]),
    ("embedding-mix-str",
     lambda b, w: ELMoEmbedding(b, scalar_mix_weights="0,0,0"),
     ["`scalar_mix_weights` must be a list of numbers",
      "Received: scalar_mix_weights='0,0,0'."]),
    ("embedding-mix-count",
     lambda b, w: ELMoEmbedding(b, scalar_mix_weights=[0, 0, 0]),
     ["`scalar_mix_weights` must be 2 numbers, one per biLM layer",
      "Received: scalar_mix_weights=[0, 0, 0]."]),
    ("embedding-layer-norm-str",
     lambda b, w: ELMoEmbedding(b, do_layer_norm="no"),
     ["`do_layer_norm` must be True or False. Received: do_layer_norm='no'."]),
    ("embedding-vocabulary-int", lambda b, w: ELMoEmbedding(w, vocabulary=5),
     ["the vocabulary must be a list of strings. Received: 5."]),
    ("embedding-vocabulary-ints",
     lambda b, w: ELMoEmbedding(w, vocabulary=[*SPECIALS, 7]),
     ["the vocabulary[3] must be a string. Received: 7."]),
    # --- ScalarMix ---
    ("mix-weights-nan", lambda b, w: ScalarMix(initial_scalar_weights=[NAN]),
     ["`initial_scalar_weights`[0] must be a finite number",
      "Received: initial_scalar_weights=[nan]."]),
    ("mix-weights-none-entry",
     lambda b, w: ScalarMix(initial_scalar_weights=[0, None]),
     ["`initial_scalar_weights`[1] must be a finite number",
      "Received: initial_scalar_weights=[0, None]."]),
    ("mix-l2-str", lambda b, w: ScalarMix(l2_coef="0.1"),
     ["`l2_coef` must be a finite number", "Received: l2_coef='0.1'."]),
    # --- BiLM ---
    ("bilm-units-str", lambda b, w: BiLM(**tiny_bilm_kwargs(units="16")),
     ["`units` must be an integer >= 1. Received: units='16'."]),
    ("bilm-layers-nan", lambda b, w: BiLM(**tiny_bilm_kwargs(num_layers=NAN)),
     ["`num_layers` must be an integer >= 1 and <= 256.",
      "Received: num_layers=nan."]),
    ("bilm-dropout-none", lambda b, w: BiLM(dropout=None),
     ["`dropout` must be a number in [0, 1). Received: dropout=None."]),
    ("bilm-cell-clip-nan", lambda b, w: BiLM(cell_clip=NAN),
     ["`cell_clip` must be a finite number", "Received: cell_clip=nan."]),
    ("lstm-units-str", lambda b, w: ProjectedLSTM(units="8"),
     ["`units` must be an integer >= 1. Received: units='8'."]),
    ("lstm-cell-clip-nan", lambda b, w: ProjectedLSTM(8, cell_clip=NAN),
     ["`cell_clip` must be a finite number", "Received: cell_clip=nan."]),
    ("lm-vocabulary-size-str",
     lambda b, w: ELMoLanguageModel(b, vocabulary_size="10"),
     ["`vocabulary_size` must be an integer",
      "Received: vocabulary_size='10'."]),
    ("lm-dropout-nan",
     lambda b, w: ELMoLanguageModel(b, vocabulary_size=10, dropout=NAN),
     ["`dropout` must be a number in [0, 1). Received: dropout=nan."]),
    # --- TrainingConfig ---
    ("config-dropout-nan", lambda b, w: _config(dropout=NAN),
     ["`dropout` must be a number in [0, 1). Received: dropout=nan."]),
    ("config-learning-rate-inf", lambda b, w: _config(learning_rate=INF),
     ["`learning_rate` must be a finite number"]),
    ("config-learning-rate-str", lambda b, w: _config(learning_rate="0.1"),
     ["`learning_rate` must be a finite number",
      "Received: learning_rate='0.1'."]),
    ("config-clip-nan", lambda b, w: _config(clip_norm=NAN),
     ["`clip_norm` must be a finite number", "Received: clip_norm=nan."]),
    ("config-accumulator-none",
     lambda b, w: _config(initial_accumulator_value=None),
     ["`initial_accumulator_value` must be a finite number",
      "Received: initial_accumulator_value=None."]),
    ("config-seed-str", lambda b, w: _config(seed="1"),
     ["`seed` must be an integer >= 0", "Received: seed='1'."]),
    ("config-units-billion",
     lambda b, w: _config(bilm={"units": 10**9, "projection_dim": 128}),
     ["`units` 1000000000", "GiB to train", "this machine has"]),
    ("config-cell-clip-nan", lambda b, w: _config(bilm={"cell_clip": NAN}),
     ["`cell_clip` must be a finite number", "Received: cell_clip=nan."]),
    # --- the export's scalar mix ---
    ("export-mix-nan", lambda b, w: scalar_mix_layer([NAN, 0, 0], 3, "ONNX"),
     ["ONNX export: `scalar_mix`[0] must be a finite number",
      "Received: scalar_mix=[nan, 0, 0]."]),
    ("export-mix-str", lambda b, w: scalar_mix_layer("0,0", 3, "ONNX"),
     ["ONNX export: `scalar_mix` must be a list of numbers",
      "Received: scalar_mix='0,0'."]),
    # --- Vocabulary ---
    ("vocabulary-int", lambda b, w: Vocabulary(5),
     ["`tokens` must be a list of strings.", "Received: tokens=5."]),
    ("vocabulary-bytes-token",
     lambda b, w: Vocabulary([*SPECIALS, b"cat"]),
     ["`tokens`[3] must be a string.", "Received: tokens=[", "b'cat']."]),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_numbers_and_types_name_the_argument(bilm, word_bilm, case):
    name, call, words = case
    with pytest.raises(KerasElmoError) as raised:
        call(bilm, word_bilm)
    message = str(raised.value)
    for word in words:
        assert word in message, message
    assert "--" not in message, message  # Python names, not flags
    if message.startswith("`"):  # about one argument: it carries its name
        assert raised.value.argument == message[1:].split("`")[0], message
    if not name.startswith("mix-"):  # only ScalarMix itself says this
        assert "initial_scalar_weights" not in message, message


def test_each_check_accepts_what_it_should():
    assert check_integer(np.int64(3), "n") == 3
    assert check_integer(4.0, "n") == 4  # JSON may write 4.0
    assert check_number(np.float32(0.5), "x") == 0.5
    assert check_fraction(0, "p") == 0.0
    assert check_numbers(np.zeros(3), "w", count=3) == [0.0, 0.0, 0.0]
    assert check_strings(("a", "b"), "t") == ["a", "b"]
    assert check_integer(10**400, "n") == 10**400  # beyond float's range
    for value in (True, "1", None, NAN, INF, -INF, [1]):
        with pytest.raises(KerasElmoError):
            check_number(value, "x")
    with pytest.raises(
        KerasElmoError, match="must be an integer >= 1 and <= 5"
    ):
        check_integer(6, "n", minimum=1, maximum=5)
    with pytest.raises(KerasElmoError, match="must be a finite number > 0"):
        check_number(0, "x", minimum=0, above=True)
    assert math.isfinite(check_number(1e308, "x"))
