"""Training speed: `keras-elmo train` against bilm-tf's own training code.

    python benchmarks/training.py --bilm-tf path/to/bilm-tf-checkout
        [--size small] [--steps 200] [--threads 2]
        [--mixed-precision off] [--json results.json]

Both train the same biLM (a published size, `--size`) on the bundled
corpus (`data/gutenberg_lm/train.txt.gz`, 1.05M
tokens) with bilm-tf's recipe for 1B Word: Adagrad 0.2 (accumulators from
1.0), constant rate, dropout 0.1, 8,192 sampled negatives, gradients
clipped to a global norm of 10, the vocabulary `keras-elmo train
--build-vocab` writes (43,930 tokens with the corpus of 2026-12-03;
44,034 with the one `keras-elmo prepare` made on 2026-12-05).
bilm-tf trains on batches of 64 rows x 20 unrolled steps (1,280 tokens);
ours on batches of at most 1,280 tokens (`--tokens-per-batch 1280`).

The reference is the unmodified `bilm/training.py` of a checkout of
https://github.com/allenai/bilm-tf (`--bilm-tf`, the folder holding
`bilm/`), run under TensorFlow 2's `tf.compat.v1` API: `tensorflow` is
`tensorflow.compat.v1` for it, v2 behaviour is off, and
`TF_USE_LEGACY_KERAS=1` gives it `tf.nn.rnn_cell` from `tf_keras` (bilm-tf
itself pins TensorFlow 1.2, which no current Python installs). It prints
its time every 100 batches; its rate is taken from batch 100 to its last
(graph building and the first batches left out). Ours is taken from the
`train:` progress lines in the same way, from the first line past 1/3 of
the steps to the last, as tokens of the epoch (`epoch` x the corpus's
tokens) per second.

Each prints a line; the last holds both rates (tokens/s) and the ratio
ours / bilm-tf. The two run one after the other on `--threads` cores
(`taskset`), nothing else should run.
"""

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from backends import ROOT
from backends import cpu_name

TRAIN = os.path.join(ROOT, "data", "gutenberg_lm", "train.txt.gz")
ROWS, UNROLL = 64, 20  # bilm-tf's batch: rows x unrolled steps
# The published sizes as bilm-tf options (SPEC §1): LSTM dim, projection,
# highway layers; the char CNN is the published 2,048 filters.
SIZES = {"small": (1024, 128, 1), "medium": (2048, 256, 1)}
FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512],
           [7, 1024]]  # fmt: skip

# Runs bilm-tf's `train` in its own process (argv: checkout, work folder,
# options JSON); prints its own lines.
REFERENCE = r"""
import json, os, sys
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
sys.modules["tensorflow"] = tf
sys.path.insert(0, sys.argv[1])
from bilm import training
from bilm.data import BidirectionalLMDataset
work, options = sys.argv[2], json.loads(sys.argv[3])
vocab = training.load_vocab(os.path.join(work, "vocab.txt"), 50)
options["n_tokens_vocab"] = vocab.size
data = BidirectionalLMDataset(
    os.path.join(work, "train.txt"), vocab, test=False, shuffle_on_load=True
)
out = os.path.join(work, "bilm-tf")
os.makedirs(out, exist_ok=True)
training.train(options, data, 1, out, out)
"""


def main(argv=None):
    args = _parse(argv)
    print(f"{cpu_name()}, {args.threads} threads, size {args.size}")
    with tempfile.TemporaryDirectory() as work:
        tokens = _write_corpus(work)
        ours = _ours(work, tokens, args)
        print(json.dumps({"keras-elmo train": ours}), flush=True)
        reference = _bilm_tf(work, args)
        print(json.dumps({"bilm-tf": reference}), flush=True)
    row = {
        "cpu": cpu_name(),
        "size": args.size,
        "mixed_precision": args.mixed_precision,
        "keras-elmo train tokens/s": ours,
        "bilm-tf tokens/s": reference,
        "ratio_to_bilm_tf": round(ours / reference, 2),
    }
    print(json.dumps(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(row, f, indent=2)
    return 0


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bilm-tf", required=True, help="bilm-tf checkout")
    parser.add_argument("--size", default="small", choices=sorted(SIZES))
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--mixed-precision", default="off")
    parser.add_argument("--json", help="also write the result here")
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.bilm_tf, "bilm", "training.py")):
        parser.error(f"no bilm/training.py in --bilm-tf {args.bilm_tf}")
    if args.steps < 200:
        parser.error("--steps must be at least 200 (the rate is taken past "
                     "the first 100 steps)")  # fmt: skip
    return args


