"""Ship the tagger to a device: train tagger (b), export it whole, run it
without TensorFlow, and measure what the files cost.

    python examples/deploy_tagger.py [--quick] [--output DIR]
                                     [--latency-sentences 256]
                                     [--measure-only]

1. trains tagger (b) of `examples/pos_tagging.py` (task word embeddings
   and `ELMoEmbedding` of the main job's biLM, `runs/gutenberg/export/`
   (or any biLM given with `--model`, or `--options` and `--weights`),
   a BiLSTM; the example's full settings, seed 1) and saves it
   (`tagger.keras`), its word vocabulary and tag names (`tagger.json`);
2. exports the whole tagger with `keras_elmo.export.to_onnx` and
   `to_litert`, float32 and int8 each, its LSTMs as the runtimes' fused
   kernels (`fused_lstm=True`: the tagger's BiLSTM, and the biLM's LSTMs
   when they are plain, a `--student-kind lstm` student's; a LiteRT
   file then takes one sentence a call);
3. runs every file in a child process that never imports TensorFlow or
   Keras, through `DeviceTagger` below (what an app on the device runs:
   the file, `tagger.json`, `elmo_core.runtime` and NumPy; words in,
   tags out), and reports on the UD English-EWT dev split: its accuracy,
   how many tags it shares with the Keras tagger, its size, and the
   latency per sentence at batch 1 and batch 32 on 1 and 2 threads (the
   median over `--latency-sentences` dev sentences; the Keras tagger on
   TensorFlow float32, all cores, is measured in the same run as the
   reference).

`--quick` is a smoke run with the test-fixture biLM, a few hundred
sentences and one epoch; `--measure-only` measures the tagger and files
of an earlier run again (step 3 and the Keras reference), for a machine
less busy than the one that trained. Results go to
`<output>/results.json` (runs/deploy_tagger/ by default), with the load
average when the timing started: latencies on a shared machine are only
as good as it was idle.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from keras_elmo_cli.arguments import add_bilm_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = {
    "onnx-float32": "tagger-float32.onnx",
    "onnx-int8": "tagger-int8.onnx",
    "litert-float32": "tagger-float32.tflite",
    "litert-int8": "tagger-int8.tflite",
}
BATCH_SIZES = (1, 32)
THREADS = (1, 2)
# Dev sentences a call when the files tag the whole dev split.
EVALUATION_BATCH = 64


class DeviceTagger:
    """What the device runs: an exported tagger and its `tagger.json`
    (word vocabulary, tag names); token lists in, tag lists out. Imports
    `elmo_core.runtime` and NumPy only.

    Args:
        path: str. A `.onnx` or `.tflite` file of the whole tagger.
        info: dict. `tagger.json`: `"vocabulary"` (word -> id, 1 for other
            words, 0 for padding) and `"tags"` (names by index).
        num_threads: int or None. Threads of one call.
    """

    def __init__(self, path, info, num_threads=None):
        from elmo_core.runtime import LiteRTModel
        from elmo_core.runtime import ONNXModel

        runtime = ONNXModel if path.endswith(".onnx") else LiteRTModel
        self.model = runtime(path, num_threads=num_threads)
        self.vocabulary = info["vocabulary"]
        self.tags = info["tags"]

    def word_ids(self, sentences):
        length = max((len(s) for s in sentences), default=0)
        ids = np.zeros((len(sentences), length), np.int32)
        for i, sentence in enumerate(sentences):
            ids[i, : len(sentence)] = [
                self.vocabulary.get(w, 1) for w in sentence
            ]
        return ids

    def __call__(self, sentences):
        inputs = {"tokens": sentences, "word_ids": self.word_ids(sentences)}
        best = np.argmax(self.model(inputs), axis=-1)
        return [
            [self.tags[k] for k in row[: len(sentence)]]
            for sentence, row in zip(sentences, best)
        ]


def write_json(path, value):
    from elmo_core.files import atomic_output

    with atomic_output(path) as partial:
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=1)


# === On the device (a child process without TensorFlow) ===


def per_sentence_ms(tag, sentences, batch_size):
    """The median time per sentence (ms) of `tag` on `sentences` cut into
    batches of `batch_size` (in order), after one warm-up call."""
    batches = [
        sentences[i : i + batch_size]
        for i in range(0, len(sentences), batch_size)
    ]
    batches = [b for b in batches if len(b) == batch_size] or batches[:1]
    tag(batches[0])
    times = []
    for batch in batches:
        started = time.perf_counter()
        tag(batch)
        times.append((time.perf_counter() - started) / len(batch))
    return 1000 * float(np.median(times))


def by_length(sentences):
    """The dev sentences in batches of similar length (fewer pads)."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    return [
        order[i : i + EVALUATION_BATCH]
        for i in range(0, len(order), EVALUATION_BATCH)
    ]


