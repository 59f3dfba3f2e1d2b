"""The guides' journeys, run the way a user runs them: each step in a
fresh process (a `keras-elmo` command or a short Python script), reading
only what the step before it wrote, with the commands and code of the
pages.

- Raw text -> prepare -> train -> embed (docs/pretraining.md): books as
  raw files become a corpus, a biLM trained on it records its
  tokenisation, and raw sentences are embedded split the same way.
- Pretraining -> Keras -> deploy (docs/pretraining.md, keras.md,
  deploy.md): train a biLM on a small text, export it, build and train a
  tagger on it, save it; load it in a new process; export it whole to
  ONNX; tag with the runtime in a process without TensorFlow or Keras.
- Corpus -> PyTorch (docs/corpus.md, pytorch.md): `embed-corpus` a
  folder of text, read it into PyTorch tensors; the same vectors as
  `keras-elmo embed` writes.
- Proteins (docs/proteins.md): one residue a token, per-residue and
  per-protein vectors of a SeqVec-style biLM, by the command and by the
  page's Python recipe, in two processes.
- FASTA with SeqVec (docs/proteins.md): SeqVec's files downloaded by the
  page's command from its URLs (served here from a local copy through a
  mirror), the page's FASTA file embedded with the URLs as the biLM
  without a network, and its per-protein vectors read back by the page's
  code.
- A small ELMo in an Android app (keras.md, deploy.md): the page's
  tagger saved and exported whole to int8 LiteRT by the command; raw
  sentences split and turned into ids by the Java classes of
  `examples/device/`; the file fed those ids by the input name it
  carries, in a process without TensorFlow, tags as Keras's.
- Deploy to a phone (getting-started.md's third path, deploy.md): export
  an int8 LiteRT file, check it with `keras-elmo embed --model FILE`,
  and run it with `LiteRTBiLM` in a process without TensorFlow.
- Embed sentences from PyTorch (pytorch.md): the page's `DataLoader`
  block on `KERAS_BACKEND=torch`, equal to `keras-elmo embed --top`.
"""

import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from tests import device_java
from tests.docs_blocks import blocks
from tests.docs_blocks import read_page
from tests.helpers import MODEL_DIR
from tests.helpers import ROOT
from tests.helpers import TINY_TRAIN_FLAGS
from tests.helpers import TRAIN_TEXT
from tests.helpers import subprocess_env

EWT = os.path.join(ROOT, "data", "ud_english_ewt", "train.upos.tsv")
CORPUS = TRAIN_TEXT
TINY = [*TINY_TRAIN_FLAGS, "--tokens-per-batch", "64", "--num-sampled", "8"]


