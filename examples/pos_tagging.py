"""Downstream: a UPOS tagger with ELMo, the way the paper uses it.

    python examples/pos_tagging.py [--quick] [--seeds 1,2,3] [--models b,e]

Trains BiLSTM taggers for the 17 Universal POS tags on UD English-EWT
(`data/ud_english_ewt/`, CC BY-SA 4.0) with `model.fit`, and reports their
dev-set token accuracy, on all dev words and separately on the words in and
out of the tagger's training vocabulary:

  (a) trainable word embeddings only;
  (b) the same plus `ELMoEmbedding` concatenated at the input;
  (c) ELMo at both the input and the output of the task BiLSTM: two
      independent scalar mixes of one biLM pass (Peters et al. 2018, §3.3);
  (d) ELMo alone at the input (no task word embeddings);
  (e) task word embeddings + ELMo from a word-input biLM (a token table
      instead of the char CNN) of the same LSTM size, trained like the
      main job's biLM on the same corpus, vocabulary, steps and batches.

(b) against (e) asks whether characters matter; (b) against (d) whether
task word vectors still add to ELMo. (a), (b), (d) and (e) run once per
seed (`--seeds`, three by default) and are reported as mean and spread;
(c) runs with the first seed.

ELMo gets dropout and an L2 penalty (0.001) on its mix weights; the biLM is
frozen. The script prints the learned mix weights (softmax of the scalar
weights per biLM layer, and gamma) and writes everything to
`<output>/results.json`.

The character biLM is the one the main job (`python
examples/pretrain_gutenberg.py`) exports to `runs/gutenberg/export/`, or
any other biLM given as every `keras-elmo` command takes it: `--model`
(a pretrained name such as `original`, an export or run folder, a
`.keras` file, ...) or `--options` and `--weights` (the large published
models are much slower on a CPU). The word biLM is
the one `python examples/pretrain_gutenberg_words.py` exports to
`runs/gutenberg_words/export/`; when it is missing this script trains it
first (and says so), or skips (e) with `--skip-word-bilm`. `--quick` is a
smoke run of about a minute that needs nothing but the repository: the tiny
test-fixture biLMs (characters and words), a few hundred sentences, one
epoch and one seed.

Padding never counts: the tokens (`""` pads) and word ids (0 pads) carry a
Keras mask through the embeddings and the BiLSTM to the output, and Keras
leaves masked positions out of the loss and the accuracy metric; the dev
accuracy reported is computed from the predictions of real tokens only.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import time

# Keep TensorFlow's start-up logs out of the progress report; this must be
# set before TensorFlow is imported.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from keras_elmo_cli.arguments import add_bilm_source  # noqa: E402

MODELS = {
    "a": "(a) word embeddings",
    "b": "(b) + ELMo at the input",
    "c": "(c) + ELMo at input and output",
    "d": "(d) ELMo alone at the input",
    "e": "(e) word emb. + word-biLM ELMo",
}
DEFAULT_SEEDS = "1,2,3"


def build_parser():
    """The example's flags (TensorFlow-free: `--help` and a wrong flag
    answer before it loads)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: test-fixture biLMs, 200 sentences, one epoch, the "
        "first seed only",
    )
    add_bilm_source(parser)  # --model, or --options and --weights
    parser.add_argument(
        "--skip-word-bilm",
        action="store_true",
        help="leave out model (e) and its word-input biLM",
    )
    parser.add_argument(
        "--output",
        help="results folder (default runs/pos_tagging, or "
        "runs/pos_tagging_quick with --quick)",
    )
    parser.add_argument("--epochs", type=int, help="override the epochs")
    parser.add_argument(
        "--seeds",
        default=DEFAULT_SEEDS,
        help="seeds for (a), (b), (d), (e), comma-separated; (c) uses the "
        "first (default %(default)s)",
    )
    parser.add_argument(
        "--models",
        default=",".join(MODELS),
        help="which models to train, comma-separated letters (default "
        "%(default)s; e.g. b to compare two character biLMs)",
    )
    return parser


