"""No silent mistakes (issue 18, sections 2 and 3).

A flag that does not apply to the model kind, runtime, optimizer or
strategy is an error naming it; absurd or non-finite size and number flags
are clear errors; `ScalarMix(layer_norm_rule="allennlp")` refuses layers
without boundaries; `--validate-every` must be a multiple of
`--checkpoint-every`; `--init-from` names a mismatch of token encoders;
two runs with the same seed give identical weights. Each refused command
exits 2 with one `keras-elmo CMD: error:` line, which names flags (the
library's Python names translated), and changes no file.
"""

import hashlib
import os

import numpy as np
import pytest

from elmo_core.errors import KerasElmoError
from keras_elmo.layers import ScalarMix
from keras_elmo_cli import main
from tests.helpers import FIXTURES
from tests.helpers import OPTIONS
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import WEIGHTS

DATA = os.path.join(FIXTURES, "train", "data.txt")
VOCAB = os.path.join(FIXTURES, "train", "vocab.txt")
WORDS = os.path.join(os.path.dirname(FIXTURES), "bilm-tf-words", "model")
WORD_SOURCE = (
    f"{WORDS}/options.json,{WORDS}/lm_weights.hdf5"  # a word-input biLM
)
SOURCE = ["--options", OPTIONS, "--weights", WEIGHTS]
TINY = [*TINY_TRAIN_FLAGS, "--tokens-per-batch", "64", "--num-sampled", "8"]
TRAIN = ["train", "--train", DATA, "--vocab", VOCAB, "--quiet", *TINY]
# Without the char CNN flags (a word-input run refuses them).
LSTM_ONLY = ["--units", "16", "--projection-dim", "8", "--max-length", "30"]
TRAIN_WORDS = [*TRAIN[:6], *LSTM_ONLY, *TINY[-4:]]

# (id, argv with {out} for the output folder, words of the error line)
CASES = [
    ("per-channel-without-int8",
     ["export-onnx", *SOURCE, "--output", "{out}/m.onnx", "--per-channel"],
     ["--per-channel chooses the scales of int8 weights", "float32"]),
    ("onnx-scalar-mix-nan",
     ["export-onnx", *SOURCE, "--output", "{out}/m.onnx",
      "--scalar-mix", "nan,0,0"],
     ["argument --scalar-mix", "finite numbers", "Received: nan,0,0."]),
    ("litert-scalar-mix-inf",
     ["export-litert", *SOURCE, "--output", "{out}/m.tflite",
      "--scalar-mix", "0,inf,0"],
     ["argument --scalar-mix", "Received: 0,inf,0."]),
    ("onnx-bilm-vocab",
     ["export-onnx", *SOURCE, "--output", "{out}/m.onnx",
      "--bilm-vocab", VOCAB],
     ["--bilm-vocab does not apply to export-onnx"]),
    ("embed-bilm-vocab-for-characters",
     ["embed", *SOURCE, "--input", DATA, "--output", "{out}/e.hdf5",
      "--bilm-vocab", VOCAB],
     ["--bilm-vocab is for word-input biLMs", "reads characters"]),
    ("savedmodel-bilm-vocab-for-characters",
     ["export-savedmodel", *SOURCE, "--output", "{out}/saved",
      "--bilm-vocab", VOCAB],
     ["--bilm-vocab is for word-input biLMs"]),
    ("dump-bilm-vocab-for-characters",
     ["dump-token-embeddings", *SOURCE, "--vocab", VOCAB, "--output",
      "{out}/t.hdf5", "--bilm-vocab", VOCAB],
     ["--bilm-vocab is for word-input biLMs"]),
    ("train-min-count-without-build-vocab",
     [*TRAIN, "--output", "{out}/run", "--min-count", "2"],
     ["--min-count sets how --build-vocab builds"]),
    ("train-max-vocab-without-build-vocab",
     [*TRAIN, "--output", "{out}/run", "--max-vocab-size", "10"],
     ["--max-vocab-size sets how --build-vocab builds"]),
    ("train-accumulator-with-adam",
     [*TRAIN, "--output", "{out}/run", "--optimizer", "adam",
      "--initial-accumulator", "0.5"],
     ["--initial-accumulator is Adagrad's; --optimizer adam has none"]),
    ("train-preset-and-options",
     [*TRAIN, "--output", "{out}/run", "--preset", "small", "--options",
      OPTIONS],
     ["--size and --options both give the whole size"]),
    ("train-epochs-and-steps",
     [*TRAIN, "--output", "{out}/run", "--epochs", "1", "--steps", "2"],
     ["--epochs and --steps both give the length"]),
    ("train-cluster-timeout-one-device",
     [*TRAIN, "--output", "{out}/run", "--strategy", "one_device",
      "--cluster-timeout", "5"],
     ["--cluster-timeout is for multi_worker"]),
    ("train-validate-every-not-multiple",
     [*TRAIN, "--output", "{out}/run", "--validation", DATA, "--steps", "4",
      "--checkpoint-every", "2", "--validate-every", "3"],
     ["--validate-every must be a multiple of --checkpoint-every",
      "--validate-every 4", "--checkpoint-every 3",
      "(--checkpoint-every is 2). Received: --validate-every 3."]),
    ("train-validate-every-without-validation",
     [*TRAIN, "--output", "{out}/run", "--validate-every", "2"],
     ["needs held-out files to validate on", "--validation"]),
    ("train-units-billion",
     [*TRAIN, "--output", "{out}/run", "--units", "1000000000"],
     ["--units 1000000000", "GiB to train", "this machine has"]),
    ("train-tokens-per-batch-billion",
     [*TRAIN, "--output", "{out}/run", "--tokens-per-batch", "1000000000"],
     ["A batch of 1,000,000,000 tokens (--tokens-per-batch)",
      "GiB of activations"]),
    ("train-char-options-with-word-encoder",
     [*TRAIN_WORDS, "--output", "{out}/run", "--options", OPTIONS,
      "--token-encoder", "words"],
     ["--options describes a biLM that reads characters",
      "--token-encoder is 'words'"]),
    ("train-word-options-with-char-encoder",
     [*TRAIN, "--output", "{out}/run", "--options",
      f"{WORDS}/options.json", "--token-encoder", "characters"],
     ["--options describes a biLM that reads words"]),
    ("train-seed-negative",
     [*TRAIN, "--output", "{out}/run", "--seed", "-1"],
     ["--seed must be an integer >= 0 and <= 2147483647.",
      "Received: --seed -1."]),
    ("train-cell-clip-nan",
     [*TRAIN, "--output", "{out}/run", "--cell-clip", "nan"],
     ["--cell-clip must be a finite number >= 0.0.",
      "Received: --cell-clip nan."]),
    ("train-init-from-characters-into-words",
     [*TRAIN_WORDS, "--output", "{out}/run", "--init-from",
      f"{OPTIONS},{WEIGHTS}", "--token-encoder", "words"],
     ["reads characters (token_encoder='characters')",
      "this run trains one that reads words"]),
    ("train-init-from-words-into-characters",
     [*TRAIN, "--output", "{out}/run", "--init-from", WORD_SOURCE,
      "--token-encoder", "characters"],
     ["reads words (token_encoder='words')",
      "trains one that reads characters"]),
]  # fmt: skip


