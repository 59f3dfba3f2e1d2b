"""The same biLM on TensorFlow, JAX, PyTorch and AllenNLP, side by side.

    python benchmarks/backends.py [--sizes small,original]
        [--backends tensorflow,jax,torch] [--allennlp PATH]
        [--sentences 96] [--tune-sentences 64] [--repeats 3]
        [--threads 2] [--clock wall|cpu] [--no-settle] [--long 1000]
        [--unpacked] [--json results.json]

One worker process per backend (Keras fixes its backend per process) and
one for AllenNLP's own PyTorch ELMo (`allennlp.modules.elmo`, imported
from a checkout of https://github.com/allenai/allennlp given by
`--allennlp` or `ALLENNLP_SRC`; see `allennlp_reference.py`). Without a
checkout the AllenNLP rows say so and the ratios are to TensorFlow only.

Every worker loads the same random weights, written once per size in the
AllenNLP / bilm-tf format by `keras_elmo.save_bilm`, and runs on the
same batches: the first `--sentences` lines of the bundled held-out
corpus (Gutenberg), sorted by length, in batches of 32, with `--threads`
threads (and CPU affinity to that many cores). Each worker runs one
warm-up pass; then the workers take turns, pass by pass, `--repeats`
times, so a busy machine slows them alike; the median pass is reported.
Before each timed pass a worker runs one untimed batch (unless
`--no-settle`): a worker resuming after the others' passes runs its
first batch slowly (JAX most: 0.73x against 0.90x TensorFlow for the
small fine-tuning step, AMD EPYC [avx2,avx512_vnni,avx512f], 2 cores).

- inference: character ids -> every biLM layer, stateless. AllenNLP:
  `_ElmoBiLm` under `torch.no_grad()`, states reset each batch;
  TensorFlow: a `tf.function`; JAX: `jax.jit(stateless_call)` and the
  plain `bilm(ids)` call (ids checked on the host, then one compiled
  program a shape, its time axis padded to a multiple of 8: see
  `keras_elmo/layers/backends/jax_eager.py`); PyTorch:
  `bilm(ids)` under `torch.no_grad()` (with `--unpacked`, also with the
  LSTM weights left unpacked: `torch.mm` at every step, as before
  `keras_elmo/layers/backends/torch_matmul.py`).
- fine-tuning step (first `--tune-sentences` lines): forward and backward
  of `mean(elmo ** 2)` through every biLM weight, dropout 0. AllenNLP:
  `Elmo(requires_grad=True)`; keras_elmo: `ELMoEmbedding(fine_tune=True)`;
  gradients by `GradientTape` (a `tf.function`), `jax.jit(jax.grad)`,
  `loss.backward()`.
- long sequence (`--long` residues, original size unless `--long-size`):
  one random protein sequence, one residue a token, batch of one, as
  SeqVec embeds it (TensorFlow: in a `tf.function`, and as the plain
  eager `bilm(ids)` call); a fresh process per backend, one warm-up sequence of
  the same length, then one timed; residues/s and the process's peak
  resident memory (weights included).

Prints tokens/s, the ratios to AllenNLP and to TensorFlow, and the CPU.
"""

import argparse
import gzip
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = os.path.join(ROOT, "data", "gutenberg_lm", "valid.txt.gz")
SIZES = {
    # name: (units H, projection P, highway layers K)
    "small": (1024, 128, 1),
    "medium": (2048, 256, 1),
    "original": (4096, 512, 2),
}
BACKENDS = ("tensorflow", "jax", "torch")
# The long sequence through the plain eager call on TensorFlow.
LONG_PLAIN = "tensorflow bilm(ids)"
BATCH = 32
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"


# === The parent ===