if __name__ == "__main__":
    build_parser().parse_args()

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import elmo_core  # noqa: E402
import keras_elmo  # noqa: E402
from elmo_core.errors import KerasElmoError  # noqa: E402
from elmo_core.files import atomic_output  # noqa: E402
from keras_elmo_cli.arguments import bilm_source  # noqa: E402
from keras_elmo_cli.arguments import bilm_vocabulary  # noqa: E402
from keras_elmo_cli.messages import command_line_message  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data", "ud_english_ewt")
TRAIN = os.path.join(DATA, "train.upos.tsv")
DEV = os.path.join(DATA, "dev.upos.tsv")
MAIN_JOB_EXPORT = os.path.join(ROOT, "runs", "gutenberg", "export")
EXPORT_FILES = ("options.json", "weights.hdf5")
WORD_BILM_EXPORT = os.path.join(ROOT, "runs", "gutenberg_words", "export")
WORD_BILM_SCRIPT = os.path.join(ROOT, "examples", "pretrain_gutenberg_words.py")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
FIXTURE_MODEL = os.path.join(FIXTURES, "bilm-tf", "model")
FIXTURE_WORD_MODEL = os.path.join(FIXTURES, "bilm-tf-words", "model")
UPOS = [
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM",
    "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
]  # fmt: skip
# Models trained once per seed; the others once, with the first seed.
SEEDED = ("a", "b", "d", "e")
# Which biLM each model's ELMo comes from (None: no ELMo).
ELMO_SOURCE = {"a": None, "b": "char", "c": "char", "d": "char", "e": "word"}
PAD_ID = 0
OOV_ID = 1
INPUT_DTYPES = {"tokens": tf.string, "word_ids": tf.int32}

# Settings of the full run; `--quick` shrinks the data and the epochs.
FULL = dict(
    train_sentences=None,
    dev_sentences=None,
    epochs=6,
    batch_size=32,
    learning_rate=0.001,
    word_dim=100,
    units=100,
    dropout=0.5,
    elmo_dropout=0.5,
    l2_coef=0.001,
    min_word_count=2,
)
QUICK = dict(FULL, train_sentences=200, dev_sentences=100, epochs=1)


# === Data ===


