"""`keras-elmo embed` end to end, start-up included, against AllenNLP.

    python benchmarks/embed.py [--size original] [--sentences 300,1500]
        [--repeats 2] [--threads 2] [--allennlp PATH] [--json results.json]

For each count of sentences (the first lines of the bundled held-out
corpus), the command line a user runs,

    keras-elmo embed --options O --weights W --input F --output OUT --quiet

is timed from the start of its process to its exit (Python and
TensorFlow start-up, loading the weights, reading and checking the input,
the biLM, the hdf5 writes). The reference is AllenNLP's own `_ElmoBiLm`
(imported from a checkout by `allennlp_reference.py`, given by
`--allennlp` or `ALLENNLP_SRC`) on the same sentences, sorted by length,
in batches of 32, under `torch.no_grad()`, timed from its first batch to
its last: its model load and start-up are left out, ours are not. The
two take turns `--repeats` times with `--threads` cores each; the median
is reported, as tokens/s and as the ratio AllenNLP seconds / ours.

The weights are random, of the published size `--size`, written once in
the AllenNLP format by `keras_elmo.save_bilm` (as `backends.py` does).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from backends import TEXT  # benchmarks/backends.py
from backends import cpu_name
from backends import environment
from backends import write_weights

BATCH = 32


def main(argv=None):
    args = _parse(argv)
    if args.allennlp_child:
        return _allennlp_child(args)
    allennlp = args.allennlp or os.environ.get("ALLENNLP_SRC")
    print(f"{cpu_name()}, {args.threads} threads, size {args.size}")
    results = []
    with tempfile.TemporaryDirectory() as folder:
        files = write_weights(args.size, folder, args)
        for count in map(int, args.sentences.split(",")):
            text = os.path.join(folder, f"{count}.txt")
            tokens = _write_text(text, count)
            runs = {"keras-elmo embed": [], "allennlp _ElmoBiLm": []}
            for _ in range(args.repeats):
                runs["keras-elmo embed"].append(
                    _embed_seconds(files, text, folder, args)
                )
                if allennlp:
                    runs["allennlp _ElmoBiLm"].append(
                        _allennlp_seconds(files, text, allennlp, args)
                    )
            row = _row(count, tokens, runs)
            results.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_name(), "results": results}, f, indent=2)
    return 0


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="original")
    parser.add_argument("--sentences", default="300,1500")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--allennlp", help="checkout of allenai/allennlp")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--allennlp-child", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _write_text(path, count):
    """The first `count` non-empty held-out lines; their token count."""
    import gzip

    with gzip.open(TEXT, "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()][:count]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return sum(len(line.split()) for line in lines)


def _cores(args):
    return ",".join(map(str, sorted(os.sched_getaffinity(0))[: args.threads]))


def _embed_seconds(files, text, folder, args):
    output = os.path.join(folder, "out.hdf5")
    if os.path.exists(output):
        os.remove(output)
    command = [
        "taskset", "-c", _cores(args),
        sys.executable, "-m", "keras_elmo_cli",
        "embed",
        "--options", files[0],
        "--weights", files[1],
        "--input", text,
        "--output", output,
        "--quiet",
    ]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(
        command, env=environment("tensorflow", args), capture_output=True
    )
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"keras-elmo embed failed:\n{done.stderr.decode()[-2000:]}")
    return seconds


def _allennlp_seconds(files, text, allennlp, args):
    command = [
        "taskset", "-c", _cores(args),
        sys.executable, os.path.abspath(__file__),
        "--allennlp-child", json.dumps([*files, text, allennlp]),
    ]  # fmt: skip
    done = subprocess.run(
        command,
        env=environment("allennlp", args),
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"the AllenNLP run failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


def _allennlp_child(args):
    """AllenNLP's `_ElmoBiLm` over the text, batches of 32 sorted by
    length: seconds from the first batch to the last (load excluded)."""
    import allennlp_reference
    import torch

    import keras_elmo

    options, weights, text, source = json.loads(args.allennlp_child)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    bilm = allennlp_reference.load(source)._ElmoBiLm(options, weights)
    with open(text, encoding="utf-8") as f:
        sentences = [line.split() for line in f if line.strip()]
    sentences.sort(key=len, reverse=True)
    start = time.perf_counter()
    for i in range(0, len(sentences), BATCH):
        ids = torch.as_tensor(keras_elmo.batch_to_ids(sentences[i : i + BATCH]))
        bilm._elmo_lstm.reset_states()
        with torch.no_grad():
            [y.numpy() for y in bilm(ids)["activations"]]
    print(json.dumps({"seconds": time.perf_counter() - start}))
    return 0


def _row(count, tokens, runs):
    row = {"sentences": count, "tokens": tokens}
    medians = {}
    for name, seconds in runs.items():
        if seconds:
            medians[name] = float(np.median(seconds))
            row[name] = {
                "seconds": [round(s, 2) for s in seconds],
                "tokens_per_s": round(tokens / medians[name], 1),
            }
    if len(medians) == 2:
        row["ratio_to_allennlp"] = round(
            medians["allennlp _ElmoBiLm"] / medians["keras-elmo embed"], 2
        )
    return row


if __name__ == "__main__":
    sys.exit(main())