def main(argv=None):
    args = _parse(argv)
    sys.stdout.reconfigure(line_buffering=True)
    if args.worker:
        return _serve(args)
    if args.long_child:
        print(json.dumps(_long_child(args)))
        return 0
    allennlp = args.allennlp or os.environ.get("ALLENNLP_SRC")
    results = {
        "cpu": cpu_name(),
        "threads": args.threads,
        "runs": [],
        "clock": args.clock,
    }
    results["load"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(
        f"CPU: {results['cpu']} ({os.cpu_count()} cores, load "
        f"{results['load']}); {args.threads} threads, batches of {BATCH}"
    )
    if not allennlp:
        print(
            "AllenNLP: no checkout given (--allennlp or ALLENNLP_SRC): "
            "its rows are left out, ratios are to TensorFlow only"
        )
    with tempfile.TemporaryDirectory() as folder:
        # --sizes "": the long sequence only.
        for size in filter(None, args.sizes.split(",")):
            files = write_weights(size, folder, args)
            rows = _measure_size(size, files, allennlp, args)
            results["runs"] += rows
            _print_rows(size, rows)
        if args.long:
            files = write_weights(args.long_size, folder, args)
            rows = _measure_long(files, allennlp, args)
            results["long"] = rows
            _print_long(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="small,original")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--allennlp", help="an allenai/allennlp checkout")
    parser.add_argument("--sentences", type=int, default=96)
    parser.add_argument("--tune-sentences", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time passes by the wall clock, or by the CPU time of the "
        "worker (steadier on a shared machine; use with --threads 1)",
    )
    parser.add_argument(
        "--settle",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run one untimed batch in a worker before each of its timed "
        "passes (default), so that no backend is timed while it resumes "
        "from waiting on the others",
    )
    parser.add_argument("--long", type=int, default=1000)
    parser.add_argument("--long-size", default="original")
    parser.add_argument(
        "--unpacked",
        action="store_true",
        help="also time PyTorch with its LSTM weights unpacked (torch.mm)",
    )
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--long-child", help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def environment(backend, args):
    path = os.environ.get("PYTHONPATH")
    return dict(
        os.environ,
        KERAS_BACKEND="torch" if backend == "allennlp" else backend,
        TF_CPP_MIN_LOG_LEVEL="3",
        OMP_NUM_THREADS=str(args.threads),
        XLA_FLAGS=" ".join(
            [
                os.environ.get("XLA_FLAGS", ""),
                "--xla_cpu_multi_thread_eigen=true",
                f"intra_op_parallelism_threads={args.threads}",
            ]
        ).strip(),
        PYTHONPATH=ROOT if not path else os.pathsep.join([ROOT, path]),
    )


def _child_command(args, *extra):
    return [
        sys.executable,
        os.path.abspath(__file__),
        "--threads",
        str(args.threads),
        *extra,
    ]


def write_weights(size, folder, args):
    """`(options, weights)` of `size`, random, written once."""
    files = (
        os.path.join(folder, f"{size}_options.json"),
        os.path.join(folder, f"{size}_weights.hdf5"),
    )
    if not os.path.exists(files[1]):
        command = _child_command(args, "--worker", "write", "--files")
        command.append(json.dumps([size, *files]))
        done = subprocess.run(
            command,
            env=environment("torch", args),
            capture_output=True,
            text=True,
        )
        if done.returncode:
            sys.exit(f"writing the {size} weights failed:\n{done.stderr}")
    return files


class _Worker:
    """A child process answering one JSON command a line."""

    def __init__(self, backend, size, files, args, allennlp):
        self.backend = backend
        setup = {
            "size": size,
            "files": files,
            "allennlp": allennlp,
            "sentences": args.sentences,
            "tune_sentences": args.tune_sentences,
            "unpacked": args.unpacked,
        }
        # stderr goes to a file: an unread pipe would fill up and stall
        # the worker on its warnings.
        self.log = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(
            _child_command(args, "--worker", backend),
            env=environment(backend, args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.error = None
        self.tasks = self.ask(setup)

    def ask(self, command):
        if self.error:
            return None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=60)
            self.log.seek(0)
            lines = self.log.read().strip().splitlines()
            self.error = lines[-1] if lines else "the worker ended"
            return None
        answer = json.loads(line)
        if "error" in answer:
            self.error = answer["error"]
            return None
        return answer

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)
        self.log.close()


def _measure_size(size, files, allennlp, args):
    names = args.backends.split(",") + (["allennlp"] if allennlp else [])
    workers = [_Worker(n, size, files, args, allennlp) for n in names]
    try:
        return [
            row
            for phase in ("inference", "fine_tune")
            for row in _interleaved(size, phase, workers, args)
        ]
    finally:
        for worker in workers:
            worker.close()


def _interleaved(size, phase, workers, args):
    """Each worker's tasks of `phase`: one warm-up pass each, then the
    workers take turns, `repeats` passes each."""
    times = {}
    for worker in workers:
        for task in (worker.tasks or {}).get(phase, []):
            times[(worker, task)] = []
            worker.ask({"phase": phase, "run": task})
    key = "cpu_seconds" if args.clock == "cpu" else "seconds"
    for _ in range(args.repeats):
        for worker, task in times:
            if args.settle:
                worker.ask({"phase": phase, "run": task, "batches": 1})
            answer = worker.ask({"phase": phase, "run": task})
            if answer:
                times[(worker, task)].append(answer)
    rows = []
    for worker in workers:
        if worker.error:
            rows.append(
                {
                    "size": size,
                    "phase": phase,
                    "task": worker.backend,
                    "error": worker.error,
                }
            )
    for (worker, task), answers in times.items():
        if not answers:
            continue
        answers.sort(key=lambda a: a[key])
        median = answers[len(answers) // 2]
        rows.append(
            {
                "size": size,
                "phase": phase,
                "task": task,
                "tokens_per_s": median["tokens"] / median[key],
                "cpu_seconds": median["cpu_seconds"],
                "seconds": median["seconds"],
            }
        )
    return rows


def _measure_long(files, allennlp, args):
    rows = []
    names = args.backends.split(",") + (["allennlp"] if allennlp else [])
    if "tensorflow" in names:
        # The plain eager call too, as a user writes it.
        names.insert(names.index("tensorflow") + 1, LONG_PLAIN)
    for backend in names:
        command = _child_command(
            args,
            "--long-child",
            backend,
            "--long",
            str(args.long),
            "--files",
            json.dumps([args.long_size, *files, allennlp]),
        )
        done = subprocess.run(
            command,
            env=environment(backend.split(" ")[0], args),
            capture_output=True,
            text=True,
        )
        if done.returncode:
            lines = done.stderr.strip().splitlines()
            rows.append({"task": backend, "error": lines[-1] if lines else ""})
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return rows


def _print_rows(size, rows):
    by_task = {(r["phase"], r["task"]): r for r in rows}
    print(f"\n{size}: tokens/s (median pass)")
    print(
        f"{'task':24} {'inference':>10} {'vs AllenNLP':>11} {'vs TF':>6}"
        f" {'fine-tune':>10} {'vs AllenNLP':>11} {'vs TF':>6}"
    )
    tasks = dict.fromkeys(r["task"] for r in rows)
    for task in tasks:
        cells = []
        for phase in ("inference", "fine_tune"):
            row = by_task.get((phase, task))
            if row is None or "error" in row:
                note = row["error"][:40] if row else ""
                cells.append(f"{note:>29}")
                continue
            speed = row["tokens_per_s"]
            ratios = [
                _ratio(speed, by_task.get((phase, reference)))
                for reference in ("allennlp", "tensorflow")
            ]
            cells.append(f"{speed:10,.1f} {ratios[0]:>11} {ratios[1]:>6}")
        print(f"{task:24} " + " ".join(cells))


def _ratio(speed, reference):
    if not reference or "error" in reference:
        return "-"
    return f"{speed / reference['tokens_per_s']:.2f}"


def _print_long(rows):
    print("\nlong sequence: residues/s, peak resident memory")
    allennlp = next((r for r in rows if r["task"] == "allennlp"), None)
    for row in rows:
        if "error" in row:
            print(f"{row['task']:24} error: {row['error'][:70]}")
            continue
        ratio = _ratio(row["tokens_per_s"], allennlp)
        print(
            f"{row['task']:24} {row['residues']} residues "
            f"{row['tokens_per_s']:8.1f}/s ({ratio} x AllenNLP), peak "
            f"{row['peak_mb']:,.0f} MB"
        )


# === The workers ===


def _serve(args):
    """A worker: answers commands read from stdin, one JSON line each."""
    _limit_threads(args.threads)
    if args.worker == "write":
        size, options, weights = json.loads(args.files)
        _write_random(size, options, weights)
        return 0
    tasks = None
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if tasks is None:
                tasks = _setup(args.worker, command)
                answer = {phase: list(tasks[phase]) for phase in tasks}
            else:
                function, batches = tasks[command["phase"]][command["run"]]
                answer = _timed(function, batches[: command.get("batches")])
        except Exception as error:  # reported to the parent, which goes on
            answer = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), flush=True)
    return 0


