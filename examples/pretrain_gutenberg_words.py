"""The main job's twin with word inputs: a word-input biLM, trained the same.

    python examples/pretrain_gutenberg_words.py [--output runs/gutenberg_words]

Trains a biLM that reads each token as one word id (a token table of
vocabulary x 128 instead of the char CNN, as bilm-tf's word-input models)
with exactly the main job's settings (`examples/pretrain_gutenberg.py`):
the same corpus, vocabulary rule, the recipe `train` chooses for the
corpus size (batches, optimizer, schedule, negatives) and the same time
budget (15 minutes for the whole job; the word table is cheaper than the
char CNN, so more steps fit). It adds `--token-encoder words` and gives
the LSTM size, `--size cpu` (2 x 512-cell LSTMs projected to 128), where
the main job lets `train` choose it by the machine's speed. Then it reports the
held-out perplexity of `train`'s final evaluation beside the count
baselines (the Kneser-Ney 5-gram's ratio, as the main job) and the
character biLM's (same vocabulary, so all are comparable), exports the
weights in bilm-tf's word-model format and embeds the main job's two
"bank" sentences.

`examples/pos_tagging.py` uses the export for its model (e), and runs this
script itself when the export is missing. Running it again resumes an
interrupted run within what is left of its budget.
"""

import argparse
import importlib.util
import json
import os
import sys
import time

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location(
    "pretrain_gutenberg",
    os.path.join(ROOT, "examples", "pretrain_gutenberg.py"),
)
main_job = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(main_job)

CHAR_RUN = os.path.join(ROOT, "runs", "gutenberg")


def read_history(run_dir):
    """The run's `history.json` (its evaluations), [] before any."""
    path = os.path.join(run_dir, "history.json")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--output", default=os.path.join(ROOT, "runs", "gutenberg_words")
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=main_job.MINUTES,
        help="wall time of the whole job (default %(default)s)",
    )
    args = parser.parse_args()
    started = time.time()
    run_dir = args.output
    export_dir = os.path.join(run_dir, "export")
    run = main_job.run

    print("== 1. train (word inputs) ==", flush=True)
    run(
        [
            *main_job.train_args(
                run_dir, main_job.training_budget(args.minutes, started)
            ),
            "--token-encoder",
            "words",
            "--size",
            "cpu",
        ]
    )

    print("\n== 2. held-out perplexity, beside the baselines and characters ==")
    with open(os.path.join(run_dir, "vocab.txt"), encoding="utf-8") as f:
        vocab = f.read()
    history = read_history(run_dir)
    main_job.report(run_dir, history, vocab.split("\n")[:-1])
    char_vocab = os.path.join(CHAR_RUN, "vocab.txt")
    print("  biLM        step  perplexity  (forward, backward)")
    for name, runs in (
        ("words", history),
        ("characters", read_history(CHAR_RUN)),
    ):
        if not runs:
            print(f"  {name:<11} (no run yet)")
            continue
        entry = runs[-1]
        print(
            f"  {name:<11} {entry['step']:>4}  "
            f"{entry['valid_perplexity']:>10.1f}"
            f"  ({entry['valid_forward_perplexity']:.1f}, "
            f"{entry['valid_backward_perplexity']:.1f})"
        )
    if os.path.exists(char_vocab):
        with open(char_vocab, encoding="utf-8") as f:
            same = f.read() == vocab
        print(f"  same vocabulary as the character biLM: {same}")

    print("\n== 3. export (bilm-tf word-model format) ==", flush=True)
    run(["export-weights", "--model", run_dir, "--output", export_dir])

    print("\n== 4. embed two sentences ==", flush=True)
    sentences = os.path.join(run_dir, "sentences.txt")
    embeddings = os.path.join(run_dir, "sentences.hdf5")
    with open(sentences, "w", encoding="utf-8") as f:
        f.write("\n".join(main_job.SENTENCES) + "\n")
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
        layers = [f[str(i)][...] for i in range(len(main_job.SENTENCES))]
    banks = [s.split().index("bank") for s in main_job.SENTENCES]

    def cosine(a, b):
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    a, b = (x[:, k] for x, k in zip(layers, banks))
    print('"bank" in the two sentences, cosine similarity per layer:')
    for k in range(a.shape[0]):
        name = "token layer" if k == 0 else f"LSTM layer {k}"
        print(f"  {name}: {cosine(a[k], b[k]):.3f}")
    print(f"\ndone in {(time.time() - started) / 60:.1f} minutes")


if __name__ == "__main__":
    sys.exit(main())
