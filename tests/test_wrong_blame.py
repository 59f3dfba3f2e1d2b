"""Sources blamed for what they are (issue 24, class 6): a URL of another
scheme, a pair string missing a part, a folder of two exports, an exported
runtime file, and paths that are not files, each with its own message
from `load_bilm` and from the command line (exit status 2, the argument
named, inputs byte-identical)."""

import hashlib
import os
import re
import shutil

import pytest

import keras_elmo
from elmo_core.errors import KerasElmoError
from keras_elmo_cli import main
from tests.helpers import MODEL_DIR
from tests.helpers import OPTIONS
from tests.helpers import WEIGHTS
from tests.hostile_files import special_paths


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Folders of several exports, exported model files and paths that
    are not files, by name."""
    root = tmp_path_factory.mktemp("wrong_blame")
    two = root / "two_pairs"
    two.mkdir()
    for prefix in ("a", "b"):
        shutil.copy(OPTIONS, two / f"{prefix}_options.json")
        shutil.copy(WEIGHTS, two / f"{prefix}_weights.hdf5")
    exports = root / "two_exports"
    for name in ("first", "second"):
        (exports / name).mkdir(parents=True)
        shutil.copy(OPTIONS, exports / name / "options.json")
        shutil.copy(WEIGHTS, exports / name / "weights.hdf5")
    # Exported model files (their content does not matter: the name says
    # what they are before anything reads them).
    for name in ("model.onnx", "model.tflite"):
        (root / name).write_bytes(b"not read")
    (root / "special").mkdir()
    paths = special_paths(str(root / "special"))
    pipe = str(root / "special" / "pipe.keras")
    os.mkfifo(pipe)
    return dict(
        root=str(root),
        two_pairs=str(two),
        two_exports=str(exports),
        onnx=str(root / "model.onnx"),
        tflite=str(root / "model.tflite"),
        loop=paths["loop"],
        broken_link=paths["broken_link"],
        fifo=paths["fifo"],
        pipe_keras=pipe,
    )


# (id, source given to load_bilm / --model, words of the message)
CASES = [
    ("ftp", "ftp://example.org/elmo_weights.hdf5",
     ["'ftp'", "http:// and https://"]),
    ("s3", "s3://bucket/elmo", ["unsupported scheme 's3'"]),
    ("data", "data:application/json,[1]", ["unsupported scheme 'data'"]),
    ("file", "file:///tmp/options.json", ["unsupported scheme 'file'"]),
    ("pair-without-weights", f"{OPTIONS},",
     ["no weights file after the comma", "OPTIONS.json,WEIGHTS.hdf5"]),
    ("pair-without-options", f",{WEIGHTS}",
     ["no options file before the comma"]),
    ("two-pairs", "{two_pairs}",
     ["holds more than one export", "a_options.json, b_options.json",
      "a_weights.hdf5, b_weights.hdf5", "Which one?"]),
    ("two-exports", "{two_exports}",
     ["holds 2 biLM folders: first, second", "Which one?"]),
    ("onnx", "{onnx}",
     ["is an exported ONNX model", "elmo_core.runtime.ONNXBiLM("]),
    ("tflite", "{tflite}",
     ["is an exported LiteRT model", "elmo_core.runtime.LiteRTBiLM("]),
    ("loop", "{loop}", ["is a symbolic link loop"]),
    ("broken-link", "{broken_link}", ["is a broken symbolic link"]),
    ("fifo", "{fifo}", ["is a pipe (FIFO)"]),
    ("fifo-named-keras", "{pipe_keras}", ["is a pipe (FIFO)"]),
]  # fmt: skip


@pytest.mark.parametrize(
    "source, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_load_bilm_names_what_the_source_is(folders, source, words):
    source = source.format(**folders)
    with pytest.raises(KerasElmoError) as raised:
        keras_elmo.load_bilm(source, progress=False)
    message = str(raised.value)
    for word in words:
        assert word in message, message
    assert "not found" not in message and "found neither" not in message
    # The library speaks Python: the argument, never the command's flag.
    assert raised.value.argument == "source", message
    assert "`source`" in message and "--model" not in message, message


def _digests(folder):
    found = {}
    for directory, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    found[path] = hashlib.sha256(f.read()).hexdigest()
    return found


@pytest.mark.parametrize(
    "source, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_command_line_names_what_the_source_is(
    folders, tmp_path, capsys, source, words
):
    source = source.format(**folders)
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("the cat sat\n", encoding="utf-8")
    before = _digests(folders["root"])
    argv = ["export-onnx", "--model", source]
    if source.endswith((".onnx", ".tflite")):
        # embed runs an exported file itself; export-onnx cannot.
        words = ["is an exported"]
    assert main([*argv, "--output", str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-elmo export-onnx: error: "), err
    for word in words:
        assert word in err, err
    assert "Traceback" not in err
    assert "--model" in err and "`model`" not in err, err
    assert _digests(folders["root"]) == before
    assert not os.path.exists(tmp_path / "out.onnx")


def test_download_names_an_unsupported_scheme(capsys):
    assert main(["download", "ftp://example.org/options.json"]) == 2
    err = capsys.readouterr().err
    assert "unsupported scheme 'ftp'" in err and "is a local path" not in err


def test_a_folder_of_one_export_still_loads(tmp_path):
    # The several-exports rule names a choice only when there is one.
    shutil.copytree(MODEL_DIR, tmp_path / "one")
    assert keras_elmo.load_bilm(str(tmp_path / "one")).count_params() > 0


# === A resumed run's damaged config.json is blamed on the file ===


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("mixed_precision", "fp8", "`mixed_precision` must be one of"),
        ("dropout", float("nan"), "`dropout` must be a number in [0, 1)"),
        ("seed", -1, "`seed` must be an integer >= 0"),
    ],
)
def test_a_damaged_config_of_a_resumed_run_is_blamed_on_the_file(
    tmp_path, capsys, key, value, words
):
    import json

    from elmo_core.settings.training_config import TrainingConfig
    from keras_elmo.training.run_directory import RunDirectory
    from tests.helpers import FIXTURES

    run = tmp_path / "run"
    shutil.copytree(
        os.path.join(os.path.dirname(FIXTURES), "compat", "run"), run
    )
    config = run / "config.json"
    values = json.loads(config.read_text())
    valid = TrainingConfig.from_json(dict(values))
    values[key] = value
    config.write_text(json.dumps(values))
    data = os.path.join(FIXTURES, "train", "data.txt")
    argv = ["train", "--train", data, "--output", str(run), "--steps", "3"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{config}: {words}" in err, err
    assert "The file is damaged" in err
    flag = "--" + key.replace("_", "-")
    assert flag not in err  # the flag was not given: never blamed
    # The Python resume check blames the file too.
    match = re.escape(f"config.json: {words}")
    with pytest.raises(KerasElmoError, match=match) as e:
        RunDirectory(str(run)).check_same_run(valid)
    assert e.value.argument is None


def test_a_missing_weight_file_is_blamed_on_the_weights(tmp_path, capsys):
    missing = str(tmp_path / "missing_weights.hdf5")
    with pytest.raises(KerasElmoError, match="Weight file not found") as e:
        keras_elmo.load_bilm(OPTIONS, weights=missing)
    assert e.value.argument == "weights"
    sentences = tmp_path / "in.txt"
    sentences.write_text("the cat\n", encoding="utf-8")
    output = str(tmp_path / "o.hdf5")
    argv = ["embed", "--options", OPTIONS, "--weights", missing,
            "--input", str(sentences), "--output", output]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("keras-elmo embed: error: --weights: Weight file")