def _limit_threads(threads):
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))[:threads]
        os.sched_setaffinity(0, cores)


def _write_random(size, options, weights):
    import keras

    import keras_elmo

    keras.utils.set_random_seed(0)
    units, projection_dim, highway = SIZES[size]
    bilm = keras_elmo.BiLM(
        units=units, projection_dim=projection_dim, num_highway_layers=highway
    )
    bilm.build()
    keras_elmo.save_bilm(bilm, options, weights)


def _sentences(count):
    with gzip.open(TEXT, "rt", encoding="utf-8") as f:
        lines = [line.split() for _, line in zip(range(count), f)]
    return sorted([s for s in lines if s], key=len, reverse=True)


def _batches(sentences):
    import keras_elmo

    groups = [sentences[i : i + BATCH] for i in range(0, len(sentences), BATCH)]
    return [(keras_elmo.batch_to_ids(g), sum(map(len, g))) for g in groups]


def _setup(backend, command):
    """`{phase: {task: function(ids)}}` and the batches of each phase."""
    options, weights = command["files"]
    inference = _batches(_sentences(command["sentences"]))
    tune = _batches(_sentences(command["tune_sentences"]))
    make = {
        "tensorflow": _tensorflow_tasks,
        "jax": _jax_tasks,
        "torch": _torch_tasks,
        "allennlp": _allennlp_tasks,
    }[backend]
    infer, fine_tune = make(options, weights, command.get("allennlp"))
    if backend == "torch" and command.get("unpacked"):
        name = "torch (unpacked)"
        infer[name] = _unpacked(infer["torch"])
        fine_tune[name] = _unpacked(fine_tune["torch"])
    return {
        "inference": {name: (f, inference) for name, f in infer.items()},
        "fine_tune": {name: (f, tune) for name, f in fine_tune.items()},
    }