def read_tagged(path, limit=None):
    """Reads `FORM<TAB>UPOS` lines, a blank line after each sentence, into
    a list of `(words, tags)` pairs (the first `limit` sentences)."""
    sentences, words, tags = [], [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                word, tag = line.split("\t")
                words.append(word)
                tags.append(tag)
                continue
            if words:
                sentences.append((words, tags))
                words, tags = [], []
            if limit is not None and len(sentences) == limit:
                return sentences
    if words:
        sentences.append((words, tags))
    return sentences


def build_vocabulary(sentences, min_count):
    """Word -> id for the training words seen at least `min_count` times;
    0 is padding and 1 the shared id of every other word (so the
    out-of-vocabulary vector is trained on the rare words)."""
    counts = collections.Counter(w for words, _ in sentences for w in words)
    kept = sorted(w for w, n in counts.items() if n >= min_count)
    return {w: i for i, w in enumerate(kept, start=OOV_ID + 1)}


def pad_batch(sentences, vocabulary):
    """One padded batch: `({"tokens", "word_ids"}, tags)` NumPy arrays of
    shape `(batch, longest sentence)`. Tokens pad with `""` and word ids
    with 0; tags pad with 0 too, but those positions are masked."""
    length = max(len(words) for words, _ in sentences)
    tokens = np.full((len(sentences), length), "", dtype=object)
    word_ids = np.full((len(sentences), length), PAD_ID, dtype="int32")
    tags = np.zeros((len(sentences), length), dtype="int32")
    tag_ids = {t: i for i, t in enumerate(UPOS)}
    for i, (words, labels) in enumerate(sentences):
        tokens[i, : len(words)] = words
        word_ids[i, : len(words)] = [vocabulary.get(w, OOV_ID) for w in words]
        tags[i, : len(words)] = [tag_ids[t] for t in labels]
    return {"tokens": tokens, "word_ids": word_ids}, tags


def bucketed_batches(sentences, vocabulary, batch_size, rng=None):
    """Batches of sentences of similar length, to keep padding small.

    With `rng`, the sentences are shuffled, then sorted by length within
    pools of 50 batches, and the batches shuffled; without, they are sorted
    by length (for evaluation)."""
    order = np.arange(len(sentences))
    pool = len(sentences)
    if rng is not None:
        rng.shuffle(order)
        pool = 50 * batch_size
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(
            order[start : start + pool], key=lambda i: len(sentences[i][0])
        )
        for k in range(0, len(chunk), batch_size):
            batches.append([sentences[i] for i in chunk[k : k + batch_size]])
    if rng is not None:
        rng.shuffle(batches)
    return [pad_batch(batch, vocabulary) for batch in batches]


def make_dataset(sentences, vocabulary, batch_size, input_names, seed):
    """A `tf.data.Dataset` of `(inputs, tags)` batches, reshuffled each
    epoch (deterministically, from `seed`)."""
    rng = np.random.default_rng(seed)

    def generate():
        for x, y in bucketed_batches(sentences, vocabulary, batch_size, rng):
            yield {name: x[name] for name in input_names}, y

    signature = (
        {
            name: tf.TensorSpec((None, None), INPUT_DTYPES[name])
            for name in input_names
        },
        tf.TensorSpec((None, None), tf.int32),
    )
    dataset = tf.data.Dataset.from_generator(
        generate, output_signature=signature
    )
    # Pools hold whole batches, so every epoch has ceil(n / batch_size)
    # batches; telling tf.data lets Keras know where an epoch ends.
    num_batches = -(-len(sentences) // batch_size)
    dataset = dataset.apply(
        tf.data.experimental.assert_cardinality(num_batches)
    )
    return dataset.prefetch(2)


# === Model ===


def build_tagger(
    name, num_words, bilm, settings, num_steps=None, word_vocabulary=None
):
    """The BiLSTM tagger `name` ("a" to "e", see `MODELS`), compiled; with
    `num_steps`, the learning rate decays to a tenth over that many steps.
    `bilm` is the biLM of its ELMo (the word-input one for "e", whose
    `word_vocabulary` the ELMo layer looks tokens up in).

    ELMo gets only its own dropout (inside `ELMoEmbedding`); the word
    embeddings and the BiLSTM output get theirs before they are
    concatenated with it. Masks flow from the inputs (word id 0, token
    `""`) through the concatenations and the BiLSTM to the softmax output,
    where Keras applies them to the loss and to the accuracy metric.
    """
    inputs, features = {}, []
    if name != "d":
        word_ids = keras.Input((None,), dtype="int32", name="word_ids")
        inputs["word_ids"] = word_ids
        x = keras.layers.Embedding(
            num_words,
            settings["word_dim"],
            mask_zero=True,
            name="word_embedding",
        )(word_ids)
        features.append(
            keras.layers.Dropout(settings["dropout"], name="word_dropout")(x)
        )
    elmo_at_output = None
    if ELMO_SOURCE[name] is not None:
        tokens = keras.Input((None,), dtype="string", name="tokens")
        inputs["tokens"] = tokens
        # One biLM pass; with two representations the layer returns two
        # independently mixed (and independently dropped-out) ELMo vectors.
        elmo = keras_elmo.layers.ELMoEmbedding(
            bilm,
            num_output_representations=2 if name == "c" else 1,
            dropout=settings["elmo_dropout"],
            l2_coef=settings["l2_coef"],
            vocabulary=word_vocabulary,
            name="elmo",
        )(tokens)
        features.append(elmo[0] if name == "c" else elmo)
        if name == "c":
            elmo_at_output = elmo[1]
    if len(features) == 1:
        x = features[0]
    else:
        x = keras.layers.Concatenate(name="input_concat")(features)
    x = keras.layers.Bidirectional(
        keras.layers.LSTM(settings["units"], return_sequences=True),
        name="bilstm",
    )(x)
    x = keras.layers.Dropout(settings["dropout"], name="bilstm_dropout")(x)
    if elmo_at_output is not None:
        x = keras.layers.Concatenate(name="output_concat")([x, elmo_at_output])
    tags = keras.layers.Dense(len(UPOS), activation="softmax", name="tags")(x)
    model = keras.Model(inputs, tags, name=f"tagger_{name}")
    learning_rate = settings["learning_rate"]
    if num_steps:
        learning_rate = keras.optimizers.schedules.CosineDecay(
            learning_rate, num_steps, alpha=0.1
        )
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def predict_function(model):
    """The model's forward pass as a `tf.function` traced once for batches
    of any shape (Keras's own `predict_on_batch` retraces per shape)."""
    signature = {
        name: tf.TensorSpec((None, None), INPUT_DTYPES[name])
        for name in model.input
    }
    return tf.function(
        lambda x: model(x, training=False), input_signature=[signature]
    )


def masked_accuracy(predict, batches):
    """Token accuracy over real tokens only, from the predictions of
    `predict` (see `predict_function`): `(correct, total)`."""
    counts = split_accuracy(predict, batches)
    return counts["all"]


def split_accuracy(predict, batches):
    """`{"all", "iv", "oov"}: (correct, total)` over real tokens: all of
    them, those in the tagger's training vocabulary, and the others
    (out-of-vocabulary: word id `OOV_ID`)."""
    counts = {key: [0, 0] for key in ("all", "iv", "oov")}
    names = list(predict.input_signature[0])
    for x, tags in batches:
        probs = np.asarray(predict({k: x[k] for k in names}))
        right = np.argmax(probs, axis=-1) == tags
        real = x["word_ids"] != PAD_ID
        oov = x["word_ids"] == OOV_ID
        for key, where in (("all", real), ("iv", real & ~oov), ("oov", oov)):
            counts[key][0] += int(np.sum(right & where))
            counts[key][1] += int(np.sum(where))
    return {key: tuple(value) for key, value in counts.items()}


def mix_weights(model):
    """The learned scalar mixes of the model's ELMo layer: a list of
    `{"name", "weights" (softmax of s, one per biLM layer), "gamma"}`."""
    if "tokens" not in model.input:
        return []
    mixes = model.get_layer("elmo").scalar_mixes
    names = ["input"] if len(mixes) == 1 else ["input", "output"]
    return [
        {
            "name": name,
            "weights": [
                float(w)
                for w in keras.ops.convert_to_numpy(
                    keras.ops.softmax(mix.scalar_weights)
                )
            ],
            "gamma": float(keras.ops.convert_to_numpy(mix.gamma)),
        }
        for name, mix in zip(names, mixes)
    ]


class DevAccuracy(keras.callbacks.Callback):
    """Prints the masked dev accuracy after each epoch and keeps the time
    it takes, so that it can be left out of the training time."""

    def __init__(self, predict, batches):
        super().__init__()
        self.predict = predict
        self.batches = batches
        self.seconds = 0.0
        self.history = []

    def on_epoch_end(self, epoch, logs=None):
        started = time.time()
        correct, total = masked_accuracy(self.predict, self.batches)
        self.seconds += time.time() - started
        self.history.append(correct / total)
        print(
            f"  epoch {epoch + 1}: train loss {logs['loss']:.4f}, "
            f"train acc {logs['accuracy']:.4f}, dev acc {correct / total:.4f}",
            flush=True,
        )


def fit_tagger(
    name,
    train,
    dev_batches,
    vocabulary,
    bilm,
    settings,
    seed,
    word_vocabulary=None,
):
    """Builds and trains tagger `name`, printing its dev accuracy after
    each epoch; returns `(model, predict, train_seconds, dev accuracy per
    epoch)` (`predict`: `predict_function(model)`)."""
    keras.utils.set_random_seed(seed)
    batch_size = settings["batch_size"]
    num_steps = settings["epochs"] * -(-len(train) // batch_size)
    model = build_tagger(
        name,
        len(vocabulary) + 2,
        bilm,
        settings,
        num_steps=num_steps,
        word_vocabulary=word_vocabulary,
    )
    names = list(model.input)
    dataset = make_dataset(train, vocabulary, batch_size, names, seed)
    predict = predict_function(model)
    dev = DevAccuracy(predict, dev_batches)
    started = time.time()
    model.fit(
        dataset,
        epochs=settings["epochs"],
        callbacks=[dev],
        shuffle=False,  # the dataset reshuffles itself
        verbose=0,
    )
    train_seconds = time.time() - started - dev.seconds
    return model, predict, train_seconds, dev.history


def train_tagger(
    name,
    train,
    dev_batches,
    vocabulary,
    bilm,
    settings,
    seed,
    word_vocabulary=None,
):
    """Builds, trains and evaluates tagger `name`; returns its results."""
    model, predict, train_seconds, history = fit_tagger(
        name,
        train,
        dev_batches,
        vocabulary,
        bilm,
        settings,
        seed,
        word_vocabulary=word_vocabulary,
    )
    counts = split_accuracy(predict, dev_batches)
    correct, total = counts["all"]
    return {
        "name": name,
        "description": MODELS[name],
        "seed": seed,
        "dev_accuracy": correct / total,
        "dev_correct": correct,
        "dev_tokens": total,
        "iv_accuracy": counts["iv"][0] / max(counts["iv"][1], 1),
        "iv_tokens": counts["iv"][1],
        "oov_accuracy": counts["oov"][0] / max(counts["oov"][1], 1),
        "oov_tokens": counts["oov"][1],
        "dev_accuracy_per_epoch": history,
        "train_seconds": train_seconds,
        "trainable_parameters": int(
            sum(np.prod(w.shape) for w in model.trainable_weights)
        ),
        "mixes": mix_weights(model),
    }


# === Report ===


def layer_names(num_layers):
    return ["token"] + [f"LSTM {i}" for i in range(1, num_layers + 1)]


def summarize(models):
    """Per model name: mean and spread (sample standard deviation, min,
    max) over its seeds of the accuracies and training time, and the mean
    mix weights."""
    summary = {}
    for name in MODELS:
        runs = [m for m in models if m["name"] == name]
        if not runs:
            continue
        entry = {
            "description": MODELS[name],
            "seeds": [r["seed"] for r in runs],
        }
        for key in ("dev_accuracy", "iv_accuracy", "oov_accuracy"):
            values = np.array([r[key] for r in runs])
            entry[key] = {
                "mean": float(values.mean()),
                "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
                "min": float(values.min()),
                "max": float(values.max()),
            }
        entry["train_seconds"] = float(
            np.mean([r["train_seconds"] for r in runs])
        )
        entry["mixes"] = [
            {
                "name": mix["name"],
                "weights": np.mean(
                    [r["mixes"][i]["weights"] for r in runs], axis=0
                ).tolist(),
                "gamma": float(np.mean([r["mixes"][i]["gamma"] for r in runs])),
            }
            for i, mix in enumerate(runs[0]["mixes"])
        ]
        summary[name] = entry
    return summary


def _percent(stats):
    text = f"{100 * stats['mean']:.2f}"
    if stats["std"]:
        text += f" ± {100 * stats['std']:.2f}"
    return text


def print_report(results):
    for key, bilm in results["bilms"].items():
        print(f"\n{key} biLM: {bilm['source']} ({bilm['description']})")
        if bilm.get("perplexity") is not None:
            print(f"  held-out perplexity {bilm['perplexity']:.1f}")
    print(
        "\ndev token accuracy (%), mean ± standard deviation over the seeds; "
        "IV / OOV: words in / out of the tagger's training vocabulary"
    )
    header = f"{'model':<34} {'seeds':>5} {'dev acc':>14} {'IV acc':>14}"
    print(header + f" {'OOV acc':>14} {'train time':>11}")
    summary = results["summary"]
    for name, entry in summary.items():
        print(
            f"{entry['description']:<34} {len(entry['seeds']):>5} "
            f"{_percent(entry['dev_accuracy']):>14} "
            f"{_percent(entry['iv_accuracy']):>14} "
            f"{_percent(entry['oov_accuracy']):>14} "
            f"{entry['train_seconds'] / 60:>7.1f} min"
        )
    print("\nmix weights: softmax(s) per biLM layer, and gamma (seed mean)")
    names = next(iter(results["bilms"].values()))["layers"]
    print(f"{'model, mix':<16}" + "".join(f"{n:>9}" for n in names), "   gamma")
    for name, entry in summary.items():
        for mix in entry["mixes"]:
            label = f"({name}) {mix['name']}"
            print(
                f"{label:<16}"
                + "".join(f"{w:>9.3f}" for w in mix["weights"])
                + f"{mix['gamma']:>9.3f}"
            )
    print(f"\ntotal wall time {results['total_seconds'] / 60:.1f} minutes")


# === The biLMs ===


def fail(error):
    """Exits with a user mistake in the flags' words, as the commands do."""
    flags = {name: f"--{name}" for name in ("model", "options", "weights")}
    flags.update(source="--model", bilm_vocab="--bilm-vocab")
    sys.exit(f"pos_tagging.py: error: {command_line_message(error, flags)}")


def resolve_bilm(args):
    """`(biLM, where it came from in words)`: the character biLM, given as
    every `keras-elmo` command takes it (`--model`, or `--options` and
    `--weights`); by default the main job's export (the test fixture with
    `--quick`)."""
    if args.model is None and args.options is None and args.weights is None:
        args.model = FIXTURE_MODEL if args.quick else MAIN_JOB_EXPORT
        exported = [os.path.join(args.model, n) for n in EXPORT_FILES]
        # The fixture is a bilm-tf folder (options.json, lm_weights.hdf5).
        if not args.quick and not all(map(os.path.isfile, exported)):
            sys.exit(
                f"No biLM at {MAIN_JOB_EXPORT}/ (options.json, "
                "weights.hdf5). Run the main job first:\n"
                "    python examples/pretrain_gutenberg.py\n"
                "(about 15 minutes on 2 CPU cores), or give a biLM with "
                "--model (e.g. --model original); --quick runs with the "
                "test fixture."
            )
    try:
        source = bilm_source(args)
        bilm = source.load_bilm(bilm_vocabulary(args, source))
    except (KerasElmoError, OSError) as error:
        fail(error)
    return bilm, source.description


def resolve_word_bilm(args):
    """`(options, weights, vocab)` of the word-input biLM of model (e),
    trained first when missing; None with `--skip-word-bilm`."""
    if args.skip_word_bilm:
        return None
    if args.quick:
        folder, weights = FIXTURE_WORD_MODEL, "lm_weights.hdf5"
        vocab = "vocab.txt"
    else:
        folder, weights, vocab = WORD_BILM_EXPORT, "weights.hdf5", "vocab.txt"
    paths = [os.path.join(folder, n) for n in ("options.json", weights, vocab)]
    if not all(os.path.exists(p) for p in paths):
        print(
            f"No word-input biLM at {folder}/: training it now with "
            f"{os.path.relpath(WORD_BILM_SCRIPT, ROOT)} (same corpus, "
            "vocabulary, steps and batches as the main job; about 13 "
            "minutes on 2 CPU cores). --skip-word-bilm leaves model (e) out.",
            flush=True,
        )
        code = subprocess.call([sys.executable, WORD_BILM_SCRIPT])
        if code:
            sys.exit(f"{WORD_BILM_SCRIPT} failed (exit {code}).")
    return paths


def held_out_perplexity(folder):
    """The last held-out perplexity of the run whose export is `folder`
    (or of the run `folder`), if its `history.json` is there."""
    if folder is None or not os.path.isdir(folder):
        return None
    for run in (folder, os.path.dirname(os.path.abspath(folder))):
        path = os.path.join(run, "history.json")
        if os.path.exists(path):
            break
    else:
        return None
    with open(path, encoding="utf-8") as f:
        history = json.load(f)
    return history[-1]["valid_perplexity"] if history else None


def describe_bilm(bilm, source, folder=None):
    """What results.json says of a biLM: `source`, where it came from (in
    words), and the run's perplexity when `folder` is an export or a run."""
    description = (
        f"{bilm.token_encoder} in, {bilm.num_layers + 1} layers, ELMo "
        f"vectors of {2 * bilm.projection_dim} dims, LSTMs of {bilm.units}"
    )
    return {
        "source": source,
        "token_encoder": bilm.token_encoder,
        "layers": layer_names(bilm.num_layers),
        "elmo_dim": 2 * bilm.projection_dim,
        "description": description,
        "perplexity": held_out_perplexity(folder),
    }


def parse_models(text):
    """The model letters of `--models` ("b" or "a,b,e"), in `MODELS`'
    order."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if not names or unknown:
        sys.exit(
            f"--models takes letters of {', '.join(MODELS)} separated by "
            f"commas; got {text!r}."
        )
    return [n for n in MODELS if n in names]


def parse_seeds(text):
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        seeds = []
    if not seeds:
        sys.exit(f"--seeds takes integers separated by commas; got {text!r}.")
    return seeds


def main(argv=None):
    args = build_parser().parse_args(argv)
    started = time.time()
    names = parse_models(args.models)
    settings = dict(QUICK if args.quick else FULL)
    if args.epochs is not None:
        settings["epochs"] = args.epochs
    seeds = parse_seeds(args.seeds)
    if args.quick:
        seeds = seeds[:1]
    output = args.output or os.path.join(
        ROOT, "runs", "pos_tagging_quick" if args.quick else "pos_tagging"
    )
    char_bilm, char_source = resolve_bilm(args)
    word_paths = resolve_word_bilm(args) if "e" in names else None

    train = read_tagged(TRAIN, settings["train_sentences"])
    dev = read_tagged(DEV, settings["dev_sentences"])
    vocabulary = build_vocabulary(train, settings["min_word_count"])
    dev_words = [w for words, _ in dev for w in words]
    oov = sum(w not in vocabulary for w in dev_words) / len(dev_words)
    print(
        f"UD English-EWT: train {len(train):,} sentences "
        f"({sum(len(w) for w, _ in train):,} words), dev {len(dev):,} "
        f"sentences ({len(dev_words):,} words); word vocabulary "
        f"{len(vocabulary):,} (count >= {settings['min_word_count']}), "
        f"dev out-of-vocabulary rate {100 * oov:.1f}%",
        flush=True,
    )
    bilms = {"char": char_bilm}
    info = {"char": describe_bilm(char_bilm, char_source, args.model)}
    word_vocabulary = None
    if word_paths is not None:
        word_options, word_weights, word_vocab = word_paths
        word_vocabulary = elmo_core.ids.Vocabulary.from_file(word_vocab)
        bilms["word"] = keras_elmo.load_bilm(
            word_options, word_weights, vocabulary=word_vocabulary
        )
        info["word"] = describe_bilm(
            bilms["word"],
            os.path.relpath(word_options, ROOT),
            os.path.dirname(word_options),
        )
        known = set(word_vocabulary.tokens)
        unknown = sum(w not in known for w in dev_words)
        info["word"]["dev_unknown_rate"] = unknown / len(dev_words)
    for key, bilm_info in info.items():
        print(f"{key} biLM: {bilm_info['source']} ({bilm_info['description']})")
    dev_batches = bucketed_batches(dev, vocabulary, 64)

    models = []
    for name in names:
        source = ELMO_SOURCE[name]
        if source is not None and source not in bilms:
            continue
        for seed in seeds if name in SEEDED else seeds[:1]:
            print(f"\n== {MODELS[name]}, seed {seed} ==", flush=True)
            result = train_tagger(
                name,
                train,
                dev_batches,
                vocabulary,
                bilms.get(source),
                settings,
                seed,
                word_vocabulary=word_vocabulary if source == "word" else None,
            )
            print(
                f"  dev accuracy {100 * result['dev_accuracy']:.2f}% "
                f"({result['dev_correct']:,}/{result['dev_tokens']:,}; IV "
                f"{100 * result['iv_accuracy']:.2f}%, OOV "
                f"{100 * result['oov_accuracy']:.2f}%), trained in "
                f"{result['train_seconds'] / 60:.1f} min",
                flush=True,
            )
            models.append(result)

    results = {
        "quick": args.quick,
        "bilm": info["char"],
        "bilms": info,
        "data": {
            "train_sentences": len(train),
            "dev_sentences": len(dev),
            "dev_words": len(dev_words),
            "word_vocabulary": len(vocabulary),
            "dev_oov_rate": oov,
        },
        "settings": settings,
        "seeds": seeds,
        "models": models,
        "summary": summarize(models),
        "total_seconds": time.time() - started,
    }
    path = os.path.join(output, "results.json")
    with atomic_output(path) as partial:
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    print_report(results)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
