"""Export a biLM as a SavedModel and serve it from a process without keras_elmo.

    python examples/serve_savedmodel.py [--model M] [--cache]

Uses the biLM given as every `keras-elmo` command takes it (`--model`, or
`--options` and `--weights`), else the main job's biLM
(`runs/gutenberg/export`) when it exists, else the tiny test model in
`tests/fixtures`. It exports the SavedModel, then starts
a fresh Python process in which `import keras_elmo` fails, loads the
SavedModel with `tf.saved_model.load` and answers a few sentences through
both signatures, printing the output shapes and latencies (a 20-token
sentence, a batch of 64).
"""

import argparse
import os
import subprocess
import sys
import tempfile

from keras_elmo_cli.arguments import add_bilm_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAINED = os.path.join(ROOT, "runs", "gutenberg", "export")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "bilm-tf", "model")
HELD_OUT = os.path.join(ROOT, "data", "gutenberg_lm", "valid.txt.gz")

SERVER = r"""
import sys, time
sys.modules["keras_elmo"] = None  # prove the SavedModel needs nothing of ours
import numpy as np
import tensorflow as tf

model = tf.saved_model.load(sys.argv[1])
default = model.signatures["default"]
tokens = model.signatures["tokens"]

out = default(sentences=tf.constant(["The cat sat on the mat .", "Hello !"]))
for name, value in sorted(out.items()):
    print(f"  default/{name:<14} {tuple(value.shape)}")
out = tokens(
    tokens=tf.constant([["The", "cat", "sat"], ["Hello", "!", ""]]),
    sequence_len=tf.constant([3, 2]),
)
print("  tokens/elmo         ", tuple(out["elmo"].shape))

# Real text: the first 20 tokens of held-out sentences.
import gzip
with gzip.open(sys.argv[2], "rt", encoding="utf-8") as f:
    texts = [" ".join(l.split()[:20]) for l in f if len(l.split()) >= 20]
def latency(batch, repeats=10):
    data = tf.constant(texts[:batch])
    default(sentences=data)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        default(sentences=data)["elmo"].numpy()
        times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times))
print(f"  latency, one 20-token sentence: {latency(1):.1f} ms")
print(f"  latency, batch of 64 x 20 tokens: {latency(64):.1f} ms")
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_bilm_source(parser)  # --model, or --options and --weights
    parser.add_argument("--output", help="SavedModel directory (new)")
    parser.add_argument(
        "--cache",
        action="store_true",
        help="cache the token embeddings of the run's vocabulary",
    )
    args = parser.parse_args()
    source = TRAINED if os.path.exists(TRAINED) else FIXTURE
    given = [args.model, args.options, args.weights, args.bilm_vocab]
    flags = ["--model", "--options", "--weights", "--bilm-vocab"]
    bilm = [f for flag, v in zip(flags, given) if v for f in (flag, v)]
    output = args.output or os.path.join(tempfile.mkdtemp(), "elmo")

    from keras_elmo_cli import main as cli

    command = ["export-savedmodel", *(bilm or ["--model", source]),
               "--output", output]  # fmt: skip
    vocab = os.path.join(source, "vocab.txt")
    if args.cache and os.path.exists(vocab):
        command += ["--cache-vocab", vocab]
    if cli(command):
        sys.exit("export failed")
    size = sum(
        os.path.getsize(os.path.join(d, f))
        for d, _, files in os.walk(output)
        for f in files
    )
    print(f"SavedModel: {output} ({size / 2**20:.1f} MiB)")
    print("serving from a fresh process without keras_elmo:")
    subprocess.run(
        [sys.executable, "-c", SERVER, output, HELD_OUT],
        check=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )


if __name__ == "__main__":
    main()