def _timed(function, batches):
    """One pass of `function` over its batches: seconds, CPU seconds."""
    start, cpu = time.perf_counter(), time.process_time()
    for ids, _ in batches:
        function(ids)
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu,
        "tokens": sum(count for _, count in batches),
    }


def _tensorflow_tasks(options, weights, _):
    import tensorflow as tf

    import keras_elmo

    threads = len(os.sched_getaffinity(0))
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    bilm = keras_elmo.load_bilm(options, weights)
    infer = tf.function(lambda x: bilm(x, training=False)["layer_outputs"])
    embedding = _embedding(options, weights)
    variables = embedding.trainable_variables

    @tf.function
    def gradients(x):
        with tf.GradientTape() as tape:
            y = embedding(x, training=True)
            loss = tf.reduce_mean(y * y)
        # The character table's gradient is sparse (IndexedSlices).
        grads = tape.gradient(loss, variables)
        return [tf.convert_to_tensor(g) for g in grads]

    return (
        {"tensorflow": lambda x: [y.numpy() for y in infer(x)]},
        {"tensorflow": lambda x: [g.numpy() for g in gradients(x)]},
    )


def _embedding(options, weights):
    import keras_elmo

    bilm = keras_elmo.load_bilm(options, weights)
    embedding = keras_elmo.ELMoEmbedding(bilm, fine_tune=True, dropout=0.0)
    embedding(keras_elmo.batch_to_ids([["built"]]))  # builds the mix
    return embedding


def _jax_tasks(options, weights, _):
    import jax
    import jax.numpy as jnp

    import keras_elmo

    bilm = keras_elmo.load_bilm(options, weights)
    trained = [v.value for v in bilm.trainable_variables]
    fixed = [v.value for v in bilm.non_trainable_variables]

    @jax.jit
    def infer(trained, fixed, x):
        out, _ = bilm.stateless_call(trained, fixed, x, training=False)
        return out["layer_outputs"]

    embedding = _embedding(options, weights)
    state = (
        [v.value for v in embedding.trainable_variables],
        [v.value for v in embedding.non_trainable_variables],
    )

    def loss(trained, fixed, x):
        y, _ = embedding.stateless_call(trained, fixed, x, training=True)
        return jnp.mean(y * y)

    gradients = jax.jit(jax.grad(loss))
    ready = jax.block_until_ready
    return (
        {
            "jax (jax.jit)": lambda x: ready(infer(trained, fixed, x)),
            "jax (bilm(ids) call)": lambda x: ready(bilm(x)["layer_outputs"]),
        },
        {"jax (jax.jit)": lambda x: ready(gradients(*state, x))},
    )


