"""The fixture, gradient and file checks of one Keras backend.

Run by `tests/test_backends.py` in a child process with `KERAS_BACKEND`
set (Keras fixes the backend per process):

    KERAS_BACKEND=jax python tests/backend_checks/check_backend.py \\
        REFERENCE.npz OUT_DIR [default|large]

It runs the same checks as the TensorFlow tests (the bilm-tf fixture
stateless and stateful, the word-input fixture, the ELMoForManyLangs
fixtures, the `.keras` files saved on TensorFlow), the half-precision
policies, the gradients of a fine-tuned `ELMoEmbedding` and of the LSTM
loop alone with its clips binding (compared with TensorFlow's
hand-written ones, saved beside REFERENCE.npz), batches with empty rows
or none (`empty_batches.py`, also against TensorFlow's), and writes
OUT_DIR/results.json (the largest difference of each check, or the error
it raised) and a `.keras` file saved on this backend with its outputs,
which the parent loads on TensorFlow. The `large` part runs only the
checks of `LARGE` (the stateful twins, reduced precisions, empty batches
and fine-tuning runs: `--run_large`), the default part all the others.
"""

import functools
import json
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
sys.path.insert(0, os.path.abspath(ROOT))

import h5py  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

import elmo_core  # noqa: E402
import keras_elmo  # noqa: E402
from tests.backend_checks import distinct_tokens  # noqa: E402
from tests.backend_checks import empty_batches  # noqa: E402
from tests.backend_checks import gradients  # noqa: E402
from tests.backend_checks import recurrence  # noqa: E402
from tests.test_bilm import _fixture_batches  # noqa: E402
from tests.test_bilm import _top_layer_as_fixture  # noqa: E402
from tests.test_elmo_for_many_langs import EXPECTED as EFML  # noqa: E402
from tests.test_elmo_for_many_langs import META  # noqa: E402
from tests.test_elmo_for_many_langs import _folder  # noqa: E402
from tests.test_word_bilm import FIXTURES as WORDS  # noqa: E402
from tests.test_word_bilm import OPTIONS as WORD_OPTIONS  # noqa: E402
from tests.test_word_bilm import SENTENCES as WORD_SENTENCES  # noqa: E402
from tests.test_word_bilm import VOCAB  # noqa: E402
from tests.test_word_bilm import WEIGHTS as WORD_WEIGHTS  # noqa: E402
from tests.test_word_bilm import _json  # noqa: E402

OPTIONS = os.path.join(ROOT, "tests", "fixtures", "bilm-tf", "model")
COMPAT = os.path.join(ROOT, "tests", "fixtures", "compat")
numpy = keras.ops.convert_to_numpy


def _layers(bilm, inputs):
    out = bilm(inputs)["layer_outputs"]
    return np.stack([numpy(x) for x in out])


def _worst(pairs):
    return float(max(np.abs(a - b).max() for a, b in pairs if a.size))


@functools.lru_cache(maxsize=None)
def _loaded(folder):
    """One stateless biLM per folder, shared by the checks: JAX compiles
    once per biLM instance and input shape."""
    return keras_elmo.load_bilm(folder)


@functools.lru_cache(maxsize=None)
def _shared_char_bilm():
    return _char_bilm()


def _char_bilm(**kwargs):
    return keras_elmo.load_bilm(
        os.path.join(OPTIONS, "options.json"),
        os.path.join(OPTIONS, "lm_weights.hdf5"),
        **kwargs,
    )


def check_bilm_tf_stateless():
    # The first batch (the only one bilm-tf ran from a zero state) three
    # times over: 9 rows, batches of more than a row or two.
    batches, expected = _fixture_batches()
    copies = 3
    out = _shared_char_bilm()(keras_elmo.batch_to_ids(batches[0] * copies))
    out = {"layer_outputs": [numpy(x) for x in out["layer_outputs"]]}
    return _worst(
        (_top_layer_as_fixture(out, row, t.shape[1]), t)
        for row, t in enumerate(expected[0] * copies)
    )


