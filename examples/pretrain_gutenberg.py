"""The main job: pretrain a small biLM on the bundled corpus, end to end.

    python examples/pretrain_gutenberg.py [--output runs/gutenberg]

1. trains a small biLM (`--size cpu`) on `data/gutenberg_lm/train.txt.gz`
   (1.05M tokens of public-domain books) with `keras-elmo train`, validating
   on `valid.txt.gz` along the way;
2. reports the held-out perplexity (`keras-elmo evaluate`: full softmax,
   exp of the mean loss of both directions) beside two count baselines
   with the same vocabulary;
3. exports the weights in the official format (`keras-elmo export-weights`);
4. embeds two example sentences with `keras-elmo embed` and shows that the
   word "bank" gets one token embedding but two contextual vectors.

Running it again resumes an interrupted run. On 2 CPU cores it takes about
15 minutes; `--epochs` trades time for perplexity.
"""

import argparse
import collections
import json
import math
import os
import sys
import time

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data", "gutenberg_lm")
TRAIN = os.path.join(DATA, "train.txt.gz")
VALID = os.path.join(DATA, "valid.txt.gz")
SENTENCES = [
    "He sat down on the bank of the river and watched the water .",
    "She took the money to the bank in the morning .",
]


def count_baselines(vocab_tokens):
    """Add-one unigram and interpolated absolute-discounting bigram
    perplexities on the validation file, with the model's vocabulary and
    targets (every token, then </S>; unknown words are <UNK>)."""
    from keras_elmo.data.text import iter_sentences

    vocab = set(vocab_tokens)

    def mapped(sentence):
        return (
            ["<S>"]
            + [w if w in vocab else "<UNK>" for w in sentence]
            + ["</S>"]
        )

    unigrams, bigrams = collections.Counter(), collections.Counter()
    followers = collections.defaultdict(set)
    for sentence in iter_sentences(TRAIN):
        words = mapped(sentence)
        unigrams.update(words[1:])
        for a, b in zip(words, words[1:]):
            bigrams[a, b] += 1
            followers[a].add(b)
    contexts = collections.Counter()
    for (a, _), n in bigrams.items():
        contexts[a] += n
    total, size, discount = sum(unigrams.values()), len(vocab_tokens), 0.8
    log_uni = log_bi = count = 0.0
    for sentence in iter_sentences(VALID):
        words = mapped(sentence)
        for a, b in zip(words, words[1:]):
            unigram = (unigrams[b] + 1) / (total + size)
            bigram = unigram
            if contexts[a]:
                bigram = (
                    max(bigrams[a, b] - discount, 0)
                    + discount * len(followers[a]) * unigram
                ) / contexts[a]
            log_uni += math.log(unigram)
            log_bi += math.log(bigram)
            count += 1
    return math.exp(-log_uni / count), math.exp(-log_bi / count)


def train_args(run_dir, epochs):
    """The main job's `keras-elmo train` arguments (the word-input twin,
    `pretrain_gutenberg_words.py`, trains with the same ones)."""
    return [
        "train",
        "--train", TRAIN,
        "--validation", VALID,
        "--build-vocab",
        "--output", run_dir,
        "--size", "cpu",
        "--epochs", epochs,
        "--tokens-per-batch", "1024",
        "--optimizer", "adam",
        "--learning-rate", "0.003",
        "--lr-schedule", "linear",
        "--num-sampled", "2048",
        "--checkpoint-every", "310",
        # A multiple of --checkpoint-every (validation runs at
        # checkpoints); 619 was rounded up to 620 by earlier versions.
        "--validate-every", "620",
    ]  # fmt: skip


def run(argv):
    from keras_elmo.cli import main

    code = main(argv)
    if code:
        sys.exit(f"keras-elmo {argv[0]} failed (exit {code})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--output", default=os.path.join(ROOT, "runs", "gutenberg")
    )
    parser.add_argument("--epochs", default="2")
    args = parser.parse_args()
    started = time.time()
    run_dir = args.output
    export_dir = os.path.join(run_dir, "export")

    print("== 1. train ==", flush=True)
    run(train_args(run_dir, args.epochs))

    print("\n== 2. held-out perplexity ==", flush=True)
    run(["evaluate", "--model", run_dir, "--data", VALID, "--quiet"])
    with open(os.path.join(run_dir, "vocab.txt"), encoding="utf-8") as f:
        vocab = f.read().split("\n")[:-1]
    unigram, bigram = count_baselines(vocab)
    with open(os.path.join(run_dir, "history.json")) as f:
        history = json.load(f)
    print(f"baselines, same vocabulary ({len(vocab):,} tokens):")
    print(f"  add-one unigram: {unigram:.1f}")
    print(f"  interpolated bigram (absolute discounting 0.8): {bigram:.1f}")
    print("perplexity curve (valid.txt, full softmax):")
    print("  step   epoch   minutes   forward  backward      mean")
    for h in history:
        print(
            f"  {h['step']:>4}  {h['epoch']:>6.2f}  {h['elapsed_s'] / 60:>8.1f}"
            f"  {h['valid_forward_perplexity']:>8.1f}"
            f"  {h['valid_backward_perplexity']:>8.1f}"
            f"  {h['valid_perplexity']:>8.1f}"
        )

    print("\n== 3. export (official options.json + hdf5) ==", flush=True)
    run(["export-weights", "--model", run_dir, "--output", export_dir])

    print("\n== 4. embed two sentences ==", flush=True)
    sentences = os.path.join(run_dir, "sentences.txt")
    embeddings = os.path.join(run_dir, "sentences.hdf5")
    with open(sentences, "w", encoding="utf-8") as f:
        f.write("\n".join(SENTENCES) + "\n")
    run(
        [
            "embed",
            "--options", os.path.join(export_dir, "options.json"),
            "--weights", os.path.join(export_dir, "weights.hdf5"),
            "--input", sentences,
            "--output", embeddings,
            "--quiet",
        ]
    )  # fmt: skip
    with h5py.File(embeddings, "r") as f:
        layers = [f[str(i)][...] for i in range(len(SENTENCES))]
    banks = [s.split().index("bank") for s in SENTENCES]
    for i, (sentence, x) in enumerate(zip(SENTENCES, layers)):
        print(f"sentence {i}: {x.shape} (layers, tokens, 2P): {sentence}")

    def cosine(a, b):
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    a, b = (x[:, k] for x, k in zip(layers, banks))
    print('"bank" in the two sentences, cosine similarity per layer:')
    for k in range(a.shape[0]):
        name = "token layer" if k == 0 else f"LSTM layer {k}"
        print(f"  {name}: {cosine(a[k], b[k]):.3f}")
    print(f"\ndone in {(time.time() - started) / 60:.1f} minutes")


if __name__ == "__main__":
    main()