def _write_corpus(work):
    """The training text, uncompressed (bilm-tf reads plain files); the
    tokens of an epoch as ours counts them: every word and one </S> a
    line."""
    with gzip.open(TRAIN, "rt", encoding="utf-8") as f:
        text = f.read()
    with open(os.path.join(work, "train.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    lines = [line.split() for line in text.splitlines() if line.strip()]
    return sum(len(words) + 1 for words in lines)


def _taskset(args):
    cores = sorted(os.sched_getaffinity(0))[: args.threads]
    return ["taskset", "-c", ",".join(map(str, cores))]


def _env(args):
    path = os.environ.get("PYTHONPATH")
    return dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="3",
        OMP_NUM_THREADS=str(args.threads),
        PYTHONPATH=ROOT if not path else os.pathsep.join([ROOT, path]),
    )


def _ours(work, tokens, args):
    """`keras-elmo train` with bilm-tf's recipe: tokens/s past the first
    third of the steps. Writes the vocabulary bilm-tf then reads."""
    run = os.path.join(work, "ours")
    command = [
        *_taskset(args), sys.executable, "-m", "keras_elmo_cli", "train",
        "--train", os.path.join(work, "train.txt"), "--build-vocab",
        "--output", run, "--size", args.size, "--steps", str(args.steps),
        "--optimizer", "adagrad", "--learning-rate", "0.2",
        "--lr-schedule", "constant", "--warmup-steps", "0",
        "--dropout", "0.1", "--num-sampled", "8192",
        "--tokens-per-batch", str(ROWS * UNROLL),
        "--mixed-precision", args.mixed_precision,
        "--checkpoint-every", str(args.steps),
    ]  # fmt: skip
    progress = re.compile(r"^train: ([\d,]+)/[\d,]+ steps .*epoch ([\d.]+)")
    points = []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env=_env(args)
    ) as process:
        for line in process.stdout:
            found = progress.match(line)
            if found:
                step = int(found.group(1).replace(",", ""))
                points.append((time.perf_counter(), step, float(found[2])))
    if process.returncode:
        sys.exit(f"keras-elmo train failed (exit {process.returncode})")
    os.replace(os.path.join(run, "vocab.txt"), os.path.join(work, "vocab.txt"))
    timed = [p for p in points if p[1] >= args.steps // 3]
    (start, _, first), (end, _, last) = timed[0], timed[-1]
    return round((last - first) * tokens / (end - start), 1)


def _bilm_tf(work, args):
    """bilm-tf's `train` for `--steps` batches: tokens/s from batch 100
    to the last."""
    units, projection, highway = SIZES[args.size]
    options = {
        "bidirectional": True,
        "char_cnn": {
            "activation": "relu", "embedding": {"dim": 16},
            "filters": FILTERS, "max_characters_per_token": 50,
            "n_characters": 261, "n_highway": highway,
        },
        "dropout": 0.1,
        "lstm": {
            "cell_clip": 3, "dim": units, "n_layers": 2, "proj_clip": 3,
            "projection_dim": projection, "use_skip_connections": True,
        },
        "all_clip_norm_val": 10.0, "n_epochs": 1,
        "n_train_tokens": ROWS * UNROLL * args.steps,
        "batch_size": ROWS, "unroll_steps": UNROLL,
        "n_negative_samples_batch": 8192,
    }  # fmt: skip
    if args.mixed_precision != "off":
        sys.exit("bilm-tf trains in float32 only: use --mixed-precision off")
    done = subprocess.run(
        [
            *_taskset(args),
            sys.executable,
            "-c",
            REFERENCE,
            args.bilm_tf,
            work,
            json.dumps(options),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        env=_env(args),
    )
    if done.returncode:
        sys.exit(f"bilm-tf's train failed:\n{done.stderr[-3000:]}")
    batches = [int(b) for b in _lines(r"^Batch (\d+),", done.stdout)]
    times = [float(t) for t in _lines(r"^Total time: ([\d.]+)", done.stdout)]
    if len(times) < 2:
        sys.exit(f"bilm-tf printed no times:\n{done.stdout[-2000:]}")
    tokens = (batches[-1] - batches[0]) * ROWS * UNROLL
    return round(tokens / (times[-1] - times[0]), 1)


def _lines(pattern, text):
    return re.findall(pattern, text, re.M)


if __name__ == "__main__":
    sys.exit(main())