def check_bilm_tf_stateful():
    bilm = _char_bilm(stateful=True, max_batch_size=3)
    batches, expected = _fixture_batches()
    pairs = []
    for batch, targets in zip(batches, expected):
        out = bilm(keras_elmo.batch_to_ids(batch))
        out = {"layer_outputs": [numpy(x) for x in out["layer_outputs"]]}
        pairs += [
            (_top_layer_as_fixture(out, row, t.shape[1]), t)
            for row, t in enumerate(targets)
        ]
    return _worst(pairs)


def check_mixed_precision():
    """Half-precision policies: outputs in the half dtype near float32's
    (the tolerances of tests/test_bilm.py); under bfloat16 (what `train`
    picks on CPUs that multiply it natively), finite fine-tuning gradients
    through every weight."""
    batches, _ = _fixture_batches()
    ids = keras_elmo.batch_to_ids(batches[0])
    reference = _layers(_shared_char_bilm(), ids)
    errors = {}
    for policy in ("mixed_bfloat16", "mixed_float16"):
        bilm = _char_bilm(dtype=policy)
        outputs = bilm(ids)["layer_outputs"]
        half = policy.split("_")[1]
        assert all(
            keras.backend.standardize_dtype(x.dtype) == half for x in outputs
        ), [x.dtype for x in outputs]
        got = np.stack([numpy(keras.ops.cast(x, "float32")) for x in outputs])
        errors[half] = float(np.abs(got - reference).max())
        if half != "bfloat16":
            continue
        embedding = keras_elmo.ELMoEmbedding(bilm, fine_tune=True, dropout=0.0)
        weights = np.ones(embedding(ids).shape, "float32")
        grads = gradients.backend_gradients(embedding, ids, weights)
        grads = [numpy(g).astype("float32") for g in grads]
        assert all(np.isfinite(g).all() for g in grads), policy
        errors[f"{half}_zero_gradients"] = sum(not g.any() for g in grads)
    return errors


def check_words_stateless():
    bilm = keras_elmo.load_bilm(WORD_OPTIONS, WORD_WEIGHTS, vocabulary=VOCAB)
    vocab = elmo_core.ids.Vocabulary.from_file(VOCAB)
    with h5py.File(os.path.join(WORDS, "expected_stateless.hdf5")) as f:
        expected = [f[str(i)][...] for i in range(len(WORD_SENTENCES))]
    batch = _layers(bilm, vocab.batch_to_ids(WORD_SENTENCES))
    return _worst(
        (batch[:, i, : len(s)], expected[i])
        for i, s in enumerate(WORD_SENTENCES)
    )


def check_words_stateful():
    bilm = keras_elmo.load_bilm(
        WORD_OPTIONS, WORD_WEIGHTS, stateful=True, max_batch_size=6
    )
    vocab = elmo_core.ids.Vocabulary.from_file(VOCAB)
    pairs = []
    with h5py.File(os.path.join(WORDS, "expected_stateful.hdf5")) as f:
        for k, rows in enumerate(_json("stateful_batches.json")["batches"]):
            ids = vocab.batch_to_ids([WORD_SENTENCES[i] for i in rows])
            pairs.append((_layers(bilm, ids), f[f"batch{k}"][...]))
    return _worst(pairs)


def check_words_from_strings():
    """A NumPy string array through ELMoEmbedding: the mean of the layers
    (fixed equal mix weights) equals the fixture's."""
    bilm = keras_elmo.load_bilm(WORD_OPTIONS, WORD_WEIGHTS, vocabulary=VOCAB)
    embedding = keras_elmo.ELMoEmbedding(
        bilm, vocabulary=VOCAB, scalar_mix_weights=[0, 0, 0]
    )
    sentences = [s for s in WORD_SENTENCES if s]
    length = max(len(s) for s in sentences)
    tokens = np.array([s + [""] * (length - len(s)) for s in sentences])
    mixed = numpy(embedding(tokens))
    with h5py.File(os.path.join(WORDS, "expected_stateless.hdf5")) as f:
        expected = [
            f[str(WORD_SENTENCES.index(s))][...].mean(axis=0) for s in sentences
        ]
    return _worst(
        (mixed[i, : len(s)], expected[i]) for i, s in enumerate(sentences)
    )


