"""Whole taggers on a device's budget, side by side: a teacher biLM and
its students (issue 64).

    python benchmarks/device_students.py --baseline 91.18 \\
        --model teacher runs/deploy_teacher runs/pos_teacher \\
        --model lstm runs/deploy_lstm runs/pos_lstm [--model ...] \\
        [--sentences 100] [--rounds 5] [--json results.json]

    python benchmarks/device_students.py --untrained BILM DEPLOY

The second form writes a `DEPLOY` folder without training the tagger:
tagger (b) of the example's full settings around the biLM `BILM` (any
`--model` source), its word vocabulary the one the trained tagger has
(UD English-EWT train, words seen twice), its other weights as
initialised; saved, and exported to the two int8 files with fused LSTMs.
Its files have the trained tagger's shapes and ops, so its latency and
file sizes are the trained tagger's (neither depends on the weights'
values): the timing without the 5-15 minutes of training a tagger per
biLM; the accuracies still come from `POS`, the trained taggers.

Each `--model NAME DEPLOY POS` names a tagger (b) of the POS example on
one biLM: `DEPLOY` is the output of `examples/deploy_tagger.py` for it
(`tagger.keras`, `tagger.json` and the int8 files it exported, their
LSTMs fused: `tagger-int8.tflite`, `tagger-int8.onnx`), `POS` the output
of `examples/pos_tagging.py --models b` for it (the dev accuracy of its
seeds; `-`: not measured in this run). The first `--model` is the
teacher. For each tagger it reports:

- the biLM's weights, the whole tagger's (its word table, BiLSTM and
  softmax besides), and the int8 file sizes of the whole tagger;
- the latency per sentence at batch 1 on one thread, LiteRT and ONNX
  Runtime int8, of the file alone (fed the ids, made before the clock
  starts: what the runtime takes) and of words in, tags out (the ids
  made in Python by `DeviceTagger` too): every file is loaded in one
  child process without TensorFlow (`DeviceTagger` of
  `examples/deploy_tagger.py`), and the
  files take turns, `--rounds` rounds over the first `--sentences` UD
  English-EWT dev sentences, each round the median per sentence; the
  teacher's time over each file's, per round, then the median of the
  rounds (on a shared machine the ratios within a round hold better than
  the times);
- tagger (b)'s dev accuracy, mean and spread over its seeds, and the
  share of the teacher's gain over the word-only tagger (a)
  (`--baseline`, its dev accuracy in percent) that it keeps.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV = os.path.join(ROOT, "data", "ud_english_ewt", "dev.upos.tsv")
FILES = {"litert": "tagger-int8.tflite", "onnx": "tagger-int8.onnx"}


def _example(name):
    """The module `examples/<name>.py`."""
    import importlib.util

    path = os.path.join(ROOT, "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dev_sentences(count):
    """The words of the first `count` dev sentences."""
    sentences, words = [], []
    with open(DEV, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                words.append(line.split("\t")[0])
            elif words:
                sentences.append(words)
                words = []
            if len(sentences) == count:
                break
    return sentences


# === The child process: the files, without TensorFlow ===


def time_files(models, sentences, rounds):
    """`{name: {runtime: [median ms a sentence, one a round]}}` for words
    in, tags out (`DeviceTagger`), and the same for the file alone, fed
    ids made before the clock starts (`runtime + " ids"`)."""
    from elmo_core.runtime import batch_to_ids

    deploy = _example("deploy_tagger")
    taggers = {}
    for name, folder in models.items():
        with open(os.path.join(folder, "tagger.json"), encoding="utf-8") as f:
            info = json.load(f)
        for runtime, file_name in FILES.items():
            path = os.path.join(folder, file_name)
            tagger = deploy.DeviceTagger(path, info, num_threads=1)
            tagger(sentences[:1])  # warm-up
            taggers[name, runtime] = tagger
    feeds = {
        name: [
            {"tokens": batch_to_ids([s]), "word_ids": tagger.word_ids([s])}
            for s in sentences
        ]
        for (name, _), tagger in taggers.items()
    }
    times = {name: {} for name in models}
    for _ in range(rounds):
        for (name, runtime), tagger in taggers.items():
            by_words = [_seconds(tagger, [s]) for s in sentences]
            by_ids = [_seconds(tagger.model, x) for x in feeds[name]]
            for key, one in ((runtime, by_words), (runtime + " ids", by_ids)):
                ms = 1000 * float(np.median(one))
                times[name].setdefault(key, []).append(ms)
    return times


def _seconds(function, value):
    started = time.perf_counter()
    function(value)
    return time.perf_counter() - started


def run_child(args):
    models = json.loads(args.child)
    times = time_files(models, dev_sentences(args.sentences), args.rounds)
    json.dump(times, sys.stdout)


# === The parent: sizes, weights, accuracies, the report ===


def weights(folder):
    """The weights of the saved tagger, and of the biLM inside it."""
    import keras

    import keras_elmo  # noqa: F401 (registers the layers)

    tagger = keras.saving.load_model(os.path.join(folder, "tagger.keras"))
    bilm = tagger.get_layer("elmo").bilm
    return {"tagger": _count(tagger), "bilm": _count(bilm)}


def _count(layer):
    return int(sum(np.prod(w.shape) for w in layer.weights))


def accuracy(folder):
    """Tagger (b)'s dev accuracy over its seeds, in percent."""
    with open(os.path.join(folder, "results.json"), encoding="utf-8") as f:
        summary = json.load(f)["summary"]["b"]
    return {k: 100 * v for k, v in summary["dev_accuracy"].items()}


