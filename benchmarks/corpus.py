"""Corpus embedding on Apache Beam beside plain `keras-elmo embed`.

    python benchmarks/corpus.py [--size original] [--lines 200]
                                [--workers 1,2] [--json results.json]

Needs the beam extra. Builds a biLM of a training size (random weights;
the speed does not depend on them) and embeds the first `--lines` lines
of the bundled held-out text (data/gutenberg_lm/valid.txt.gz, about 28
tokens a line) in the same run:

- `keras-elmo embed` (one process, TensorFlow's default threads);
- `keras-elmo embed-corpus` on Beam's DirectRunner in multi-processing
  mode with each worker count of `--workers` (all layers, float32 both).

Every command runs twice, on one line and on all of them, as a fresh
process: the difference is the marginal time, so start-up (Python,
TensorFlow, Beam, loading the biLM, tracing) is reported apart from the
rate. Printed per run: wall seconds of both, the fixed cost, marginal
tokens/s, tokens/s per worker, and the pipeline's overhead against
`embed`'s marginal rate. The last lines put the per-worker rate on paper
for 100 workers and a billion tokens.

The workers share the machine's cores: at 1 worker the pipeline and
`embed` use the same cores (the equal-cores comparison); at 2 workers on
a 2-core machine each worker has one core's worth.
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = os.path.join(ROOT, "data", "gutenberg_lm", "valid.txt.gz")
BILLION = 1_000_000_000


def write_model(size, directory):
    """An export directory (options.json + weights.hdf5) of a random biLM
    of the training size `size`."""
    import keras_elmo
    from elmo_core.settings.sizes import SIZES

    bilm = keras_elmo.BiLM(**SIZES[size])
    bilm.build()
    keras_elmo.save_bilm(
        bilm,
        os.path.join(directory, "options.json"),
        os.path.join(directory, "weights.hdf5"),
    )
    return directory


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return sum(len(line.split()) for line in lines)


def timed(argv):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "keras_elmo_cli", *argv],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def commands(model, workers, directory):
    """`{name: function(input, tag) -> argv}` of each way to embed."""
    runs = {
        "keras-elmo embed": lambda text, tag: [
            "embed", "--model", model, "--input", text, "--quiet",
            "--output", os.path.join(directory, f"embed-{tag}.hdf5"),
        ],
    }  # fmt: skip
    for n in workers:
        runs[f"beam, {n} worker{'s' * (n > 1)}"] = (
            lambda text, tag, n=n: [
                "embed-corpus", "--model", model, "--input", text,
                "--output", os.path.join(directory, f"beam{n}-{tag}"),
                "--", "--direct_running_mode=multi_processing",
                f"--direct_num_workers={n}",
            ]
        )  # fmt: skip
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="original")
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--json")
    args = parser.parse_args()
    workers = [int(n) for n in args.workers.split(",")]
    with gzip.open(TEXT, "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()][: args.lines]
    results = []
    with tempfile.TemporaryDirectory() as directory:
        model = write_model(args.size, os.path.join(directory, "model"))
        one = os.path.join(directory, "one.txt")
        write_lines(one, lines[:1])
        corpus = os.path.join(directory, "corpus.txt")
        tokens = write_lines(corpus, lines) - len(lines[0].split())
        for name, argv in commands(model, workers, directory).items():
            fixed = timed(argv(one, "one"))
            total = timed(argv(corpus, "all"))
            n = int(name.split(", ")[1].split()[0]) if "," in name else 1
            results.append(
                dict(
                    run=name,
                    workers=n,
                    fixed_s=round(fixed, 1),
                    total_s=round(total, 1),
                    tokens_per_s=round(tokens / (total - fixed), 1),
                )
            )
            print(json.dumps(results[-1]), flush=True)
    report(results, tokens, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(size=args.size, tokens=tokens, runs=results), f)


def report(results, tokens, args):
    base = results[0]["tokens_per_s"]
    print(f"\n{args.size} biLM, {args.lines} lines ({tokens} tokens beyond "
          f"the first line), {os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'run':20} {'fixed s':>8} {'total s':>8} {'tokens/s':>9} "
          f"{'/worker':>8} {'overhead':>9}")  # fmt: skip
    for r in results:
        per_worker = r["tokens_per_s"] / r["workers"]
        overhead = (base / r["tokens_per_s"] - 1) * 100
        print(f"{r['run']:20} {r['fixed_s']:8.1f} {r['total_s']:8.1f} "
              f"{r['tokens_per_s']:9.0f} {per_worker:8.0f} "
              f"{overhead:8.0f}%")  # fmt: skip
    best = max(r["tokens_per_s"] / r["workers"] for r in results[1:])
    days = BILLION / (100 * best) / 86400
    print(f"On paper: 100 workers like these at {best:.0f} tokens/s each "
          f"embed 1B tokens in {days * 24:.1f} h ({days:.2f} days), plus "
          "start-up and the cluster's own overhead.")  # fmt: skip


if __name__ == "__main__":
    main()