def check_elmo_for_many_langs():
    pairs = []
    for model in ("char_model", "word_model"):
        bilm = _loaded(_folder(model))
        for name in ("english", "chinese"):
            sentences = META["sets"][name]
            layers = _layers(bilm, bilm.encoder.batch_to_inputs(sentences))
            pairs += [
                (layers[:, i, : len(s)], EFML[f"{model}/{name}/{i}"])
                for i, s in enumerate(sentences)
            ]
    return _worst(pairs)


def check_elmo_for_many_langs_stateful():
    bilm = keras_elmo.load_bilm(
        _folder("char_model"), stateful=True, max_batch_size=8
    )
    sentences = META["sets"]["english"]
    pairs = []
    for call, indices in enumerate(META["stateful_calls"]):
        batch = sorted((sentences[i] for i in indices), key=lambda s: -len(s))
        layers = _layers(bilm, bilm.encoder.batch_to_inputs(batch))
        pairs += [
            (
                layers[:, row, : len(s)],
                EFML[f"char_model/stateful/{call}/{row}"],
            )
            for row, s in enumerate(batch)
        ]
    return _worst(pairs)


def check_elmo_for_many_langs_from_token_lists():
    bilm = _loaded(_folder("word_model"))
    embedding = keras_elmo.ELMoEmbedding(bilm, scalar_mix_weights=[0, 0, 0])
    sentences = META["sets"]["english"][:3]
    mixed = numpy(embedding(sentences))
    return _worst(
        (mixed[i, : len(s)], EFML[f"word_model/english/{i}"].mean(axis=0))
        for i, s in enumerate(sentences)
    )


def _compat_inputs(name, model, sentences):
    if name == "characters":
        return keras_elmo.batch_to_ids(sentences)
    if name == "words":
        return elmo_core.ids.Vocabulary.from_file(VOCAB).batch_to_ids(sentences)
    bilm = next(
        x for x in model.layers if isinstance(x, keras_elmo.layers.BiLM)
    )
    return bilm.encoder.batch_to_inputs(sentences)


def check_keras_files_saved_on_tensorflow():
    with open(os.path.join(COMPAT, "sentences.json")) as f:
        sentences = json.load(f)
    expected = np.load(os.path.join(COMPAT, "expected.npz"))
    pairs = []
    for name in ("characters", "words", "elmo_for_many_langs"):
        model = keras.saving.load_model(os.path.join(COMPAT, f"{name}.keras"))
        inputs = _compat_inputs(name, model, sentences)
        pairs.append((numpy(model(inputs)), expected[name]))
    return _worst(pairs)


def check_characters_from_token_lists():
    """Token lists through ELMoEmbedding give the outputs TensorFlow's
    in-graph ids gave (the compat fixture's character model)."""
    with open(os.path.join(COMPAT, "sentences.json")) as f:
        sentences = json.load(f)
    expected = np.load(os.path.join(COMPAT, "expected.npz"))["characters"]
    embedding = keras_elmo.ELMoEmbedding(
        _shared_char_bilm(), scalar_mix_weights=[0.1, 0.5, -0.2]
    )
    return _worst([(numpy(embedding(sentences)), expected)])


