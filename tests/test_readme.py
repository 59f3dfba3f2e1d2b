"""The README's Python blocks run as written."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_example_runs(capsys, monkeypatch):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    example = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    monkeypatch.chdir(ROOT)
    exec(compile(example, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "[(2, 3, 32), (2, 3, 32), (2, 3, 32)]"
    assert printed[1] == "(2, 2)"


# === Every Python block of the README ===

# A block marked `<!-- illustrative: REASON -->` on the line above it is
# not run (the reason is in the README); every other block runs, in order,
# in one namespace, in a directory holding the files the README names:
# options.json / weights.hdf5 (the fixture model), elmo_savedmodel and
# elmo-int8.onnx (its exports), with the pretrained names "original" and
# "zh" served from 127.0.0.1 (the bilm-tf and ELMoForManyLangs fixtures).
ILLUSTRATIVE = re.compile(r"<!-- illustrative: (.+?) -->\n$")
# A block that picks another Keras backend runs in a process of that
# backend: tests/test_backends.py (check_readme_example) runs it.
OTHER_BACKEND = re.compile(r'os.environ\["KERAS_BACKEND"\] = "(jax|torch)"')


def _python_blocks(readme):
    blocks = []
    for match in re.finditer(r"```python\n(.*?)```", readme, re.S):
        before = readme[: match.start()]
        marker = ILLUSTRATIVE.search(before)
        line = before.count("\n") + 1
        reason = marker and marker.group(1)
        backend = OTHER_BACKEND.search(match.group(1))
        if backend:
            reason = f"runs on {backend.group(1)} in tests/test_backends.py"
        blocks.append((line, match.group(1), reason))
    return blocks


def _zipped_folder(folder):
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(os.listdir(folder)):
            archive.write(os.path.join(folder, name), name)
    return buffer.getvalue()


def _readme_files(directory, bilm):
    import shutil

    from keras_elmo.export import export_savedmodel
    from keras_elmo.export import to_onnx
    from tests.helpers import OPTIONS
    from tests.helpers import WEIGHTS

    os.symlink(os.path.join(ROOT, "tests"), os.path.join(directory, "tests"))
    shutil.copy(OPTIONS, os.path.join(directory, "options.json"))
    shutil.copy(WEIGHTS, os.path.join(directory, "weights.hdf5"))
    # A training run where the README names one.
    shutil.copytree(
        os.path.join(ROOT, "tests", "fixtures", "compat", "run"),
        os.path.join(directory, "runs", "mylm"),
    )
    export_savedmodel(bilm, os.path.join(directory, "elmo_savedmodel"))
    to_onnx(bilm, os.path.join(directory, "elmo-int8.onnx"), precision="int8")


def _serve_zh(monkeypatch, server):
    from keras_elmo import pretrained
    from keras_elmo.pretrained import Preset
    from keras_elmo.pretrained import PresetFile
    from tests import model_server

    folder = os.path.join(ROOT, "tests/fixtures/elmo_for_many_langs/char_model")
    monkeypatch.setitem(model_server.FILES, "/m/zh.zip", _zipped_folder(folder))
    preset = Preset(
        name="zh",
        kind="elmo_for_many_langs",
        language="zh",
        description="the ELMoForManyLangs fixture model",
        files={"model": PresetFile(server.url + "/m/zh.zip", extract="zip")},
        source="tests/fixtures/elmo_for_many_langs",
    )
    monkeypatch.setitem(pretrained.PRESETS, "zh", preset)


def test_readme_python_blocks_run(tmp_path, monkeypatch, capsys):
    import keras_elmo
    from tests.helpers import OPTIONS
    from tests.helpers import WEIGHTS
    from tests.model_server import serve_fixture_as

    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        blocks = _python_blocks(f.read())
    skipped = [(line, reason) for line, _, reason in blocks if reason]
    # The blocks kept illustrative: TF1 code for TF Hub's own module; the
    # allennlp 0.9 code SeqVec users leave; the corpus section's Beam and
    # Ray recipes (a Beam run's output, Beam itself, Ray:
    # test_embed_corpus_beam.py runs the Beam ones); the PyTorch and JAX
    # examples run in a process of their backend.
    assert sorted(reason for _, reason in skipped) == [
        "Ray is in no extra; checked once by hand, see above",
        "TensorFlow 1 code (hub.Module) for the module on tfhub.dev",
        "needs allennlp 0.9, which no longer installs",
        "needs an output directory; tests/test_embed_corpus_beam.py reads one",
        "needs the beam extra; tests/test_embed_corpus_beam.py runs the same",
        "runs on jax in tests/test_backends.py",
        "runs on torch in tests/test_backends.py",
    ]
    work = tmp_path / "work"
    work.mkdir()
    _readme_files(str(work), keras_elmo.load_bilm(OPTIONS, WEIGHTS))
    monkeypatch.chdir(work)
    namespace = {}
    with serve_fixture_as(monkeypatch, tmp_path / "cache", "original") as s:
        _serve_zh(monkeypatch, s)
        for line, code, reason in blocks:
            if reason:
                continue
            exec(compile(code, f"README.md, block at line {line}", "exec"),
                 namespace)  # fmt: skip
    capsys.readouterr()
    # What the later blocks left behind.
    assert namespace["vectors"].shape == (2, 7, 32)
    assert {"layer_outputs", "mask"} <= set(namespace["out"])
