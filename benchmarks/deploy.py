"""What the ONNX and LiteRT exports cost and save, against TensorFlow.

    python benchmarks/deploy.py [--configs fixture,small,original]
                                [--threads 2] [--batch 64] [--max-length 25]
                                [--repeats 5] [--latency-runs 50]
                                [--variants onnx:float32,onnx:int8,...]
                                [--embed-sentences 1500]
                                [--skip-downstream] [--downstream-bilm DIR]
                                [--json results.json]

For each configuration (`fixture` is the trained bilm-tf test biLM; the
others random weights, seed 0: `tiny` and `cpu` the training sizes of
those names, `small` is H=1024, P=128, one highway layer, `original` the
published 5.5B model's size) it exports
the biLM with `keras_elmo.export.to_onnx` / `to_litert` at each precision
and measures, each variant in its own process (one at a time, so that the
peak resident memory is that of one serving process, model load included)
and with `--threads` threads, in the same run as the package's TensorFlow
float32 biLM (the reference):

- throughput: tokens/s over batches of `--batch` real sentences of at most
  `--max-length` tokens (lines of the bundled held-out corpus), the median
  of `--repeats` passes; and the ratio to TensorFlow float32;
- latency: p50 and p95 over `--latency-runs` calls on one 20-token
  sentence (batch 1);
- file size, and the peak resident memory of the serving process;
- the export itself: its time and peak resident memory (a child process
  that loads the biLM and exports it; VmHWM, biLM load included);
- accuracy: per biLM layer the max abs error and the mean relative error
  (|x - x_tf| / |x_tf| per token vector) against TensorFlow float32, and
  the cosine of the top-layer vectors (mean and minimum).

A variant is `runtime:precision`, or `onnx:int8:per-channel` for one
weight scale per column.

End to end (`--embed-sentences N`, 0 to skip): `keras-elmo embed` on the
first N held-out sentences, start-up included, with TensorFlow float32
(`--options/--weights`) and with each exported file (`--model FILE`):
tokens/s of the whole command.

The CPU (model name and SIMD flags from /proc/cpuinfo) is printed with the
results: int8 speed and accuracy depend on it.

Downstream cost (unless `--skip-downstream`): tagger (b) of
`examples/pos_tagging.py` (word embeddings + ELMo at the input, UPOS on UD
English-EWT) is trained once on the main job's biLM
(`runs/gutenberg/export/`, from `python examples/pretrain_gutenberg.py`;
`--downstream-bilm DIR` names another directory with options.json and
weights.hdf5, e.g. the bilm-tf fixture)
with the example's full settings and seed 1, and its dev accuracy is
measured with TensorFlow float32 and again with the biLM swapped for each
export of that biLM at evaluation time (same trained tagger, same scalar
mix).
"""

import argparse
import gzip
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
TEXT = os.path.join(ROOT, "data", "gutenberg_lm", "valid.txt.gz")
MAIN_JOB_EXPORT = os.path.join(ROOT, "runs", "gutenberg", "export")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "bilm-tf", "model")
CONFIGS = {
    # name: BiLM arguments (the others are the published defaults); None:
    # the trained bilm-tf fixture. "tiny" and "cpu" are the training sizes
    # of elmo_core.settings.sizes (distill's student, the main job's).
    "fixture": None,
    "tiny": "tiny",
    "cpu": "cpu",
    "small": dict(units=1024, projection_dim=128, num_highway_layers=1),
    "original": {},
}
VARIANTS = (
    "onnx:float32",
    "onnx:int8",
    "litert:float32",
    "litert:float16",
    "litert:int8",
)
SUFFIX = {"onnx": ".onnx", "litert": ".tflite"}
LATENCY_TOKENS = 20


# === Data ===