def save_keras_file(out_dir):
    """A model saved on this backend, for TensorFlow to load back."""
    with open(os.path.join(COMPAT, "sentences.json")) as f:
        sentences = json.load(f)
    ids = keras_elmo.batch_to_ids(sentences)
    inputs = keras.Input(shape=(None, 50), dtype="int32")
    mix = keras_elmo.ELMoEmbedding(_char_bilm(), dropout=0.0)
    model = keras.Model(inputs, mix(inputs))
    # Moved off their initial values, so the file must carry them.
    for variable in mix.scalar_mixes[0].weights:
        size = int(np.prod(variable.shape))
        values = np.linspace(-0.5, 0.7, size).reshape(variable.shape)
        variable.assign(values.astype("float32"))
    model.save(os.path.join(out_dir, "saved.keras"))
    np.save(os.path.join(out_dir, "saved_outputs.npy"), numpy(model(ids)))
    return 0.0


def check_tensorflow_only_error():
    """The TensorFlow-only parts raise one KerasElmoError."""
    from keras_elmo.training.evaluate import evaluate

    try:
        evaluate("no-such-run", ["x.txt"])
    except keras_elmo.KerasElmoError as error:
        if "TensorFlow backend only" not in str(error):
            raise
        return 0.0
    raise AssertionError("evaluate ran on a non-TensorFlow backend")


def check_docs_examples():
    """The documentation's Python blocks that pick this backend (README.md
    and docs/) run, and print what they say they print."""
    from tests import docs_blocks

    found = docs_blocks.other_backend_blocks(keras.backend.backend())
    if not found:
        raise AssertionError("no documentation block picks this backend")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for block in found:
            docs_blocks.run_python(block, {})
    finally:
        os.chdir(cwd)
    return 0.0


CHECKS = [
    check_bilm_tf_stateless,
    check_bilm_tf_stateful,
    check_mixed_precision,
    check_words_stateless,
    check_words_stateful,
    check_words_from_strings,
    check_elmo_for_many_langs,
    check_elmo_for_many_langs_stateful,
    check_elmo_for_many_langs_from_token_lists,
    check_characters_from_token_lists,
    check_keras_files_saved_on_tensorflow,
    check_tensorflow_only_error,
    check_docs_examples,
]


# Run by `--run_large` only (tests/test_backends.py's `large` checks):
# variants of what the default checks cover (stateful twins, reduced
# precisions, empty batches, a fine-tuning run), and the documentation's
# blocks for this backend (~45 s of JAX compilation; the layers they call
# are checked by default).
LARGE = {
    "docs_examples",
    "bilm_tf_stateful",
    "words_stateful",
    "elmo_for_many_langs_stateful",
    "mixed_precision",
    "empty_batches",
    "jax_fit_tagger",
    "torch_finetune_example",
}


def main(reference, out_dir, part="default"):
    results = {"backend": keras.backend.backend(), "part": part}
    tasks = [(c.__name__[6:], c) for c in CHECKS]
    tasks.append(("save_keras_file", lambda: save_keras_file(out_dir)))
    tasks.append(("gradients", lambda: gradients.compare(reference)))
    rows = os.path.join(os.path.dirname(reference), "distinct_tokens.npz")
    tasks.append(("distinct_tokens", lambda: distinct_tokens.compare(rows)))
    loops = os.path.join(os.path.dirname(reference), "recurrence.npz")
    tasks.append(("recurrence", lambda: recurrence.compare(loops)))
    empty = os.path.join(os.path.dirname(reference), "empty_batches.npz")
    tasks.append(("empty_batches", lambda: empty_batches.compare(empty)))
    if results["backend"] == "torch":
        gradients.pack_every_torch_weight()
        unpacked = gradients.torch_unpacked_gradients
        tasks.append(("gradients_unpacked", lambda: unpacked(reference)))
    tasks += [(n, f) for n, f in gradients.backend_checks().items()]
    tasks = [(n, f) for n, f in tasks if (n in LARGE) == (part == "large")]
    for name, check in tasks:
        start = time.perf_counter()
        try:
            value = check()
        except Exception:  # noqa: BLE001 - reported to the parent
            value = {"error": traceback.format_exc(limit=8)}
        results[name] = value
        print(f"{name}: {value} ({time.perf_counter() - start:.1f} s)")
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:4])
