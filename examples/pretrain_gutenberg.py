"""The main job: pretrain a small biLM on the bundled corpus, end to end.

    python examples/pretrain_gutenberg.py [--output DIR] [--minutes 15]
        [--mixed-precision auto|off|bf16|fp16]

1. trains a small biLM on `data/gutenberg_lm/train.txt.gz` (1.05M tokens
   of public-domain books) with `keras-elmo train`, with the small-corpus
   recipe `train` chooses for a corpus of this size, the precision it
   chooses for the machine (bfloat16 where the CPU computes it natively,
   else float32) and a time budget, so that the whole job takes
   `--minutes` (15) on whatever machine runs it: `train` times a step of
   the `cpu` size here and trains it where the budget buys it enough
   steps, else the smaller `mini` (it prints the speed and why), then
   plans the number of steps and the learning-rate decay to fit;
2. reports the held-out perplexity (full softmax, exp of the mean loss of
   both directions, what `keras-elmo evaluate` prints) on two texts it did
   not train on: `valid.txt.gz`, held-out books of the same kind (in
   domain), and `data/ud_english_ewt/dev.txt.gz`, web text (reviews,
   e-mails, blogs, answers: out of domain, the kind of text a biLM is used
   on downstream), each beside three count baselines with the same
   vocabulary, targets and training text: an add-one unigram, an
   interpolated bigram and an interpolated modified Kneser-Ney 5-gram
   (`keras_elmo.baselines`); the numbers also go to `heldout.json` in the
   run;
3. exports the weights in the official format (`keras-elmo export-weights`);
4. embeds two example sentences with `keras-elmo embed` and shows that the
   word "bank" gets one token embedding but two contextual vectors.

Running it again resumes an interrupted run within what is left of its
budget.
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
# Out of domain: UD English-EWT dev's sentences, tokenised as the books
# (data/ud_english_ewt/README.md). Never trained on.
OUT_OF_DOMAIN = os.path.join(ROOT, "data", "ud_english_ewt", "dev.txt.gz")
HELD_OUT = {"in domain": VALID, "out of domain": OUT_OF_DOMAIN}
SENTENCES = [
    "He sat down on the bank of the river and watched the water .",
    "She took the money to the bank in the morning .",
]


# The main job's wall time, and what it keeps of it for the steps after
# training (baselines, export, embedding: 8 s on 2 idle AMD EPYC cores,
# the 5-gram's 7 s of it; kept at more than twice that for a slower
# machine). The held-out evaluation at the end is inside the training
# budget.
MINUTES = 15.0
AFTER_TRAINING_S = 20.0
CHECKPOINT_EVERY = 310
# Held-out evaluation only at the end (a multiple of the checkpoint
# interval no run of the budget reaches): an evaluation at each epoch's end
# costs about 35 s, 100 steps' worth of the budget.
VALIDATE_EVERY = 1000 * CHECKPOINT_EVERY
# The biLM's targets: sentences cut into pieces of at most this many
# tokens (`--max-length`, the default), each piece a sentence.
MAX_LENGTH = 100


def pieces(path):
    """The sentences of `path` as the biLM reads them: cut evenly into
    pieces of at most `MAX_LENGTH` tokens."""
    from elmo_core.text.lines import iter_sentences
    from keras_elmo.data.datasets import split_lengths

    for sentence in iter_sentences(path):
        start = 0
        for length in split_lengths(len(sentence), MAX_LENGTH):
            yield sentence[start : start + length]
            start += length


def count_baselines(vocab_tokens, held_out=HELD_OUT):
    """Held-out perplexities of three count models trained on the same
    text with the model's vocabulary and targets (every token, then </S>;
    unknown words are <UNK>): add-one unigram, interpolated
    absolute-discounting bigram, interpolated modified Kneser-Ney 5-gram;
    `{name: (unigram, bigram, 5-gram)}` for each of `held_out`'s files."""
    from keras_elmo.baselines.kneser_ney import KneserNey

    ids = {token: i for i, token in enumerate(vocab_tokens)}
    unk = ids["<UNK>"]

    def mapped(path):
        return [[ids.get(w, unk) for w in s] for s in pieces(path)]

    train = mapped(TRAIN)
    bos, eos = ids["<S>"], ids["</S>"]
    kneser_ney = KneserNey(len(ids), bos, eos, order=5).fit(train)
    results = {}
    for name, path in held_out.items():
        valid = mapped(path)
        unigram, bigram = _unigram_bigram(train, valid, bos, eos, len(ids))
        results[name] = (unigram, bigram, kneser_ney.perplexity(valid))
    return results


def _unigram_bigram(train, valid, bos, eos, size):
    unigrams, bigrams = collections.Counter(), collections.Counter()
    followers = collections.defaultdict(set)
    for sentence in train:
        words = [bos, *sentence, eos]
        unigrams.update(words[1:])
        for a, b in zip(words, words[1:]):
            bigrams[a, b] += 1
            followers[a].add(b)
    contexts = collections.Counter()
    for (a, _), n in bigrams.items():
        contexts[a] += n
    total, discount = sum(unigrams.values()), 0.8
    log_uni = log_bi = count = 0.0
    for sentence in valid:
        words = [bos, *sentence, eos]
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