def measure_file(path, info, dev, keras_tags, latency_sentences):
    """Accuracy, agreement with Keras, size and latency of one file."""
    words = [w for w, _ in dev]
    tagger = DeviceTagger(path, info)
    predicted = [None] * len(dev)
    for batch in by_length(words):
        for i, tags in zip(batch, tagger([words[i] for i in batch])):
            predicted[i] = tags
    gold = [t for _, tags in dev for t in tags]
    flat = [t for tags in predicted for t in tags]
    keras_flat = [t for tags in keras_tags for t in tags]
    result = {
        "size_mib": os.path.getsize(path) / 2**20,
        "dev_accuracy": float(np.mean(np.array(flat) == np.array(gold))),
        "agreement": float(np.mean(np.array(flat) == np.array(keras_flat))),
        "latency_ms": {},
    }
    sample = words[:latency_sentences]
    for threads in THREADS:
        tagger = DeviceTagger(path, info, num_threads=threads)
        for batch_size in BATCH_SIZES:
            key = f"batch {batch_size}, {threads} thread(s)"
            result["latency_ms"][key] = per_sentence_ms(
                tagger, sample, batch_size
            )
    return result


def run_device(output, latency_sentences):
    """The child: every file measured, TensorFlow never imported."""
    with open(os.path.join(output, "tagger.json"), encoding="utf-8") as f:
        info = json.load(f)
    with open(os.path.join(output, "dev.json"), encoding="utf-8") as f:
        dev_data = json.load(f)
    results = {}
    for name, file_name in FILES.items():
        results[name] = measure_file(
            os.path.join(output, file_name),
            info,
            dev_data["dev"],
            dev_data["keras_tags"],
            latency_sentences,
        )
        print(f"  measured {file_name}", flush=True)
    loaded = [m for m in ("tensorflow", "keras") if m in sys.modules]
    if loaded:
        sys.exit(f"the device process imported {loaded}")
    write_json(os.path.join(output, "device.json"), results)


# === On the training machine ===


