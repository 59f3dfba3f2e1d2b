"""The same biLM on the TensorFlow, JAX and PyTorch backends, side by side.

    python benchmarks/backends.py [--configs small,original] [--batch 32]
                                  [--length 20] [--repeats 3]
                                  [--backends tensorflow,jax,torch]
                                  [--json results.json]

Keras fixes its backend per process, so each backend runs in a child
process of this script, on the same configuration (a published size,
random weights drawn from one seed) and the same batches of real text
(consecutive `--length`-token pieces of the bundled held-out corpus). Each
measures, as the median of `--repeats` timed runs after warm-up:

- inference: character ids -> all biLM layers, stateless. TensorFlow: a
  `tf.function` (its `tf.while_loop`, distinct tokens by `UniqueV2`); JAX:
  `jax.jit` of `stateless_call` (`lax.scan`, every token encoded), and
  "jax eager", a plain `bilm(ids)` call (distinct tokens found on the
  host, then two compiled programs, see
  `keras_elmo/layers/backends/jax_eager.py`);
  PyTorch:
  eager under `torch.no_grad()` (a Python loop over time steps,
  `torch.unique` for the distinct tokens);
- a fine-tuning step: `ELMoEmbedding(fine_tune=True)` and a dense head,
  the gradient of a loss over every weight and an SGD update.
  TensorFlow: a `tf.function` with the hand-written LSTM gradient; JAX:
  `jax.jit(jax.value_and_grad(...))`; PyTorch: `loss.backward()`.

It prints tokens/s and the ratio to TensorFlow's, and the CPU. The
original size (4096 cells, 357 MB of weights) is slow on a CPU: it runs
with at most 2 repeats.
"""

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = os.path.join(ROOT, "data", "gutenberg_lm", "valid.txt.gz")
CONFIGS = {
    # name: (units H, projection P, highway layers K)
    "small": (1024, 128, 1),
    "medium": (2048, 256, 1),
    "original": (4096, 512, 2),
}
BACKENDS = ("tensorflow", "jax", "torch")


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def real_text_batch(batch, length):
    with gzip.open(TEXT, "rt", encoding="utf-8") as f:
        tokens = f.read().split()
    return [tokens[i * length : (i + 1) * length] for i in range(batch)]


def median_seconds(fn, repeats):
    fn()
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def _model(name):
    import keras

    import keras_elmo

    keras.utils.set_random_seed(0)
    units, projection_dim, highway = CONFIGS[name]
    return keras_elmo.BiLM(
        units=units, projection_dim=projection_dim, num_highway_layers=highway
    )


def _tensorflow(bilm, embedding, ids, weights, repeats):
    import tensorflow as tf

    infer = tf.function(lambda x: bilm(x, training=False)["layer_outputs"])
    inference = median_seconds(lambda: [y.numpy() for y in infer(ids)], repeats)
    variables = embedding.trainable_variables

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(embedding(x, training=True) * weights)
        for v, g in zip(variables, tape.gradient(loss, variables)):
            v.assign_sub(1e-6 * tf.convert_to_tensor(g))
        return loss

    return inference, median_seconds(lambda: step(ids).numpy(), repeats), None


def _jax(bilm, embedding, ids, weights, repeats):
    import jax
    import jax.numpy as jnp

    ids = jnp.asarray(ids)
    fixed = [v.value for v in bilm.non_trainable_variables]
    trained = [v.value for v in bilm.trainable_variables]

    @jax.jit
    def infer(trained, fixed, x):
        out, _ = bilm.stateless_call(trained, fixed, x, training=False)
        return out["layer_outputs"]

    inference = median_seconds(
        lambda: jax.block_until_ready(infer(trained, fixed, ids)), repeats
    )
    # An eager call: distinct tokens found on the host, then compiled parts.
    eager = median_seconds(
        lambda: jax.block_until_ready(bilm(ids)["layer_outputs"]), repeats
    )
    state = (
        [v.value for v in embedding.trainable_variables],
        [v.value for v in embedding.non_trainable_variables],
    )

    def loss(trained, fixed, x):
        out, _ = embedding.stateless_call(trained, fixed, x, training=True)
        return jnp.sum(out * weights)

    @jax.jit
    def step(trained, fixed, x):
        value, grads = jax.value_and_grad(loss)(trained, fixed, x)
        return value, [w - 1e-6 * g for w, g in zip(trained, grads)]

    def run():
        value, new = step(*state, ids)
        state[0][:] = new
        jax.block_until_ready(value)

    return inference, median_seconds(run, repeats), eager