def _snapshot(*roots):
    state = {}
    for root in roots:
        for directory, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(directory, name)
                if os.path.isfile(path):
                    with open(path, "rb") as f:
                        state[path] = hashlib.sha256(f.read()).hexdigest()
                else:
                    state[path] = "dir"
    return state


@pytest.mark.parametrize(
    "argv, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_flags_that_do_not_apply_are_errors(tmp_path, capsys, argv, words):
    out = tmp_path / "out"
    out.mkdir()
    (out / "previous.txt").write_text("kept")
    roots = [str(out), FIXTURES, WORDS]
    before = _snapshot(*roots)
    status = main([a.format(out=out) for a in argv])
    stdout, err = capsys.readouterr()
    assert status == 2, (stdout, err)
    assert "Traceback" not in stdout + err
    assert f"keras-elmo {argv[0]}: error: " in err, err
    for word in words:
        assert word in err, err
    assert _snapshot(*roots) == before


def _layers(time):
    return [np.ones((2, time, 4), "float32") * k for k in range(3)]


def test_allennlp_rule_refuses_layers_without_boundaries():
    mix = ScalarMix(layer_norm_rule="allennlp", do_layer_norm=True)
    # bilm(ids)'s token mask: the second sentence has one token.
    token_mask = np.array([[True, True, True], [True, False, False]])
    with pytest.raises(KerasElmoError, match="keep_boundaries=True"):
        mix(_layers(3), mask=token_mask)
    with pytest.raises(KerasElmoError, match="Pass mask=outputs"):
        mix(_layers(3))
    # With boundaries (<S> w </S> and <S> w w w </S>): time + 2 positions.
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    assert tuple(mix(_layers(5), mask=mask).shape) == (2, 3, 4)


def _train(run, seed):
    argv = [*TRAIN, "--output", str(run), "--steps", "3", "--seed", str(seed)]
    assert main([*argv, "--checkpoint-every", "3", "--dropout", "0.2"]) == 0
    with np.load(os.path.join(run, "checkpoint", "state.npz")) as state:
        return {key: state[key] for key in state.files}


@pytest.mark.large
def test_same_seed_same_weights(tmp_path, capsys):
    first = _train(tmp_path / "a", seed=5)
    again = _train(tmp_path / "b", seed=5)
    other = _train(tmp_path / "c", seed=6)
    capsys.readouterr()
    assert first.keys() == again.keys()
    for key in first:
        np.testing.assert_array_equal(first[key], again[key], err_msg=key)
    assert any(not np.array_equal(first[k], other[k]) for k in first)