def _step(folder, *argv, env=None):
    """One step of a journey in a fresh process, in `folder`; its stdout."""
    ran = subprocess.run(
        [sys.executable, *argv],
        cwd=folder,
        env=env or subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, (
        argv[:3],
        ran.stdout[-2000:],
        ran.stderr[-3000:],
    )
    return ran.stdout


def _command(folder, *argv):
    return _step(folder, "-m", "keras_elmo_cli", *argv)


def _python(folder, code, env=None):
    return _step(folder, "-c", code, env=env)


# === Raw text -> prepare -> train -> embed ===

RAW_BOOK = (
    "CHAPTER I\n\n"
    "It was a truth universally acknowledged, that a single man in\n"
    "possession of a good fortune must be in want of a wife. She hadn't\n"
    "thought so.\n\n"
    '"Mr. Bennet," said his lady, "have you heard?" He had not.\n'
)


# Large: ~36 s in a full run; its steps are checked by default one by one:
# raw text to prepared (tests/test_prepare.py), training on it
# (tests/test_training.py), raw sentences embedded as prepare reads them
# (tests/test_prepare.py::test_every_reader_reads_a_line_as_prepare_does).
@pytest.mark.large
def test_raw_text_to_a_bilm_that_embeds_raw_sentences(tmp_path):
    import gzip

    folder = str(tmp_path)
    os.mkdir(tmp_path / "raw")
    with gzip.open(tmp_path / "raw" / "one.txt.gz", "wt") as f:
        f.write(RAW_BOOK * 3)
    (tmp_path / "raw" / "two.txt").write_text(RAW_BOOK.upper())
    _command(
        folder, "prepare", "--input", "raw/*", "--output", "corpus",
        "--held-out-by", "tail", "--quiet",
    )  # fmt: skip
    _command(
        folder, "train", "--train", "corpus/train.txt.gz", "--validation",
        "corpus/valid.txt.gz", "--build-vocab", "--output", "run", *TINY,
        "--steps", "2", "--quiet",
    )  # fmt: skip
    assert "perplexity" in _command(
        folder, "evaluate", "--model", "run", "--data", "corpus/valid.txt.gz"
    )
    _command(
        folder, "export-weights", "--model", "run", "--output", "run/export"
    )
    spacy = {"tokenization": "spacy", "language": "en"}
    for where in ("run", "run/export"):
        with open(tmp_path / where / "tokenization.json") as f:
            assert json.load(f) == spacy
    (tmp_path / "raw.txt").write_text('She hadn\'t. "Have you?"\n')
    _command(
        folder, "embed", "--model", "run/export", "--input", "raw.txt",
        "--output", "raw.hdf5", "--tokenize", "spacy", "--quiet",
    )  # fmt: skip
    with h5py.File(tmp_path / "raw.hdf5") as f:
        # She had n't . " Have you ? "
        assert f["0"].shape == (3, 9, 16)


# === Pretraining -> Keras -> deploy ===

# docs/keras.md's tagger on the exported biLM, trained on a few sentences
# of UD English-EWT, saved with the tokens it is checked on and its tags.
TRAIN_TAGGER = r"""
import json
import keras
import numpy as np
import tensorflow as tf
import keras_elmo

sentences, words, tags = [], [], []
for line in open(EWT, encoding="utf-8"):
    line = line.rstrip("\n")
    if line:
        word, tag = line.split("\t")
        words.append(word)
        tags.append(tag)
    elif words:
        sentences.append((words[:12], tags[:12]))
        words, tags = [], []
    if len(sentences) == 32:
        break
names = sorted({t for _, ts in sentences for t in ts})
width = max(len(w) for w, _ in sentences)
x = tf.constant([w + [""] * (width - len(w)) for w, _ in sentences])
y = np.array([[names.index(t) for t in ts] + [0] * (width - len(ts))
              for _, ts in sentences])

tokens = keras.Input(shape=(None,), dtype="string", name="tokens")
h = keras_elmo.ELMoEmbedding("run/export", name="elmo")(tokens)
h = keras.layers.Bidirectional(keras.layers.LSTM(8, return_sequences=True))(h)
tags = keras.layers.Dense(len(names), activation="softmax", name="tags")(h)
tagger = keras.Model(tokens, tags)
tagger.compile("adam", "sparse_categorical_crossentropy")
tagger.fit(x, y, epochs=1, batch_size=8, verbose=0)
tagger.save("tagger.keras")
check = x[:4]
json.dump([[t.decode() for t in row] for row in check.numpy()],
          open("check_tokens.json", "w"))
np.save("check_tags.npy", keras.ops.convert_to_numpy(tagger(check)))
""".replace("EWT", repr(EWT))

# A new process that only imports and loads.
LOAD_TAGGER = r"""
import json
import keras
import keras_elmo
import numpy as np
import tensorflow as tf

tagger = keras.saving.load_model("tagger.keras")
check = tf.constant(json.load(open("check_tokens.json")))
got = keras.ops.convert_to_numpy(tagger(check))
np.testing.assert_allclose(got, np.load("check_tags.npy"), atol=1e-6)
print("loaded", got.shape)
"""

# On the device: NumPy and the runtime, no TensorFlow, no Keras.
RUN_ON_DEVICE = r"""
import json
import sys
import numpy as np
from elmo_core.runtime import ONNXModel

device = ONNXModel("tagger.onnx", num_threads=1)
check = json.load(open("check_tokens.json"))
sentences = [[t for t in row if t] for row in check]
got = device({"tokens": sentences})
want = np.load("check_tags.npy")
for row, sentence in enumerate(sentences):
    n = len(sentence)
    np.testing.assert_allclose(got[row, :n], want[row, :n], atol=1e-4)
loaded = [m for m in ("tensorflow", "keras") if m in sys.modules]
assert not loaded, loaded
print("tagged", got.shape)
"""


# Large: ~49 s; its steps run by default in test_training, test_export_model and
# test_deploy_example
@pytest.mark.large
def test_pretrain_export_tag_save_load_deploy(tmp_path):
    folder = str(tmp_path)
    _command(
        folder, "train", "--train", CORPUS, "--build-vocab",
        "--output", "run", *TINY, "--steps", "2", "--quiet",
    )  # fmt: skip
    _command(
        folder, "export-weights", "--model", "run", "--output", "run/export"
    )
    _python(folder, TRAIN_TAGGER)
    assert "loaded (4," in _python(folder, LOAD_TAGGER)
    _command(
        folder, "export-onnx", "--model", "tagger.keras", "--output",
        "tagger.onnx",
    )  # fmt: skip
    env = subprocess_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    assert "tagged (4," in _python(folder, RUN_ON_DEVICE, env=env)
    # The biLM inside the saved tagger (frozen: fine_tune=False) is the
    # exported one, exactly, loaded with another setting too.
    _python(
        folder,
        "import numpy as np, keras_elmo\n"
        "from keras_elmo.layers.bilm_weights import learned_weights\n"
        "a = keras_elmo.load_bilm('tagger.keras', stateful=True)\n"
        "b = keras_elmo.load_bilm('run/export')\n"
        "pairs = list(zip(learned_weights(a), learned_weights(b)))\n"
        "assert len(pairs) == len(b.weights) > 20\n"
        "for x, y in pairs:\n"
        "    np.testing.assert_array_equal(x.numpy(), y.numpy())\n",
    )


# === Corpus -> PyTorch ===

READ_INTO_TORCH = r"""
import json
import numpy as np
import torch
import h5py
from elmo_core.embedding_files.parquet_layout import read_embeddings

vectors = {
    (file, line): torch.from_numpy(array)
    for file, line, array in read_embeddings("elmo-out")
}
with h5py.File("top.hdf5") as f:
    for (file, line), tensor in vectors.items():
        assert isinstance(tensor, torch.Tensor)
        want = f[str(line - 1)][...]
        np.testing.assert_allclose(tensor.numpy(), want, atol=1e-6)
print(len(vectors), sorted({f.rsplit("/", 1)[-1] for f, _ in vectors}))
"""


# Large: ~20 s in a full run; embed-corpus's files are checked by default
# (tests/test_embed_corpus.py) and PyTorch reads the package's vectors in
# test_embed_sentences_from_pytorch_as_the_command_does below.
@pytest.mark.large
def test_embed_a_corpus_and_read_it_into_pytorch(tmp_path):
    folder = str(tmp_path)
    os.mkdir(tmp_path / "corpus")
    lines = ["The cat sat on the mat .", "Hello world", "A third one here ."]
    for name in ("a.txt", "b.txt"):
        (tmp_path / "corpus" / name).write_text("\n".join(lines) + "\n")
    _command(
        folder, "embed-corpus", "--model", MODEL_DIR, "--input",
        "corpus/*.txt", "--output", "elmo-out", "--top",
    )  # fmt: skip
    # The same lines through `embed`, by line number (a.txt and b.txt
    # hold the same text).
    _command(
        folder, "embed", "--model", MODEL_DIR, "--input", "corpus/a.txt",
        "--output", "top.hdf5", "--top", "--quiet",
    )  # fmt: skip
    printed = _python(folder, READ_INTO_TORCH).strip().splitlines()[-1]
    assert printed == "6 ['a.txt', 'b.txt']", printed


# === Proteins ===

# docs/proteins.md's recipe, on the same sequences.
PROTEIN_RECIPE = r"""
import json
import keras
import numpy as np
import keras_elmo

bilm = keras_elmo.load_bilm(MODEL_DIR)
out = {}
for line in open("proteins.txt"):
    seq = line.split()
    ids = keras_elmo.batch_to_ids([seq])
    layers = bilm(ids)["layer_outputs"]
    per_residue = np.stack([keras.ops.convert_to_numpy(x)[0] for x in layers])
    out["".join(seq)] = per_residue.sum(axis=0).mean(axis=0).tolist()
json.dump(out, open("recipe.json", "w"))
""".replace("MODEL_DIR", repr(MODEL_DIR))


def test_per_residue_and_per_protein_vectors(tmp_path):
    folder = str(tmp_path)
    sequences = ["MVTYDFGSDEMHD", "MKV", "ACDEFGHIKLMNPQRSTVWY" * 3]
    (tmp_path / "proteins.txt").write_text(
        "".join(" ".join(seq) + "\n" for seq in sequences)
    )
    _command(
        folder, "embed", "--model", MODEL_DIR, "--input", "proteins.txt",
        "--output", "residues.hdf5", "--quiet",
    )  # fmt: skip
    _python(folder, PROTEIN_RECIPE)
    with open(tmp_path / "recipe.json") as f:
        recipe = json.load(f)
    with h5py.File(tmp_path / "residues.hdf5") as f:
        for i, seq in enumerate(sequences):
            per_residue = f[str(i)][...]  # (layers, residues, 2P)
            assert per_residue.shape[:2] == (3, len(seq))
            per_protein = per_residue.sum(axis=0).mean(axis=0)
            np.testing.assert_allclose(per_protein, recipe[seq], atol=1e-5)


# === FASTA with SeqVec (docs/proteins.md) ===


def _page_block(page, language, holding):
    """The one block of `page` in `language` whose code holds `holding`."""
    found = [
        b.code
        for b in blocks(page)
        if b.language == language and holding in b.code
    ]
    assert len(found) == 1, (page, holding, len(found))
    return found[0]


def _seqvec_urls():
    """The two URLs of docs/proteins.md's download command."""
    code = _page_block("docs/proteins.md", "bash", "keras-elmo download")
    urls = [w for w in code.replace("\\\n", " ").split() if "://" in w]
    assert [u.rsplit("/", 1)[1] for u in urls] == [
        "options.json",
        "weights.hdf5",
    ]
    return urls


def test_fasta_to_per_protein_vectors_with_seqvec(tmp_path):
    import urllib.parse

    from tests.model_server import FILES
    from tests.model_server import ModelServer

    folder = str(tmp_path)
    options, weights = _seqvec_urls()
    # The page's URLs, served from 127.0.0.1 through a mirror laid out
    # HOST/PATH (docs/loading.md): the fixture biLM stands for SeqVec.
    files = {}
    for url, fixture in ((options, "/m/options.json"),
                         (weights, "/m/weights.hdf5")):  # fmt: skip
        parts = urllib.parse.urlsplit(url)
        files[f"/{parts.netloc}{parts.path}"] = FILES[fixture]
    server = ModelServer(files)
    cache = str(tmp_path / "cache")
    try:
        env = subprocess_env(
            KERAS_ELMO_HOME=cache, KERAS_ELMO_MIRROR=server.url
        )
        printed = _step(
            folder, "-m", "keras_elmo_cli", "download", options, weights,
            "--quiet", env=env,
        )  # fmt: skip
    finally:
        server.stop()
    assert printed.count(": ok,") == 2, printed
    # The FASTA file of the page, then `embed` with the URLs as the biLM:
    # from the cache, the server gone (a fetch would fail).
    _python(folder, _page_block("docs/proteins.md", "python", ">seq2"))
    offline = subprocess_env(
        KERAS_ELMO_HOME=cache, KERAS_ELMO_MIRROR=server.url
    )
    _step(
        folder, "-m", "keras_elmo_cli", "embed", "--options", options,
        "--weights", weights, "--input", "proteins.fasta", "--output",
        "proteins.hdf5", "--quiet", env=offline,
    )  # fmt: skip
    read = _page_block("docs/proteins.md", "python", 'h5py.File("proteins')
    printed = _python(folder, read).strip().splitlines()[-1]
    assert printed == "(3, 13, 32) (3, 32)", printed


# === A small ELMo in an Android app (keras.md, deploy.md) ===

RAW_SENTENCES = ["The cat didn't sit.", '"Hello," she said (Mr. Smith-Jones).']

# docs/keras.md's tagger, saved, with its Keras tags of the device rule's
# tokens of RAW_SENTENCES.
SAVE_KERAS_TAGGER = r"""
import json
from elmo_core.text.device_tokenizer import tokenize

PAGE_BLOCK
tagger.save("tagger.keras")
raw = json.load(open("raw.json"))
tokens = [tokenize(text) for text in raw]
width = max(map(len, tokens))
padded = tf.constant([t + [""] * (width - len(t)) for t in tokens])
np.save("keras_tags.npy", keras.ops.convert_to_numpy(tagger(padded)))
"""

# The app: the exported file fed the Java classes' ids by the input name
# the file carries; NumPy and the runtime only.
RUN_IN_THE_APP = r"""
import sys
import numpy as np
from elmo_core.runtime import LiteRTModel

tagger = LiteRTModel("tagger-int8.tflite")
print(tagger.input_names, tagger.output_names)
(name,) = tagger.input_names
got = tagger({name: np.load("java_ids.npy")})
want = np.load("keras_tags.npy")
lengths = np.load("java_lengths.npy")
# The page's tagger is untrained: its three tags are near ties (no best
# tag leads by twice int8's bound), so the tags themselves may swap; the
# probabilities are what int8 keeps.
for row, n in enumerate(lengths):
    np.testing.assert_allclose(got[row, :n], want[row, :n], atol=0.05)
loaded = [m for m in ("tensorflow", "keras") if m in sys.modules]
assert not loaded, loaded
"""


@pytest.mark.skipif(
    not (device_java.JAVAC and device_java.JAVA), reason="needs a JDK"
)
# Large: ~27 s; the phone file's checks run by default in
# test_export_a_phone_file_check_it_and_run_it_without_tensorflow
@pytest.mark.large
def test_a_tagger_in_an_android_app(tmp_path):
    from elmo_core.text.device_tokenizer import tokenize

    folder = str(tmp_path)
    # The page names the test model by its path in a clone.
    os.symlink(os.path.join(ROOT, "tests"), tmp_path / "tests")
    (tmp_path / "raw.json").write_text(json.dumps(RAW_SENTENCES))
    page = _page_block("docs/keras.md", "python", "tagger = keras.Model(")
    _python(folder, SAVE_KERAS_TAGGER.replace("PAGE_BLOCK", page))
    export = _page_block("docs/deploy.md", "kotlin", "ElmoTokenizer")
    assert "export-litert" in read_page("docs/deploy.md")
    _command(
        folder, "export-litert", "--model", "tagger.keras", "--precision",
        "int8", "--output", "tagger-int8.tflite",
    )  # fmt: skip
    classes = device_java.compile_java(tmp_path / "classes")
    tokens, ids, _ = device_java.java_tokens(classes, folder, RAW_SENTENCES)
    assert tokens == [tokenize(text) for text in RAW_SENTENCES]
    assert tokens[0] == ["The", "cat", "did", "n't", "sit", "."]
    np.save(tmp_path / "java_ids.npy", ids)
    np.save(tmp_path / "java_lengths.npy", [len(t) for t in tokens])
    env = subprocess_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    names = _python(folder, RUN_IN_THE_APP, env=env).strip().splitlines()[-1]
    # A keras.Input without a name, saved and loaded, and a last Dense
    # layer: the names the page's Kotlin shows.
    assert names == "['input_layer'] ['dense']", names
    assert '"input_layer"' in export and '"dense"' in export


# === Deploy to a phone (docs/getting-started.md, deploy.md) ===

# Step 2 of "On a phone", in Python: the file against the float32 biLM,
# in a process without TensorFlow (the runtime and NumPy only).
CHECK_ON_A_COMPUTER = r"""
import sys
import h5py
import numpy as np
from elmo_core.runtime import LiteRTBiLM

bilm = LiteRTBiLM("elmo-int8.tflite")
sentences = [line.split() for line in open("sentences.txt")]
out = bilm(sentences)
with h5py.File("check.hdf5") as f:
    for i, sentence in enumerate(sentences):
        n = len(sentence)
        got = np.stack([layer[i, :n] for layer in out["layer_outputs"]])
        np.testing.assert_allclose(got, f[str(i)][...], atol=1e-5)
with h5py.File("float32.hdf5") as f:
    worst = max(
        float(np.max(np.abs(
            np.stack([layer[i, :len(s)] for layer in out["layer_outputs"]])
            - f[str(i)][...]
        )))
        for i, s in enumerate(sentences)
    )
loaded = [m for m in ("tensorflow", "keras") if m in sys.modules]
assert not loaded, loaded
print(bilm.precision, worst)
"""


def test_export_a_phone_file_check_it_and_run_it_without_tensorflow(tmp_path):
    folder = str(tmp_path)
    (tmp_path / "sentences.txt").write_text(
        "The cat sat on the mat .\nHello world\nÜnïcödé too\n"
    )
    _command(
        folder, "export-litert", "--model", MODEL_DIR, "--precision",
        "int8", "--output", "elmo-int8.tflite",
    )  # fmt: skip
    for model, output in (
        (MODEL_DIR, "float32"),
        ("elmo-int8.tflite", "check"),
    ):
        _command(
            folder, "embed", "--model", model, "--input", "sentences.txt",
            "--output", f"{output}.hdf5", "--quiet",
        )  # fmt: skip
    env = subprocess_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    precision, worst = _python(folder, CHECK_ON_A_COMPUTER, env=env).split()
    assert precision == "int8"
    # int8 weights: near the float32 biLM, not equal to it.
    assert 0.0 < float(worst) < 0.5, worst


# === Embed sentences from PyTorch (docs/pytorch.md) ===

# The page's block, on KERAS_BACKEND=torch, in its own process.
EMBED_FROM_PYTORCH = r"""
import os

os.environ["KERAS_BACKEND"] = "torch"
import h5py
import numpy as np
import torch

import keras_elmo
from elmo_core.ids.host_ids import TokenBatcher

bilm = keras_elmo.load_bilm(MODEL_DIR)
sentences = [line.split() for line in open("sentences.txt")]
loader = torch.utils.data.DataLoader(
    sentences, batch_size=2, collate_fn=TokenBatcher(bilm)
)
vectors = []
with torch.no_grad():
    for ids in loader:
        top = bilm(torch.as_tensor(ids))["layer_outputs"][-1]
        lengths = (torch.as_tensor(ids) != 0).any(-1).sum(-1)
        vectors += [row[:n] for row, n in zip(top, lengths)]
with h5py.File("top.hdf5") as f:
    for i, vector in enumerate(vectors):
        np.testing.assert_allclose(vector.numpy(), f[str(i)][...], atol=1e-5)
print(len(vectors))
""".replace("MODEL_DIR", repr(MODEL_DIR))


def test_embed_sentences_from_pytorch_as_the_command_does(tmp_path):
    folder = str(tmp_path)
    (tmp_path / "sentences.txt").write_text("The cat sat .\nHello world\nHi\n")
    _command(
        folder, "embed", "--model", MODEL_DIR, "--input", "sentences.txt",
        "--output", "top.hdf5", "--top", "--quiet",
    )  # fmt: skip
    assert _python(folder, EMBED_FROM_PYTORCH).strip().endswith("3")


@pytest.mark.large
def test_the_main_job_s_steps_chain(tmp_path):
    # The README's main job, shortened: train, evaluate, export, embed,
    # each a fresh process reading what the one before wrote.
    folder = str(tmp_path)
    _command(
        folder, "train", "--train", CORPUS, "--build-vocab",
        "--validation", CORPUS, "--output", "run", *TINY, "--steps", "4",
        "--quiet",
    )  # fmt: skip
    printed = _command(folder, "evaluate", "--model", "run", "--data", CORPUS)
    assert "perplexity" in printed
    _command(folder, "export-weights", "--model", "run", "--output", "export")
    _command(
        folder, "embed", "--model", "export", "--input", CORPUS, "--output",
        "embedded.hdf5", "--quiet",
    )  # fmt: skip
    with h5py.File(tmp_path / "embedded.hdf5") as f:
        assert f["0"].shape[0] == 3