def train_args(run_dir, budget):
    """The main job's `keras-elmo train` arguments: a time budget (a
    duration such as "13m"); the rest, the size included, is the recipe
    `train` chooses for the corpus and the machine. The word-input twin,
    `pretrain_gutenberg_words.py`, trains with the same ones."""
    return [
        "train",
        "--train", TRAIN,
        "--validation", VALID,
        "--build-vocab",
        "--output", run_dir,
        "--time-budget", budget,
        "--checkpoint-every", str(CHECKPOINT_EVERY),
        "--validate-every", str(VALIDATE_EVERY),
    ]  # fmt: skip


def training_budget(minutes, started):
    """What is left of the job's `minutes` for training, less what the
    steps after it need, as a duration."""
    left = minutes * 60 - (time.time() - started) - AFTER_TRAINING_S
    return f"{max(left, 60):.0f}s"


def report(run_dir, history, vocab):
    """The biLM's held-out perplexities beside the count baselines: in
    domain its last evaluation (the one `keras-elmo evaluate` repeats), out
    of domain `keras-elmo evaluate`'s; also written to `heldout.json`."""
    from keras_elmo.training.evaluate import evaluate

    baselines = count_baselines(vocab, HELD_OUT)
    last = history[-1]
    bilm = {
        "in domain": {
            "perplexity": last["valid_perplexity"],
            "forward_perplexity": last["valid_forward_perplexity"],
            "backward_perplexity": last["valid_backward_perplexity"],
        },
        "out of domain": evaluate(
            run_dir, [HELD_OUT["out of domain"]], verbose=0
        ),
    }
    names = list(HELD_OUT)
    rows = [
        ("add-one unigram", [baselines[n][0] for n in names]),
        ("interpolated bigram (discount 0.8)",
         [baselines[n][1] for n in names]),
        ("interpolated modified Kneser-Ney 5-gram",
         [baselines[n][2] for n in names]),
        ("biLM", [bilm[n]["perplexity"] for n in names]),
        ("  forward", [bilm[n]["forward_perplexity"] for n in names]),
        ("  backward", [bilm[n]["backward_perplexity"] for n in names]),
    ]  # fmt: skip
    ratios = [
        bilm[name]["perplexity"] / baselines[name][2] for name in HELD_OUT
    ]
    print(
        "held-out perplexity (full softmax), same vocabulary "
        f"({len(vocab):,} tokens):"
    )
    print(f"  {'':<40}{'in domain':>12}{'out of domain':>15}")
    print(f"  {'':<40}{'(valid.txt)':>12}{'(EWT dev)':>15}")
    for label, (inside, outside) in rows:
        print(f"  {label:<40}{inside:>12.1f}{outside:>15.1f}")
    print(f"  {'biLM / 5-gram':<40}{ratios[0]:>11.3f}x{ratios[1]:>14.3f}x")
    record = {
        name: {
            "bilm": bilm[name]["perplexity"],
            "forward": bilm[name]["forward_perplexity"],
            "backward": bilm[name]["backward_perplexity"],
            "unigram": baselines[name][0],
            "bigram": baselines[name][1],
            "kneser_ney_5gram": baselines[name][2],
            "ratio_to_5gram": ratio,
            "file": os.path.relpath(HELD_OUT[name], ROOT),
        }
        for name, ratio in zip(HELD_OUT, ratios)
    }
    record["steps"] = last["step"]
    with open(os.path.join(run_dir, "heldout.json"), "w") as f:
        json.dump(record, f, indent=1)
    print("perplexity curve (valid.txt, full softmax):")
    print("  step   epoch   minutes   forward  backward      mean")
    for h in history:
        print(
            f"  {h['step']:>4}  {h['epoch']:>6.2f}  {h['elapsed_s'] / 60:>8.1f}"
            f"  {h['valid_forward_perplexity']:>8.1f}"
            f"  {h['valid_backward_perplexity']:>8.1f}"
            f"  {h['valid_perplexity']:>8.1f}"
        )


def run(argv):
    from keras_elmo_cli import main

    code = main(argv)
    if code:
        sys.exit(f"keras-elmo {argv[0]} failed (exit {code})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--output", default=os.path.join(ROOT, "runs", "gutenberg")
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=MINUTES,
        help="wall time of the whole job (default %(default)s)",
    )
    parser.add_argument(
        "--mixed-precision",
        choices=("auto", "off", "bf16", "fp16"),
        default="auto",
        help="passed to `keras-elmo train` (default auto: bfloat16 where "
        "the CPU computes it natively); off trains in float32, as on a "
        "CPU without bfloat16",
    )
    args = parser.parse_args()
    started = time.time()
    run_dir = args.output
    export_dir = os.path.join(run_dir, "export")

    print("== 1. train ==", flush=True)
    budget = training_budget(args.minutes, started)
    precision = ["--mixed-precision", args.mixed_precision]
    run(train_args(run_dir, budget) + precision)

    print("\n== 2. held-out perplexity ==", flush=True)
    with open(os.path.join(run_dir, "vocab.txt"), encoding="utf-8") as f:
        vocab = f.read().split("\n")[:-1]
    with open(os.path.join(run_dir, "history.json")) as f:
        history = json.load(f)
    report(run_dir, history, vocab)

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
