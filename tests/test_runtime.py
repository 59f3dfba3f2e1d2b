"""The runtime wrappers (ONNXBiLM, LiteRTBiLM): the BiLM dict from token
lists without TensorFlow, `embed_file` and `keras-elmo embed --runtime`
equal to the TensorFlow path, the export commands, and clear errors for
bad files, inputs and missing extras."""

import json
import sys

import h5py
import numpy as np
import pytest

pytest.importorskip("tf2onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("ai_edge_litert")

import onnx  # noqa: E402

import keras_elmo  # noqa: E402
from elmo_core.errors import KerasElmoError  # noqa: E402
from elmo_core.runtime import LiteRTBiLM  # noqa: E402
from elmo_core.runtime import ONNXBiLM  # noqa: E402
from keras_elmo.corpus.bilm_dump import embed_file  # noqa: E402
from keras_elmo.export import to_litert  # noqa: E402
from keras_elmo.export import to_onnx  # noqa: E402
from keras_elmo_cli import main  # noqa: E402
from tests import hostile_files  # noqa: E402
from tests.deploy_helpers import assert_bilm_outputs_close  # noqa: E402
from tests.deploy_helpers import batches  # noqa: E402
from tests.deploy_helpers import fixture_bilm  # noqa: E402
from tests.deploy_helpers import run_without_tensorflow  # noqa: E402
from tests.helpers import OPTIONS  # noqa: E402
from tests.helpers import WEIGHTS  # noqa: E402

RUNTIMES = {"onnx": ONNXBiLM, "litert": LiteRTBiLM}


@pytest.fixture(scope="module")
def bilm():
    return fixture_bilm()


@pytest.fixture(scope="module")
def files(fixture_onnx, fixture_litert):
    """float32 exports written by the CLI (the shared ones of conftest.py,
    read only), which the tests below load."""
    return {"onnx": fixture_onnx, "litert": fixture_litert}


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_wrapper_returns_the_bilm_dict_from_token_lists(bilm, files, runtime):
    model = RUNTIMES[runtime](files[runtime], num_threads=1)
    assert (model.num_layers, model.projection_dim) == (2, 16)
    assert model.precision == "float32"
    for sentences in batches():
        want = bilm(keras_elmo.batch_to_ids(sentences))
        got = model(sentences)
        assert sorted(got) == sorted(want)
        assert_bilm_outputs_close(got, want, atol=1e-5)
        # Character ids give the same.
        again = model(keras_elmo.batch_to_ids(sentences))
        assert_bilm_outputs_close(again, got, atol=0)


def test_runtime_package_imports_without_tensorflow(files):
    code = (
        "import sys\n"
        "from elmo_core.runtime import ONNXBiLM, LiteRTBiLM\n"
        f"a = ONNXBiLM({files['onnx']!r})([['a', 'b'], []])\n"
        f"b = LiteRTBiLM({files['litert']!r})([['a', 'b'], []])\n"
        "assert a['layer_outputs'][2].shape == (2, 2, 32)\n"
        "assert abs(a['layer_outputs'][2] - b['layer_outputs'][2]).max()"
        " < 1e-5\n"
    )
    run_without_tensorflow(code)


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_embed_file_equals_the_tensorflow_path(bilm, files, runtime, tmp_path):
    text = tmp_path / "sentences.txt"
    lines = [" ".join(s) for s in batches()[0]] + ["", "one more line"]
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    want, got = str(tmp_path / "tf.hdf5"), str(tmp_path / "rt.hdf5")
    options = dict(batch_size=3, verbose=0, sentence_index=False)
    embed_file(bilm, str(text), want, **options)
    model = RUNTIMES[runtime](files[runtime])
    embed_file(model, str(text), got, **options)
    with h5py.File(want) as a, h5py.File(got) as b:
        assert sorted(a) == sorted(b) == [str(i) for i in range(len(lines))]
        for key in a:
            assert a[key].shape == b[key].shape
            np.testing.assert_allclose(b[key][...], a[key][...], atol=1e-5)


def test_embed_command_with_runtimes(tmp_path, capsys):
    text = tmp_path / "sentences.txt"
    text.write_text("The cat sat .\n\nHello world\n", encoding="utf-8")
    source = ["--options", OPTIONS, "--weights", WEIGHTS, "--input", str(text)]
    outputs = {}
    for runtime, precision in [
        ("tensorflow", "float32"),
        ("onnx", "float32"),
        ("litert", "int8"),
    ]:
        output = str(tmp_path / f"{runtime}-{precision}.hdf5")
        argv = ["embed", *source, "--output", output, "--quiet"]
        argv += ["--runtime", runtime, "--precision", precision]
        argv += ["--forget-sentences"]  # layers only, compared below
        assert main(argv) == 0
        with h5py.File(output) as f:
            outputs[runtime, precision] = {k: f[k][...] for k in f}
    want = outputs["tensorflow", "float32"]
    for (runtime, precision), got in outputs.items():
        atol = 1e-5 if precision == "float32" else 0.02
        for key in want:
            np.testing.assert_allclose(got[key], want[key], atol=atol)
    # A precision the TensorFlow runtime does not have: one line, exit 2.
    output = str(tmp_path / "bad.hdf5")
    argv = ["embed", *source, "--output", output, "--precision", "int8"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error: --precision int8 needs --runtime onnx or litert" in err
    argv = ["embed", *source, "--output", output, "--runtime", "onnx"]
    assert main([*argv, "--precision", "float16"]) == 2
    err = capsys.readouterr().err
    assert "`--precision` must be one of" in err or "must be one of" in err
    assert "--precision float16" in err


@pytest.mark.large
def test_export_commands_with_scalar_mix(tmp_path, capsys):
    for runtime in sorted(RUNTIMES):
        path = str(tmp_path / f"mix.{runtime}")
        argv = [f"export-{runtime}", "--options", OPTIONS, "--weights"]
        argv += [WEIGHTS, "--output", path, "--precision", "int8"]
        assert main([*argv, "--scalar-mix", "0,0,0"]) == 0
        assert "wrote the int8 model" in capsys.readouterr().out
        model = RUNTIMES[runtime](path)
        out = model([["a", "b", "c"]])
        average = sum(out["layer_outputs"]) / 3
        np.testing.assert_allclose(out["elmo"], average, atol=1e-5)
        assert model.metadata["export_options"]["scalar_mix"] is True
    argv = ["export-onnx", "--options", OPTIONS, "--weights", WEIGHTS]
    argv += ["--output", str(tmp_path / "m.onnx"), "--scalar-mix", "0,0"]
    assert main(argv) == 2
    assert "must be 3 numbers, one per biLM layer" in capsys.readouterr().err
    assert main([*argv[:-1], "zero,zero,zero"]) == 2


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_bad_files_give_clear_errors(files, runtime, tmp_path):
    cls = RUNTIMES[runtime]
    with pytest.raises(KerasElmoError, match="Model file not found"):
        cls(str(tmp_path / "missing"))
    with pytest.raises(KerasElmoError, match="is a directory; expected a"):
        cls(str(tmp_path))
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00not a model at all" * 10)
    with pytest.raises(KerasElmoError, match=f"export-{runtime}"):
        cls(str(garbage))
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    with pytest.raises(KerasElmoError, match=f"export-{runtime}"):
        cls(str(empty))
    # The other runtime's file.
    other = files["litert" if runtime == "onnx" else "onnx"]
    with pytest.raises(KerasElmoError, match=f"export-{runtime}"):
        cls(other)


def test_onnx_without_keras_elmo_metadata(files, tmp_path):
    model = onnx.load(files["onnx"])
    del model.metadata_props[:]
    path = str(tmp_path / "plain.onnx")
    onnx.save(model, path)
    with pytest.raises(KerasElmoError, match="without keras_elmo metadata"):
        ONNXBiLM(path)
    props = {"keras_elmo": '{"format": "onnx", "format_version": 99}'}
    onnx.helper.set_model_props(model, props)
    onnx.save(model, path)
    with pytest.raises(KerasElmoError, match="format version 99"):
        ONNXBiLM(path)


@pytest.mark.parametrize(
    "build, words",
    [
        (
            lambda source, target: hostile_files.forged_onnx(source, target),
            "its inputs are ['x'], expected ['character_ids']",
        ),
        (
            lambda source, target: hostile_files.renamed_onnx(
                source, target, {"layer_1": "layer_9"}
            ),
            "its outputs are ['layer_0', 'layer_2', 'layer_9', 'mask']",
        ),
    ],
)
def test_a_graph_that_does_not_match_its_metadata_is_refused_on_open(
    files, tmp_path, build, words
):
    # Metadata copied onto another graph (or a graph edited after the
    # export): refused when the file is opened, not at the first call.
    path = build(files["onnx"], str(tmp_path / "forged.onnx"))
    with pytest.raises(KerasElmoError) as raised:
        ONNXBiLM(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: its ONNX graph does not match")
    assert words in message and "export-onnx" in message


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_bad_inputs_give_clear_errors(files, runtime):
    model = RUNTIMES[runtime](files[runtime])
    with pytest.raises(KerasElmoError, match=r"shape \(batch, time, 50\)"):
        model(np.zeros((2, 3, 49), np.int32))
    with pytest.raises(KerasElmoError, match="must lie in 0..261"):
        model(np.full((1, 1, 50), 300, np.int32))
    with pytest.raises(KerasElmoError, match="list of token strings"):
        model(["a sentence, not split"])


def test_missing_runtimes_name_their_extra(files, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(KerasElmoError, match=r"keras-elmo\[onnx\]"):
        ONNXBiLM(files["onnx"])
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    with pytest.raises(KerasElmoError, match=r"keras-elmo\[litert\]"):
        LiteRTBiLM(files["litert"])


def test_python_api_is_exported():
    assert keras_elmo.export.to_onnx is to_onnx
    assert keras_elmo.export.to_litert is to_litert


def _write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_commands_take_an_exported_file_as_model(
    bilm, files, runtime, tmp_path, capsys
):
    from keras_elmo.corpus.bilm_dump import dump_token_embeddings

    lines = [" ".join(s) for s in batches()[0]] + ["", "one more line"]
    text = _write_lines(tmp_path / "sentences.txt", lines)
    vocab = _write_lines(tmp_path / "vocab.txt", ["<S>", "</S>", "cat", "日本"])
    # The TensorFlow path on the same biLM is the reference.
    want = str(tmp_path / "tf.hdf5")
    embed_file(bilm, text, want, batch_size=3, verbose=0)
    want_tokens = str(tmp_path / "tf-tokens.hdf5")
    dump_token_embeddings(bilm, vocab, want_tokens, verbose=0)
    got = str(tmp_path / "rt.hdf5")
    model = ["--model", files[runtime]]
    argv = ["embed", *model, "--input", text, "--output", got, "--quiet"]
    assert main([*argv, "--batch-size", "3"]) == 0
    got_tokens = str(tmp_path / "rt-tokens.hdf5")
    argv = ["dump-token-embeddings", *model, "--vocab", vocab]
    assert main([*argv, "--output", got_tokens, "--quiet"]) == 0
    for a, b in [(want, got), (want_tokens, got_tokens)]:
        with h5py.File(a) as a, h5py.File(b) as b:
            assert sorted(a) == sorted(b)
            for key in a:
                assert a[key].shape == b[key].shape, key
                if key == "sentence_to_index":  # the same JSON text
                    assert b[key][0] == a[key][0]
                    continue
                np.testing.assert_allclose(b[key][...], a[key][...], atol=1e-5)
    capsys.readouterr()
    # What contradicts the file: one line each, exit 2, nothing written.
    bad = str(tmp_path / "bad.hdf5")
    argv = ["embed", *model, "--input", text, "--output", bad]
    other = "litert" if runtime == "onnx" else "onnx"
    for extra, message in [
        (["--runtime", other], f"is a {runtime} model but --runtime"),
        (["--precision", "int8"], "was exported in float32"),
        (["--options", OPTIONS], "--options does not apply"),
    ]:
        assert main([*argv, *extra]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "bad.hdf5").exists()


def test_an_exported_file_embeds_without_tensorflow(files, tmp_path):
    text = _write_lines(tmp_path / "sentences.txt", ["The cat sat .", ""])
    vocab = _write_lines(tmp_path / "vocab.txt", ["the", "cat"])
    output = str(tmp_path / "out.hdf5")
    tokens = str(tmp_path / "tokens.hdf5")
    code = (
        "import sys\n"
        "from keras_elmo_cli import main\n"
        f"argv = ['embed', '--model', {files['onnx']!r}, '--input', {text!r}]\n"
        f"assert main([*argv, '--output', {output!r}, '--quiet']) == 0\n"
        f"argv = ['dump-token-embeddings', '--model', {files['onnx']!r}]\n"
        f"argv += ['--vocab', {vocab!r}, '--output', {tokens!r}]\n"
        "assert main([*argv, '--quiet']) == 0\n"
    )
    run_without_tensorflow(code)
    with h5py.File(output) as f:
        assert f["0"].shape == (3, 4, 32) and f["1"].shape == (3, 0, 32)
        index = json.loads(f["sentence_to_index"][0])
    assert index == {"The cat sat .": "0", "": "1"}
    with h5py.File(tokens) as f:
        assert f["embedding"].shape == (2, 16)