def measure(args):
    models = {name: deploy for name, deploy, _ in args.model}
    load = os.getloadavg()[0]
    child = [sys.executable, os.path.abspath(__file__), "--child"]
    child += [json.dumps(models), "--sentences", str(args.sentences)]
    child += ["--rounds", str(args.rounds)]
    output = subprocess.run(child, check=True, capture_output=True, text=True)
    times = json.loads(output.stdout)
    teacher = args.model[0][0]
    rows = {}
    for name, deploy, pos in args.model:
        rows[name] = {
            "weights": weights(deploy),
            "int8_mib": {
                runtime: os.path.getsize(os.path.join(deploy, f)) / 2**20
                for runtime, f in FILES.items()
            },
            "ms": {r: float(np.median(t)) for r, t in times[name].items()},
            "speed_up": {
                runtime: float(
                    np.median(np.divide(times[teacher][runtime], rounds))
                )
                for runtime, rounds in times[name].items()
            },
            "accuracy": None if pos == "-" else accuracy(pos),
        }
    teacher_accuracy = rows[teacher]["accuracy"]
    for row in rows.values():
        if row["accuracy"] and teacher_accuracy:
            gain = teacher_accuracy["mean"] - args.baseline
            kept = (row["accuracy"]["mean"] - args.baseline) / gain
            row["gain_kept"] = float(kept)
    return {"load_average": load, "baseline": args.baseline, "models": rows}


def print_report(results):
    timed = ("litert ids", "onnx ids", "litert", "onnx")
    print(
        "| tagger on | biLM weights (tagger's) | LiteRT / ONNX int8 (MiB) | "
        "LiteRT file | ONNX file | LiteRT, words in | ONNX, words in | "
        "dev accuracy | gain kept |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, row in results["models"].items():
        size, ms, up = row["int8_mib"], row["ms"], row["speed_up"]
        times = " | ".join(f"{ms[k]:.2f} ms ({up[k]:.1f}x)" for k in timed)
        print(
            f"| {name} | {row['weights']['bilm']:,} "
            f"({row['weights']['tagger']:,}) | {size['litert']:.1f} / "
            f"{size['onnx']:.1f} | {times} | {_quality(row)} |"
        )
    print(f"load average at the start: {results['load_average']:.1f}")


def _quality(row):
    """The dev accuracy and gain kept cells of a row."""
    acc, kept = row["accuracy"], row.get("gain_kept")
    if not acc:
        return "- | -"
    return (
        f"{acc['mean']:.2f} ± {acc['std']:.2f} "
        f"({acc['min']:.2f}–{acc['max']:.2f}) | "
        + ("-" if kept is None else f"{100 * kept:.1f} %")
    )


def write_untrained(source, output):
    """The `--untrained` form: a deploy folder for tagger (b) around the
    biLM `source`, its weights as initialised (see the module docstring)."""
    import keras

    from keras_elmo import load_bilm
    from keras_elmo.export import to_litert
    from keras_elmo.export import to_onnx

    deploy, pos = _example("deploy_tagger"), _example("pos_tagging")
    keras.utils.set_random_seed(1)
    train = pos.read_tagged(pos.TRAIN)
    vocabulary = pos.build_vocabulary(train, pos.FULL["min_word_count"])
    tagger = pos.build_tagger(
        "b", len(vocabulary) + 2, load_bilm(source), pos.FULL
    )
    os.makedirs(output, exist_ok=True)
    tagger.save(os.path.join(output, "tagger.keras"))
    info = {"vocabulary": vocabulary, "tags": pos.UPOS}
    deploy.write_json(os.path.join(output, "tagger.json"), info)
    for runtime, name in FILES.items():
        write = to_litert if runtime == "litert" else to_onnx
        write(tagger, os.path.join(output, name), "int8", fused_lstm=True)
    print(f"wrote {output}: {len(vocabulary):,} words, int8 files fused")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model",
        nargs=3,
        action="append",
        metavar=("NAME", "DEPLOY", "POS"),
        help="a tagger: its name, deploy_tagger.py output, pos_tagging.py "
        "output; the first is the teacher's",
    )
    parser.add_argument(
        "--baseline",
        type=float,
        help="dev accuracy (%%) of the word-only tagger (a)",
    )
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write the results here too")
    parser.add_argument(
        "--untrained",
        nargs=2,
        metavar=("BILM", "DEPLOY"),
        help="write DEPLOY for the biLM BILM, the tagger untrained (the "
        "timing of a trained one: see above), and stop",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return run_child(args)
    if args.untrained:
        return write_untrained(*args.untrained)
    if not args.model or args.baseline is None:
        parser.error("give --baseline and at least one --model")
    results = measure(args)
    print_report(results)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
