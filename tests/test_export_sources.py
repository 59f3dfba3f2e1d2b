"""The export functions take any biLM source, as the commands do
(keras_elmo/export/model_source.py, deploy.py, run_weights.py,
savedmodel.py): their arguments are checked before the source is read,
the output against every file the source reads before any work, and
their errors name the library's arguments (the commands' flags are
translated from them: tests/test_bad_input_cli.py,
tests/test_silent_mistakes.py). What is written is checked against the
reference outputs by tests/test_export*.py and the doctests."""

import shutil

import pytest

import keras_elmo
from elmo_core.errors import KerasElmoError
from elmo_core.errors import OutputPathError
from keras_elmo.export import export_litert
from keras_elmo.export import export_onnx
from keras_elmo.export import export_savedmodel
from keras_elmo.export import export_weights
from tests.helpers import COMPAT_RUN
from tests.helpers import FIXTURES
from tests.helpers import MODEL_DIR
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS

WORDS = FIXTURES.replace("bilm-tf", "bilm-tf-words") + "/model"
# No such file, and no pretrained model name: reading it would fail.
NO_SOURCE = "no-such-model"


def _refused(call, argument):
    with pytest.raises(KerasElmoError) as raised:
        call()
    assert raised.value.argument == argument, raised.value
    return str(raised.value)


def test_the_output_is_checked_against_the_files_the_source_reads():
    for export in (export_onnx, export_litert):
        message = _refused(
            lambda: export(OPTIONS, WEIGHTS, weights=WEIGHTS), "output"
        )
        assert "`output` is also an input" in message
        _refused(lambda: export(MODEL_DIR, WEIGHTS), "output")
    _refused(lambda: export_savedmodel(MODEL_DIR, MODEL_DIR), "output")
    _refused(lambda: export_weights(COMPAT_RUN, COMPAT_RUN), "output")


def test_arguments_are_checked_before_the_source_is_read(tmp_path):
    out = str(tmp_path / "m")
    cases = [
        (lambda: export_onnx(NO_SOURCE, out, precision="float16"), "precision"),
        (lambda: export_onnx(NO_SOURCE, out, opset=99), "opset"),
        (lambda: export_litert(NO_SOURCE, out, precision="int4"), "precision"),
        (
            lambda: export_savedmodel(NO_SOURCE, out, max_batch_tokens=0),
            "max_batch_tokens",
        ),
    ]
    for call, argument in cases:
        _refused(call, argument)
    # The same source is refused, as a source, once the arguments are good.
    _refused(lambda: export_onnx(NO_SOURCE, out), "model")


def test_per_channel_needs_int8(tmp_path):
    message = _refused(
        lambda: export_onnx(
            MODEL_DIR, str(tmp_path / "m.onnx"), per_channel=True
        ),
        "per_channel",
    )
    assert "with `precision` 'float32' there are none" in message


def test_weights_go_with_an_options_file_only(tmp_path):
    bilm = keras_elmo.load_bilm(MODEL_DIR)
    for export in (export_onnx, export_litert, export_savedmodel):
        _refused(
            lambda: export(bilm, str(tmp_path / "m"), weights=WEIGHTS),
            "weights",
        )
    message = _refused(
        lambda: export_savedmodel("not a model".split(), str(tmp_path / "s")),
        "model",
    )
    assert "a keras_elmo.layers.BiLM" in message


def test_export_weights_takes_a_run(tmp_path):
    message = _refused(
        lambda: export_weights(MODEL_DIR, str(tmp_path / "e")), "model"
    )
    assert "is not a training run directory" in message


def test_the_savedmodel_vocabularies(tmp_path):
    out = str(tmp_path / "saved")
    # A biLM that reads characters has no vocabulary of its own.
    message = _refused(
        lambda: export_savedmodel(MODEL_DIR, out, vocabulary=["<S>", "</S>"]),
        "vocabulary",
    )
    assert "is for word-input biLMs" in message and "`cache_vocab`" in message
    # A word-input biLM's table is its cache.
    _refused(
        lambda: export_savedmodel(WORDS, out, cache_vocab=["a"]), "cache_vocab"
    )
    # A word-input biLM without its vocabulary file.
    alone = tmp_path / "alone"
    alone.mkdir()
    for name in ("options.json", "lm_weights.hdf5"):
        shutil.copy(f"{WORDS}/{name}", alone / name)
    message = _refused(lambda: export_savedmodel(str(alone), out), "vocabulary")
    assert "no vocabulary was found for it" in message


def test_a_vocabulary_given_with_a_character_bilm_object_is_the_cache(
    tmp_path,
):
    # Its former meaning, kept with a warning. (The output is not empty:
    # nothing is exported.)
    (tmp_path / "taken").write_text("", encoding="utf-8")
    bilm = keras_elmo.load_bilm(MODEL_DIR)
    with pytest.warns(DeprecationWarning, match="cache_vocab="):
        with pytest.raises(OutputPathError):
            export_savedmodel(bilm, str(tmp_path), vocabulary=["the", "cat"])
    _refused(
        lambda: export_savedmodel(
            bilm, str(tmp_path), vocabulary=["the"], cache_vocab=["the"]
        ),
        "vocabulary",
    )