def _torch_tasks(options, weights, _):
    import torch

    import keras_elmo

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    bilm = keras_elmo.load_bilm(options, weights)
    embedding = _embedding(options, weights)

    def infer(x):
        with torch.no_grad():
            return [
                y.numpy() for y in bilm(torch.as_tensor(x))["layer_outputs"]
            ]

    def step(x):
        for p in embedding.parameters():
            p.grad = None
        y = embedding(torch.as_tensor(x))
        (y * y).mean().backward()

    return {"torch": infer}, {"torch": step}


def _unpacked(task):
    """`task` with the LSTM loop's weights left unpacked (`torch.mm` at
    every step, the loop before `torch_matmul.py`)."""
    from keras_elmo.layers.backends import torch_matmul

    def run(x):
        with torch_matmul.packing_from(float("inf")):
            return task(x)

    return run


def _allennlp_tasks(options, weights, source):
    import torch

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import allennlp_reference

    elmo = allennlp_reference.load(source)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    bilm = elmo._ElmoBiLm(options, weights)
    tuned = elmo.Elmo(options, weights, 1, dropout=0.0, requires_grad=True)

    def infer(x):
        bilm._elmo_lstm.reset_states()
        with torch.no_grad():
            return [y.numpy() for y in bilm(torch.as_tensor(x))["activations"]]

    def step(x):
        tuned._elmo_lstm._elmo_lstm.reset_states()
        tuned.zero_grad()
        y = tuned(torch.as_tensor(x))["elmo_representations"][0]
        (y * y).mean().backward()

    return {"allennlp": infer}, {"allennlp": step}


# === Long sequences ===


def _long_child(args):
    """One backend embeds one random protein sequence: residues/s, peak."""
    import numpy as np

    _limit_threads(args.threads)
    size, options, weights, source = json.loads(args.files)
    rng = np.random.default_rng(0)
    sequences = [
        list(rng.choice(list(AMINO_ACIDS), size=args.long)) for _ in range(2)
    ]
    embed = _long_embedder(args.long_child, options, weights, source)
    embed(sequences[0])  # the warm-up sequence
    start = time.perf_counter()
    embed(sequences[1])
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "task": args.long_child,
        "size": size,
        "residues": args.long,
        "tokens_per_s": args.long / seconds,
        "seconds": seconds,
        "peak_mb": peak,
    }


def _long_embedder(backend, options, weights, source):
    import keras_elmo

    if backend == "allennlp":
        import torch

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import allennlp_reference

        torch.set_num_threads(len(os.sched_getaffinity(0)))
        bilm = allennlp_reference.load(source)._ElmoBiLm(options, weights)

        def embed(sequence):
            bilm._elmo_lstm.reset_states()
            ids = torch.as_tensor(keras_elmo.batch_to_ids([sequence]))
            with torch.no_grad():
                return [y.numpy() for y in bilm(ids)["activations"]]

        return embed
    if backend == "torch":
        import torch

        torch.set_num_threads(len(os.sched_getaffinity(0)))
    bilm = keras_elmo.load_bilm(options, weights)
    if backend == LONG_PLAIN:
        return lambda s: [
            y.numpy()
            for y in bilm(keras_elmo.batch_to_ids([s]))["layer_outputs"]
        ]
    if backend == "tensorflow":
        import tensorflow as tf

        call = tf.function(
            lambda x: bilm(x)["layer_outputs"], reduce_retracing=True
        )
        return lambda s: [y.numpy() for y in call(keras_elmo.batch_to_ids([s]))]
    if backend == "torch":
        import torch

        def embed(sequence):
            with torch.no_grad():
                return [y.numpy() for y in bilm([sequence])["layer_outputs"]]

        return embed
    import numpy as np

    return lambda s: [np.asarray(y) for y in bilm([s])["layer_outputs"]]


if __name__ == "__main__":
    sys.exit(main())