def _pos_tagging():
    import importlib.util

    path = os.path.join(ROOT, "examples", "pos_tagging.py")
    spec = importlib.util.spec_from_file_location("pos_tagging", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train(pos, args, output):
    """Tagger (b), trained and saved with its vocabulary and tag names;
    returns `(model, dev sentences, its word vocabulary)`."""

    settings = dict(pos.QUICK if args.quick else pos.FULL)
    train_set = pos.read_tagged(pos.TRAIN, settings["train_sentences"])
    dev = pos.read_tagged(pos.DEV, settings["dev_sentences"])
    vocabulary = pos.build_vocabulary(train_set, settings["min_word_count"])
    bilm, source = pos.resolve_bilm(args)
    print(f"biLM: {source}", flush=True)
    dev_batches = pos.bucketed_batches(dev, vocabulary, 64)
    model, predict, seconds, _ = pos.fit_tagger(
        "b", train_set, dev_batches, vocabulary, bilm, settings, seed=1
    )
    print(f"trained tagger (b) in {seconds / 60:.1f} min", flush=True)
    model.save(os.path.join(output, "tagger.keras"))
    info = {"vocabulary": vocabulary, "tags": pos.UPOS}
    write_json(os.path.join(output, "tagger.json"), info)
    return model, predict, dev, vocabulary


def keras_tags(pos, predict, dev, vocabulary):
    """The Keras tagger's tags of every dev sentence, in order."""
    tags = []
    for start in range(0, len(dev), EVALUATION_BATCH):
        chunk = dev[start : start + EVALUATION_BATCH]
        x, _ = pos.pad_batch(chunk, vocabulary)
        best = np.argmax(np.asarray(predict(x)), axis=-1)
        for (words, _), row in zip(chunk, best):
            tags.append([pos.UPOS[k] for k in row[: len(words)]])
    return tags


def keras_latency(pos, predict, dev, vocabulary, latency_sentences):
    """The Keras tagger's latency per sentence (TensorFlow, all cores)."""
    sample = dev[:latency_sentences]

    def tag(chunk):
        x, _ = pos.pad_batch(chunk, vocabulary)
        return np.asarray(predict(x))

    return {
        f"batch {size}, all cores": per_sentence_ms(tag, sample, size)
        for size in BATCH_SIZES
    }


def export(model, output):
    from keras_elmo.export import to_litert
    from keras_elmo.export import to_onnx

    for name, file_name in FILES.items():
        runtime, precision = name.split("-")
        write = to_onnx if runtime == "onnx" else to_litert
        started = time.time()
        # The tagger's BiLSTM (and a biLM of plain LSTMs) as the
        # runtime's fused LSTM kernel: the fastest it runs them. Its word
        # table is stored int8 and read a row at a time already.
        path = os.path.join(output, file_name)
        write(model, path, precision=precision, fused_lstm=True)
        print(
            f"exported {file_name} in {time.time() - started:.0f} s", flush=True
        )


def cpu_description():
    """The CPU model and the SIMD flags that matter to int8 kernels."""
    model, flags = "unknown", []
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown":
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = [x for x in value.split() if x in wanted]
    return f"{model} [{' '.join(flags)}], {os.cpu_count()} CPUs"


def print_report(results):
    keras_accuracy = results["keras"]["dev_accuracy"]
    columns = [f"b{b} t{t}" for t in THREADS for b in BATCH_SIZES]
    print(
        f"\nUD English-EWT dev, {results['dev_tokens']:,} tokens; "
        f"{results['cpu']}; load average {results['load_average']:.1f}"
    )
    print(
        f"{'model':<24}{'MiB':>7}{'dev acc':>9}{'vs Keras':>9}{'same tag':>9}"
        + "".join(f"{c:>9}" for c in columns)
        + "   (ms per sentence, b = batch, t = threads)"
    )
    keras = results["keras"]
    latency = keras["latency_ms"]
    print(
        f"{'Keras, TF float32':<24}{'':>7}{100 * keras_accuracy:>9.2f}"
        f"{'':>9}{'':>9}"
        + "".join(
            f"{latency[f'batch {b}, all cores']:>9.2f}"
            for _ in THREADS
            for b in BATCH_SIZES
        )
        + "   (TensorFlow: all cores)"
    )
    for name, file_name in FILES.items():
        entry = results["files"][name]
        delta = 100 * (entry["dev_accuracy"] - keras_accuracy)
        print(
            f"{file_name:<24}{entry['size_mib']:>7.1f}"
            f"{100 * entry['dev_accuracy']:>9.2f}{delta:>+9.2f}"
            f"{100 * entry['agreement']:>9.2f}"
            + "".join(
                f"{entry['latency_ms'][f'batch {b}, {t} thread(s)']:>9.2f}"
                for t in THREADS
                for b in BATCH_SIZES
            )
        )
    for runtime in ("onnx", "litert"):
        ratio = (
            results["files"][f"{runtime}-int8"]["size_mib"]
            / results["files"][f"{runtime}-float32"]["size_mib"]
        )
        print(f"{runtime} int8 file: {100 * ratio:.0f}% of float32")


def reload(pos, output):
    """The tagger of an earlier run (`--measure-only`): the model from
    `tagger.keras`, its prediction function, the dev sentences and the
    word vocabulary."""
    from keras_elmo.sources import KerasFile

    # The audited load of the command line (`--model tagger.keras`).
    model = KerasFile(os.path.join(output, "tagger.keras")).load_model()
    with open(os.path.join(output, "tagger.json"), encoding="utf-8") as f:
        vocabulary = json.load(f)["vocabulary"]
    with open(os.path.join(output, "dev.json"), encoding="utf-8") as f:
        dev = [tuple(pair) for pair in json.load(f)["dev"]]
    return model, pos.predict_function(model), dev, vocabulary


def measure(pos, predict, dev, vocabulary, output, args):
    """Everything of `results.json` but the training: the Keras tagger's
    tags, accuracy and latency here, then the files' in a child process
    without TensorFlow."""
    tags = keras_tags(pos, predict, dev, vocabulary)
    gold = np.array([t for _, labels in dev for t in labels])
    keras_flat = np.array([t for labels in tags for t in labels])
    write_json(
        os.path.join(output, "dev.json"), {"dev": dev, "keras_tags": tags}
    )
    latency = keras_latency(
        pos, predict, dev, vocabulary, args.latency_sentences
    )
    print("measuring the files without TensorFlow ...", flush=True)
    child = [sys.executable, os.path.abspath(__file__), "--device", output]
    child += ["--latency-sentences", str(args.latency_sentences)]
    load = os.getloadavg()[0]
    subprocess.run(child, check=True)
    with open(os.path.join(output, "device.json"), encoding="utf-8") as f:
        files = json.load(f)
    return {
        "quick": args.quick,
        "cpu": cpu_description(),
        # Other processes' load when the timing started: the latencies are
        # only as good as the machine was idle.
        "load_average": load,
        "dev_tokens": len(gold),
        "keras": {
            "dev_accuracy": float(np.mean(keras_flat == gold)),
            "latency_ms": latency,
        },
        "files": files,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run")
    parser.add_argument("--output", help="results folder")
    parser.add_argument(
        "--latency-sentences",
        type=int,
        default=256,
        help="dev sentences timed per configuration (default %(default)s)",
    )
    parser.add_argument(
        "--measure-only",
        action="store_true",
        help="measure the tagger and files of an earlier run in --output "
        "again (e.g. on an idler machine), without training or exporting",
    )
    parser.add_argument("--device", help=argparse.SUPPRESS)
    add_bilm_source(parser)  # --model, or --options and --weights
    args = parser.parse_args(argv)
    if args.device:  # the child process: no TensorFlow
        return run_device(args.device, args.latency_sentences)
    output = args.output or os.path.join(
        ROOT, "runs", "deploy_tagger_quick" if args.quick else "deploy_tagger"
    )
    os.makedirs(output, exist_ok=True)
    pos = _pos_tagging()
    if args.measure_only:
        model, predict, dev, vocabulary = reload(pos, output)
    else:
        model, predict, dev, vocabulary = train(pos, args, output)
        export(model, output)
    results = measure(pos, predict, dev, vocabulary, output, args)
    write_json(os.path.join(output, "results.json"), results)
    print_report(results)
    print(f"results: {os.path.join(output, 'results.json')}")


if __name__ == "__main__":
    main()