def real_sentences(count, max_length, skip=0):
    """`count` lines of the held-out corpus with 1..max_length tokens."""
    sentences = []
    with gzip.open(TEXT, "rt", encoding="utf-8") as f:
        for line in f:
            tokens = line.split()
            if 0 < len(tokens) <= max_length:
                if skip:
                    skip -= 1
                    continue
                sentences.append(tokens)
                if len(sentences) == count:
                    break
    return sentences


def latency_sentence():
    with gzip.open(TEXT, "rt", encoding="utf-8") as f:
        for line in f:
            tokens = line.split()
            if len(tokens) >= LATENCY_TOKENS:
                return tokens[:LATENCY_TOKENS]
    raise RuntimeError("no sentence long enough in the held-out corpus")


# === One serving process (run as a child: --serve) ===


def _tensorflow_model(options, weights, threads):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    import keras_elmo

    bilm = keras_elmo.load_bilm(options, weights)

    @tf.function(
        input_signature=[tf.TensorSpec((None, None, 50), tf.int32)],
        reduce_retracing=True,
    )
    def run(ids):
        return bilm(ids, training=False)

    def call(ids):
        out = run(ids)
        return {
            "layer_outputs": [x.numpy() for x in out["layer_outputs"]],
            "mask": out["mask"].numpy(),
        }

    return call


def serve(args):
    """Loads one model, times it, writes its outputs; prints JSON."""
    from elmo_core.runtime import batch_to_ids

    with open(args.inputs) as f:
        inputs = json.load(f)
    batches = [batch_to_ids(b) for b in inputs["batches"]]
    single = batch_to_ids([inputs["latency_sentence"]])
    started = time.perf_counter()
    if args.runtime == "tensorflow":
        model = _tensorflow_model(args.options, args.weights, args.threads)
    else:
        from elmo_core import runtime

        cls = {"onnx": runtime.ONNXBiLM, "litert": runtime.LiteRTBiLM}
        model = cls[args.runtime](args.model, num_threads=args.threads)
    load_seconds = time.perf_counter() - started
    # Warm-up (first calls allocate and, in TensorFlow, trace).
    outputs = [model(ids) for ids in batches]
    model(single)
    passes = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        for ids in batches:
            model(ids)
        passes.append(time.perf_counter() - started)
    latencies = []
    for _ in range(args.latency_runs):
        started = time.perf_counter()
        model(single)
        latencies.append(time.perf_counter() - started)
    tokens = sum(int(np.sum(np.any(ids != 0, -1))) for ids in batches)
    np.savez(
        args.outputs,
        **{
            f"b{i}_l{k}": layer
            for i, out in enumerate(outputs)
            for k, layer in enumerate(out["layer_outputs"])
        },
        **{f"b{i}_mask": out["mask"] for i, out in enumerate(outputs)},
    )
    peak = peak_rss_mib()
    print(
        json.dumps(
            {
                "tokens_per_s": tokens / float(np.median(passes)),
                "latency_p50_ms": 1000 * float(np.percentile(latencies, 50)),
                "latency_p95_ms": 1000 * float(np.percentile(latencies, 95)),
                "load_s": load_seconds,
                "peak_rss_mib": peak,
            }
        )
    )


# === The parent: export, run each variant in a child, compare ===


