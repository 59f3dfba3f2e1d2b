"""The precision `train` computes in when the user does not say: bfloat16
where the CPU multiplies it natively, float32 elsewhere, a resumed run's
own precision, and what the user gives."""

import json
import os

import h5py
import numpy as np
import pytest

from elmo_core.errors import KerasElmoError
from elmo_core.settings import precision
from elmo_core.settings.precision import choose_precision
from elmo_core.settings.precision import cpu_flags
from keras_elmo.training import strategies
from keras_elmo_cli import main
from tests.helpers import FIXTURES
from tests.helpers import TINY_TRAIN_FLAGS

DATA = os.path.join(FIXTURES, "train", "data.txt")
VOCAB = os.path.join(FIXTURES, "train", "vocab.txt")
AVX2 = {"fpu", "sse2", "avx", "avx2", "fma"}
AVX512_BF16 = AVX2 | {"avx512f", "avx512_vnni", "avx512_bf16"}
AMX = AVX2 | {"amx_tile", "amx_bf16"}
# Training in bfloat16 cannot run while oneDNN is held below it (the
# stand-in for an older CPU): TensorFlow would abort; see
# test_onednn_held_below_bfloat16_trains_in_float32.
TRAINS_IN_BF16 = pytest.mark.skipif(
    precision.bf16_held_back() is not None,
    reason="ONEDNN_MAX_CPU_ISA holds oneDNN below bfloat16 products",
)


@pytest.mark.parametrize(
    "flags, chosen, named",
    [(AVX512_BF16, "bf16", "avx512_bf16"), (AMX, "bf16", "amx_bf16"),
     (AVX2, None, "no native bfloat16"), (set(), None, "no native")],
)  # fmt: skip
def test_auto_follows_the_cpu(flags, chosen, named):
    value, reason = choose_precision("auto", flags=flags, environ={})
    assert value == chosen
    assert named in reason


def test_auto_keeps_float32_on_a_gpu():
    value, reason = choose_precision(
        "auto", gpu=True, flags=AVX512_BF16, environ={}
    )
    assert value is None and "GPU" in reason


@pytest.mark.parametrize("saved", [None, "bf16", "fp16"])
def test_a_resumed_run_keeps_its_own_precision(saved):
    for flags in (AVX2, AVX512_BF16):
        value, reason = choose_precision(
            "auto", saved={"mixed_precision": saved}, flags=flags, environ={}
        )
        assert value == saved
        assert "resumes" in reason


@pytest.mark.parametrize(
    "requested, value", [("off", None), ("bf16", "bf16"), ("fp16", "fp16")]
)
def test_a_given_precision_wins(requested, value):
    for flags in (AVX2, AVX512_BF16):
        for saved in (None, {"mixed_precision": "bf16"}):
            chosen = choose_precision(
                requested, saved=saved, flags=flags, environ={}
            )
            assert chosen == (
                value,
                None,
            )