def _torch(bilm, embedding, ids, weights, repeats):
    import torch

    ids = torch.as_tensor(ids)
    weights = torch.as_tensor(weights)

    def infer():
        with torch.no_grad():
            return [y.numpy() for y in bilm(ids)["layer_outputs"]]

    inference = median_seconds(infer, repeats)
    parameters = [v.value for v in embedding.trainable_variables]
    optimizer = torch.optim.SGD(parameters, lr=1e-6)

    def step():
        optimizer.zero_grad()
        loss = (embedding(ids, training=True) * weights).sum()
        loss.backward()
        optimizer.step()
        return loss.item()

    return inference, median_seconds(step, repeats), None


def child(config, batch, length, repeats):
    """One backend's measurements (this process's KERAS_BACKEND)."""
    import keras
    import numpy as np

    import keras_elmo

    sentences = real_text_batch(batch, length)
    ids = keras_elmo.batch_to_ids(sentences)
    bilm = _model(config)
    bilm(ids[:1, :2])
    tuned = _model(config)
    embedding = keras_elmo.ELMoEmbedding(tuned, fine_tune=True, dropout=0.0)
    out = embedding(ids[:1, :2])
    shape = (*ids.shape[:2], out.shape[-1])
    weights = np.random.default_rng(0).standard_normal(shape).astype("float32")
    run = {"tensorflow": _tensorflow, "jax": _jax, "torch": _torch}[
        keras.backend.backend()
    ]
    inference, step, eager = run(bilm, embedding, ids, weights, repeats)
    tokens = ids.shape[0] * ids.shape[1]
    result = {"inference": tokens / inference, "fine_tune_step": tokens / step}
    if eager is not None:
        result["inference_eager"] = tokens / eager
    return result


def _run_child(backend, config, args):
    repeats = min(args.repeats, 2) if config == "original" else args.repeats
    command = [
        sys.executable, __file__, "--child", config, "--batch",
        str(args.batch), "--length", str(args.length), "--repeats",
        str(repeats),
    ]  # fmt: skip
    path = os.environ.get("PYTHONPATH")
    env = dict(
        os.environ,
        KERAS_BACKEND=backend,
        TF_CPP_MIN_LOG_LEVEL="3",
        PYTHONPATH=ROOT if not path else os.pathsep.join([ROOT, path]),
    )
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        return {"error": result.stderr.strip().splitlines()[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", default="small,original")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        result = child(args.child, args.batch, args.length, args.repeats)
        print(json.dumps(result))
        return 0
    backends = args.backends.split(",")
    results = {"cpu": cpu_name(), "cores": os.cpu_count(), "runs": []}
    print(f"CPU: {results['cpu']} ({results['cores']} cores); batch "
          f"{args.batch} x {args.length} tokens")  # fmt: skip
    header = f"{'config':9} {'backend':11} {'inference tok/s':>16} "
    print(header + f"{'vs TF':>6} {'fine-tune tok/s':>16} {'vs TF':>6}")
    for config in args.configs.split(","):
        reference = None
        for backend in backends:
            r = _run_child(backend, config, args)
            r.update(config=config, backend=backend)
            results["runs"].append(r)
            if "error" in r:
                print(f"{config:9} {backend:11} error: {r['error']}")
                continue
            if backend == "tensorflow":
                reference = r
            ratio = {
                key: (r[key] / reference[key] if reference else float("nan"))
                for key in ("inference", "fine_tune_step")
            }
            print(
                f"{config:9} {backend:11} {r['inference']:16,.0f} "
                f"{ratio['inference']:6.2f} {r['fine_tune_step']:16,.0f} "
                f"{ratio['fine_tune_step']:6.2f}"
            )
            if "inference_eager" in r:
                eager = r["inference_eager"]
                ratio = eager / reference["inference"] if reference else 0
                print(
                    f"{config:9} {'jax eager':11} {eager:16,.0f} {ratio:6.2f}"
                )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