def peak_rss_mib():
    """This process's peak resident memory (VmHWM: unlike getrusage's
    ru_maxrss, it does not carry the parent's peak across exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(argv, what):
    result = subprocess.run(
        [sys.executable, os.path.abspath(__file__), *argv],
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    if result.returncode != 0:
        sys.exit(f"{what} failed:\n{result.stderr[-4000:]}")
    return result.stdout


def export(args):
    """Child: writes one export of the saved biLM; prints its peak RSS."""
    import keras_elmo
    from keras_elmo import export as exports

    bilm = keras_elmo.load_bilm(args.options, args.weights)
    write = {"onnx": exports.to_onnx, "litert": exports.to_litert}
    started = time.perf_counter()
    options = {"per_channel": True} if args.per_channel else {}
    write[args.runtime](bilm, args.model, precision=args.precision, **options)
    peak = peak_rss_mib()
    seconds = time.perf_counter() - started
    print(json.dumps({"export_s": seconds, "export_peak_rss_mib": peak}))


def save_random_bilm(config, directory):
    import keras

    import keras_elmo

    if CONFIGS[config] is None:
        return (
            os.path.join(FIXTURE, "options.json"),
            os.path.join(FIXTURE, "lm_weights.hdf5"),
        )
    from elmo_core.settings.sizes import SIZES

    keras.utils.set_random_seed(0)
    size = CONFIGS[config]
    bilm = keras_elmo.BiLM(**(SIZES[size] if isinstance(size, str) else size))
    bilm.build()
    options = os.path.join(directory, "options.json")
    weights = os.path.join(directory, "weights.hdf5")
    keras_elmo.save_bilm(bilm, options, weights)
    return options, weights


def errors_against(reference, outputs, num_batches):
    """Per layer: max abs error, mean relative error; top-layer cosine."""
    layers = []
    k = 0
    while f"b0_l{k}" in reference:
        max_abs, relative = 0.0, []
        for i in range(num_batches):
            mask = reference[f"b{i}_mask"]
            want = reference[f"b{i}_l{k}"][mask]
            got = outputs[f"b{i}_l{k}"][mask]
            max_abs = max(max_abs, float(np.abs(got - want).max()))
            norm = np.maximum(np.linalg.norm(want, axis=-1), 1e-12)
            relative.append(np.linalg.norm(got - want, axis=-1) / norm)
        layers.append(
            {
                "max_abs": max_abs,
                "mean_relative": float(np.concatenate(relative).mean()),
            }
        )
        k += 1
    cosines = []
    for i in range(num_batches):
        mask = reference[f"b{i}_mask"]
        want = reference[f"b{i}_l{k - 1}"][mask]
        got = outputs[f"b{i}_l{k - 1}"][mask]
        cosines.append(
            np.sum(want * got, -1)
            / np.maximum(
                np.linalg.norm(want, axis=-1) * np.linalg.norm(got, axis=-1),
                1e-12,
            )
        )
    cosines = np.concatenate(cosines)
    return {
        "layers": layers,
        "top_cosine_mean": float(cosines.mean()),
        "top_cosine_min": float(cosines.min()),
    }


def bench_config(config, args, directory):
    print(f"\n== {config} ==", flush=True)
    os.makedirs(directory, exist_ok=True)
    options, weights = save_random_bilm(config, directory)
    source = ["--options", options, "--weights", weights]
    inputs = os.path.join(directory, "inputs.json")
    batches = [
        real_sentences(args.batch, args.max_length, skip=i * args.batch)
        for i in range(args.num_batches)
    ]
    with open(inputs, "w") as f:
        json.dump(
            {"batches": batches, "latency_sentence": latency_sentence()}, f
        )
    serve_flags = [
        "--inputs", inputs,
        "--threads", str(args.threads),
        "--repeats", str(args.repeats),
        "--latency-runs", str(args.latency_runs),
    ]  # fmt: skip
    results = {}
    reference_file = os.path.join(directory, "tensorflow.npz")
    out = _child(
        ["--serve", "--runtime", "tensorflow", *source, *serve_flags,
         "--outputs", reference_file],
        "TensorFlow float32",
    )  # fmt: skip
    results["tensorflow:float32"] = json.loads(out)
    results["tensorflow:float32"]["file_mib"] = os.path.getsize(weights) / (
        2**20
    )
    print(f"  tensorflow:float32 {results['tensorflow:float32']}", flush=True)
    reference = dict(np.load(reference_file))
    for variant in args.variants:
        runtime, precision, *option = variant.split(":")
        name = "-".join([precision, *option])
        model = os.path.join(directory, f"{name}{SUFFIX[runtime]}")
        flags = ["--runtime", runtime, "--precision", precision]
        out = _child(
            ["--export", *flags, *source, "--model", model]
            + (["--per-channel"] if option == ["per-channel"] else []),
            f"export {variant}",
        )
        result = json.loads(out)
        outputs_file = os.path.join(directory, f"{runtime}-{name}.npz")
        out = _child(
            ["--serve", *flags, "--model", model, *serve_flags,
             "--outputs", outputs_file],
            variant,
        )  # fmt: skip
        result.update(json.loads(out))
        result["file_mib"] = os.path.getsize(model) / 2**20
        result.update(
            errors_against(reference, dict(np.load(outputs_file)), len(batches))
        )
        result["model"] = model
        results[variant] = result
        print(f"  {variant} {result}", flush=True)
    if args.embed_sentences:
        embed_end_to_end(args, results, source, directory)
    base = results["tensorflow:float32"]
    for result in results.values():
        if "embed_tokens_per_s" in base:
            result["embed_speedup"] = (
                result["embed_tokens_per_s"] / base["embed_tokens_per_s"]
            )
        result["speedup"] = result["tokens_per_s"] / base["tokens_per_s"]
        result["latency_speedup"] = (
            base["latency_p50_ms"] / result["latency_p50_ms"]
        )
    return results


# === End to end: keras-elmo embed, start-up included ===


def embed_end_to_end(args, results, source, directory):
    """Times `keras-elmo embed` on the first `--embed-sentences` held-out
    sentences: TensorFlow float32, then each exported file as --model."""
    sentences = real_sentences(args.embed_sentences, args.max_length)
    text = os.path.join(directory, "embed.txt")
    with open(text, "w", encoding="utf-8") as f:
        f.writelines(" ".join(s) + "\n" for s in sentences)
    tokens = sum(len(s) for s in sentences)
    runs = {"tensorflow:float32": source}
    for variant, result in results.items():
        if "model" in result:
            runs[variant] = ["--model", result["model"]]
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="3",
        OMP_NUM_THREADS=str(args.threads),
    )
    for variant, model in runs.items():
        output = os.path.join(directory, "embed.hdf5")
        command = [sys.executable, "-m", "keras_elmo_cli", "embed", *model]
        command += ["--input", text, "--output", output, "--quiet"]
        started = time.perf_counter()
        done = subprocess.run(
            ["taskset", "-c", ",".join(map(str, range(args.threads)))]
            + command,
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
        )
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"embed {variant} failed:\n{done.stderr[-3000:]}")
        os.remove(output)
        results[variant]["embed_s"] = seconds
        results[variant]["embed_tokens_per_s"] = tokens / seconds
        print(
            f"  embed {variant}: {tokens / seconds:,.0f} tokens/s", flush=True
        )


def cpu_description():
    """The CPU model and its SIMD flags that matter to int8 kernels."""
    model, flags = "unknown", []
    wanted = ("avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni")
    wanted += ("amx_int8", "asimd", "asimddp")
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            key = key.strip()
            if (
                key in ("model name", "Model", "CPU part")
                and model == "unknown"
            ):
                model = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = [x for x in value.split() if x in wanted]
    return f"{model} [{' '.join(flags) or 'no AVX2'}], {os.cpu_count()} CPUs"


# === Downstream: tagger (b) with the biLM swapped at evaluation ===


def _pos_tagging():
    path = os.path.join(ROOT, "examples", "pos_tagging.py")
    spec = importlib.util.spec_from_file_location("pos_tagging", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RuntimeBiLM:
    """Stands in for the tagger's BiLM inside `ELMoEmbedding`: the same
    call, computed by an exported model through `tf.numpy_function`."""

    def __init__(self, bilm, model):
        self.encoder = bilm.encoder
        self.num_layers = bilm.num_layers
        self.projection_dim = bilm.projection_dim
        self.token_encoder = bilm.token_encoder
        self.model = model

    def __call__(self, ids, training=None, keep_boundaries=False):
        import tensorflow as tf

        def run(ids):
            out = self.model(ids)
            return (*out["layer_outputs"], out["mask"])

        count = self.num_layers + 1
        values = tf.numpy_function(
            run, [ids], [tf.float32] * count + [tf.bool], stateful=False
        )
        width = 2 * self.projection_dim
        layers = [tf.ensure_shape(x, (None, None, width)) for x in values[:-1]]
        mask = tf.ensure_shape(values[-1], (None, None))
        return {
            "layer_outputs": layers,
            "mask": mask,
            "token_embeddings": layers[0][..., : self.projection_dim],
        }


def train_tagger_b(pos, bilm, settings, seed):
    """Tagger (b), trained as `pos_tagging.train_tagger` trains it; returns
    the model, its vocabulary and the dev batches."""
    import keras

    train = pos.read_tagged(pos.TRAIN, settings["train_sentences"])
    dev = pos.read_tagged(pos.DEV, settings["dev_sentences"])
    vocabulary = pos.build_vocabulary(train, settings["min_word_count"])
    dev_batches = pos.bucketed_batches(dev, vocabulary, 64)
    keras.utils.set_random_seed(seed)
    batch_size = settings["batch_size"]
    num_steps = settings["epochs"] * -(-len(train) // batch_size)
    model = pos.build_tagger(
        "b", len(vocabulary) + 2, bilm, settings, num_steps=num_steps
    )
    dataset = pos.make_dataset(
        train, vocabulary, batch_size, list(model.input), seed
    )
    model.fit(dataset, epochs=settings["epochs"], shuffle=False, verbose=0)
    return model, dev_batches


def dev_accuracy(pos, model, dev_batches):
    correct, total = pos.split_accuracy(
        pos.predict_function(model), dev_batches
    )["all"]
    return correct / total


def run_downstream(args, work):
    import keras_elmo
    from elmo_core import runtime

    print("\n== downstream: UPOS tagger (b), main job's biLM ==", flush=True)
    where = args.downstream_bilm or MAIN_JOB_EXPORT
    options = os.path.join(where, "options.json")
    weights = os.path.join(where, "weights.hdf5")
    if not os.path.exists(weights):  # the bilm-tf fixture's name
        weights = os.path.join(where, "lm_weights.hdf5")
    if not (os.path.exists(options) and os.path.exists(weights)):
        sys.exit(
            f"No biLM at {where}/; run python examples/pretrain_gutenberg.py "
            "first, pass --downstream-bilm DIR, or --skip-downstream."
        )
    directory = os.path.join(work, "downstream")
    os.makedirs(directory, exist_ok=True)
    pos = _pos_tagging()
    settings = dict(pos.FULL)
    if args.downstream_epochs:
        settings["epochs"] = args.downstream_epochs
    bilm = keras_elmo.load_bilm(options, weights)
    started = time.time()
    model, dev_batches = train_tagger_b(pos, bilm, settings, seed=1)
    print(f"  trained in {time.time() - started:.0f} s", flush=True)
    results = {"tensorflow:float32": dev_accuracy(pos, model, dev_batches)}
    print(f"  tensorflow:float32 {results['tensorflow:float32']:.4f}")
    elmo = model.get_layer("elmo")
    cls = {"onnx": runtime.ONNXBiLM, "litert": runtime.LiteRTBiLM}
    for variant in args.variants:
        name, precision, *option = variant.split(":")
        stem = "-".join([precision, *option])
        path = os.path.join(directory, f"{stem}{SUFFIX[name]}")
        _child(
            ["--export", "--runtime", name, "--precision", precision,
             "--options", options, "--weights", weights, "--model", path]
            + (["--per-channel"] if option == ["per-channel"] else []),
            f"export {variant}",
        )  # fmt: skip
        exported = cls[name](path, num_threads=args.threads)
        # Swapped at evaluation only: the trained tagger and mix stay.
        object.__setattr__(elmo, "bilm", RuntimeBiLM(bilm, exported))
        results[variant] = dev_accuracy(pos, model, dev_batches)
        object.__setattr__(elmo, "bilm", bilm)
        print(f"  {variant} {results[variant]:.4f}", flush=True)
    return {
        "epochs": settings["epochs"],
        "bilm": where,
        "dev_accuracy": results,
    }


def print_table(results):
    print(f"\nCPU: {results['cpu']}")
    for config, variants in results["configs"].items():
        print(f"\n{config} ({results['threads']} threads)")
        print(
            "| runtime | precision | tokens/s | vs TF | p50 ms | p95 ms "
            "| p50 vs TF | file MiB | peak RSS MiB | max abs err "
            "(layers 0/1/2) | mean rel err (0/1/2) | top cos mean/min "
            "| export s | export peak MiB | embed tokens/s (vs TF) |"
        )
        print("|" + "---|" * 15)
        for variant, r in variants.items():
            name, precision = variant.split(":", 1)
            layers = r.get("layers")
            errors = relatives = cosine = "-"
            if layers:
                errors = "/".join(f"{x['max_abs']:.2g}" for x in layers)
                relatives = "/".join(
                    f"{x['mean_relative']:.2%}" for x in layers
                )
                cosine = f"{r['top_cosine_mean']:.5f}/{r['top_cosine_min']:.4f}"
            print(
                f"| {name} | {precision} | {r['tokens_per_s']:,.0f} "
                f"| {r['speedup']:.2f}x | {r['latency_p50_ms']:.1f} "
                f"| {r['latency_p95_ms']:.1f} | {r['latency_speedup']:.2f}x "
                f"| {r['file_mib']:.1f} | {r['peak_rss_mib']:,.0f} "
                f"| {errors} | {relatives} | {cosine} "
                f"| {r.get('export_s', 0):.0f} "
                f"| {r.get('export_peak_rss_mib', 0):,.0f} "
                f"| {r.get('embed_tokens_per_s', 0):,.0f} "
                f"({r.get('embed_speedup', 0):.2f}x) |"
            )
    if "downstream" in results:
        accuracy = results["downstream"]["dev_accuracy"]
        base = accuracy["tensorflow:float32"]
        print(
            "\nUPOS dev accuracy, tagger (b), biLM swapped at evaluation "
            f"({results['downstream']['epochs']} epochs)"
        )
        print("| runtime | precision | dev accuracy | vs TF float32 |")
        print("|---|---|---|---|")
        for variant, value in accuracy.items():
            name, precision = variant.split(":", 1)
            print(
                f"| {name} | {precision} | {100 * value:.2f} "
                f"| {100 * (value - base):+.2f} |"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", default="small,original")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--num-batches", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--latency-runs", type=int, default=50)
    parser.add_argument("--embed-sentences", type=int, default=1500)
    parser.add_argument("--skip-downstream", action="store_true")
    parser.add_argument(
        "--downstream-bilm",
        help="directory of the tagger's biLM (default: the main job's)",
    )
    parser.add_argument(
        "--downstream-epochs",
        type=int,
        help="train the tagger for this many epochs instead of the example's",
    )
    parser.add_argument("--work-dir", help="keep the exports here")
    parser.add_argument("--json", help="write the results here")
    # Internal: the child processes.
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--export", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--per-channel", action="store_true", help=argparse.SUPPRESS
    )
    for name in ("--runtime", "--precision", "--model", "--options"):
        parser.add_argument(name, help=argparse.SUPPRESS)
    for name in ("--weights", "--inputs", "--outputs"):
        parser.add_argument(name, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args)
    if args.export:
        return export(args)
    args.variants = args.variants.split(",")
    work = args.work_dir or tempfile.mkdtemp(prefix="keras-elmo-deploy-")
    results = {"threads": args.threads, "cpu": cpu_description()}
    results["configs"] = {}
    for config in filter(None, args.configs.split(",")):
        results["configs"][config] = bench_config(
            config, args, os.path.join(work, config)
        )
    if not args.skip_downstream:
        results["downstream"] = run_downstream(args, work)
    print_table(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