def test_cpu_flags_read_the_first_flags_line(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(
        "processor\t: 0\nmodel name\t: Some CPU\n"
        "flags\t\t: fpu avx2 avx512_bf16\n\n"
        "processor\t: 1\nflags\t\t: fpu\n"
    )
    assert cpu_flags(str(path)) == {"fpu", "avx2", "avx512_bf16"}
    path.write_text("processor\t: 0\nFeatures\t: fp asimd\n")
    assert cpu_flags(str(path)) == set()
    path.write_bytes(b"flags : avx2 \xff\xfe\n")
    assert "avx2" in cpu_flags(str(path))
    assert cpu_flags(str(tmp_path / "missing")) == set()


def _train(run, *extra):
    args = [
        "train", "--train", DATA, "--vocab", VOCAB, "--output", str(run),
        *TINY_TRAIN_FLAGS, "--steps", "2", "--num-sampled", "8", *extra,
    ]  # fmt: skip
    return main(args)


def _saved_precision(run):
    with open(os.path.join(run, "config.json")) as f:
        return json.load(f)["mixed_precision"]


def _machine(monkeypatch, flags):
    """This process as a machine of CPU `flags` without a GPU (its choice
    by the flags alone: oneDNN left free)."""
    monkeypatch.setattr(precision, "cpu_flags", lambda: flags)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.setattr(strategies, "has_gpu", lambda: False)


@TRAINS_IN_BF16
def test_train_says_what_auto_chose_and_a_resume_keeps_it(
    tmp_path, capsys, monkeypatch
):
    run = tmp_path / "run"
    _machine(monkeypatch, AVX512_BF16)
    assert _train(run) == 0
    printed = capsys.readouterr().out
    assert (
        "precision: bf16 (auto: this CPU multiplies bfloat16 natively "
        "(avx512_bf16); mixed_precision off for float32)"
    ) in printed
    assert _saved_precision(run) == "bf16"
    # The same run resumed on a machine without bfloat16: still bf16.
    _machine(monkeypatch, AVX2)
    assert _train(run, "--steps", "3") == 0
    printed = capsys.readouterr().out
    assert "precision: bf16 (auto: the run resumes with its own bf16)" in (
        printed
    )
    assert "resuming" in printed.lower()


def test_train_without_native_bfloat16_trains_in_float32(
    tmp_path, capsys, monkeypatch
):
    _machine(monkeypatch, AVX2)
    assert _train(tmp_path / "run") == 0
    printed = capsys.readouterr().out
    assert "precision: float32 (auto: this CPU has no native bfloat16)" in (
        printed
    )
    assert _saved_precision(tmp_path / "run") is None


@pytest.mark.large
def test_off_is_float32_and_says_nothing(tmp_path, capsys, monkeypatch):
    _machine(monkeypatch, AVX512_BF16)
    assert _train(tmp_path / "run", "--mixed-precision", "off") == 0
    assert "precision:" not in capsys.readouterr().out
    assert _saved_precision(tmp_path / "run") is None


# === Training precision never leaks into inference ===


def _layers(bilm, sentences):
    import keras_elmo

    ids = keras_elmo.batch_to_ids(sentences)
    outputs = bilm(ids)
    return np.stack([np.asarray(x) for x in outputs["layer_outputs"]])


@TRAINS_IN_BF16
# Large: ~38 s; a bfloat16 run's resume and float32 load run by default
# (test_train_says_what_auto_chose_and_a_resume_keeps_it)
@pytest.mark.large
def test_a_bfloat16_run_loads_in_float32_on_every_entry_point(tmp_path):
    import keras_elmo
    from keras_elmo.corpus import SentenceEmbedder

    run, export = str(tmp_path / "run"), str(tmp_path / "export")
    assert _train(run, "--mixed-precision", "bf16") == 0
    assert _saved_precision(run) == "bf16"
    assert main(["export-weights", "--model", run, "--output", export]) == 0
    sentences = [["The", "cat", "sat", "."], ["Hello", "world"]]

    from_run = keras_elmo.load_bilm(run)
    assert from_run.dtype_policy.name == "float32"
    expected = _layers(keras_elmo.load_bilm(export), sentences)
    np.testing.assert_allclose(
        _layers(from_run, sentences), expected, atol=1e-6, rtol=0
    )
    # Asked for, another precision is given.
    asked = keras_elmo.load_bilm(run, dtype="mixed_bfloat16")
    assert asked.dtype_policy.name == "mixed_bfloat16"
    layer = keras_elmo.layers.ELMoEmbedding(run)
    assert layer.bilm.dtype_policy.name == "float32"
    asked = keras_elmo.layers.ELMoEmbedding(run, dtype="mixed_bfloat16")
    assert asked.bilm.dtype_policy.name == "mixed_bfloat16"

    lines = [" ".join(s) for s in sentences]
    for x, y in zip(
        SentenceEmbedder(run)(lines), SentenceEmbedder(export)(lines)
    ):
        np.testing.assert_allclose(x, y, atol=1e-6, rtol=0)

    text = tmp_path / "text.txt"
    text.write_text("\n".join(lines) + "\n")
    dumps = {}
    for name, model in (("run", run), ("export", export)):
        dumps[name] = str(tmp_path / f"{name}.hdf5")
        argv = ["embed", "--model", model, "--input", str(text), "--quiet"]
        assert main([*argv, "--output", dumps[name]]) == 0
    with h5py.File(dumps["run"]) as a, h5py.File(dumps["export"]) as b:
        for key in ("0", "1"):
            np.testing.assert_allclose(a[key][...], b[key][...], atol=1e-6)


@pytest.mark.parametrize("isa", ["AVX2", "avx512_core"])
def test_onednn_held_below_bfloat16_trains_in_float32(isa):
    # TensorFlow picks oneDNN's bfloat16 kernels by the CPU's flags; oneDNN
    # held to AVX2 (the stand-in for an older CPU) aborts on them.
    environ = {"ONEDNN_MAX_CPU_ISA": isa}
    value, reason = choose_precision("auto", flags=AVX512_BF16, environ=environ)
    assert value is None and f"ONEDNN_MAX_CPU_ISA={isa}" in reason
    for requested, saved in (
        ("bf16", None),
        ("auto", {"mixed_precision": "bf16"}),
    ):
        with pytest.raises(
            KerasElmoError, match="unset the variable"
        ) as caught:
            choose_precision(
                requested, saved=saved, flags=AVX512_BF16, environ=environ
            )
        assert caught.value.argument == "mixed_precision"
    # On a GPU, and with oneDNN left free or at a bfloat16 level, as before.
    assert choose_precision("bf16", gpu=True, environ=environ) == ("bf16", None)
    for free in ({}, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}):
        value, _ = choose_precision("auto", flags=AVX512_BF16, environ=free)
        assert value == "bf16"


def test_train_refuses_bfloat16_where_onednn_cannot_run_it(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    run = str(tmp_path / "run")
    assert _train(run, "--mixed-precision", "bf16") == 2
    err = capsys.readouterr().err
    assert "--mixed-precision" in err and "ONEDNN_MAX_CPU_ISA=AVX2" in err
    assert "Traceback" not in err and not os.path.exists(run)
