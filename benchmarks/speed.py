"""How fast keras_elmo embeds and trains, against the machine's own limit.

    python benchmarks/speed.py [--configs small,medium,original]
                               [--batch 64] [--length 25] [--repeats 5]
                               [--policy float32|mixed_bfloat16|mixed_float16]
                               [--jit] [--no-dedupe] [--json results.json]

For each published configuration (SPEC §1; random weights) it measures, on
batches of real text (consecutive `--length`-token pieces of the bundled
held-out corpus, `--batch` of them):

- inference: character ids -> all biLM layers (`BiLM`, stateless);
- cached-token inference: token embeddings computed beforehand -> all
  layers (the SavedModel's cached-token mode);
- training: `fit` steps of `ELMoLanguageModel` with V = 50,000 and 8,192
  sampled negatives (`SparseAdagrad`);

and, in the same run, the machine's float32 matmul rate (the median GFLOP/s
of a 4096 x 4096 x 4096 `tf.matmul`). Each result is a median over
`--repeats` timed runs after warm-up, reported as tokens/s and as model
FLOP/s divided by the matmul rate.

Model FLOPs are counted analytically, per position the model computes
(every token plus `<S>` and `</S>`), with multiply-adds as 2 FLOPs:

    char CNN     sum_i 2 * (50 - w_i + 1) * w_i * d * n_i
    highway      K * 2 * (2 * F * F)
    projection   2 * F * P                       (if the model has one)
    LSTM         2 directions * L layers * (2 * 2P * 4H + 2 * H * P)
    softmax      2 directions * 2 * P * (S + 1)  (training, S negatives)

Training counts 3x the forward FLOPs (forward, and backward twice as much).

The token encoder runs once per distinct token of a batch (on real text
about a third of the tokens), so two fractions are printed: `executed`
counts the encoder FLOPs for the distinct tokens only (the arithmetic the
machine did, the honest utilisation), `all-token` counts them for every
token (the usual "model FLOPs", comparable with implementations that encode
every token).
"""

import argparse
import gzip
import json
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = os.path.join(ROOT, "data", "gutenberg_lm", "valid.txt.gz")
CONFIGS = {
    # name: (units H, projection P, highway layers K)
    "small": (1024, 128, 1),
    "medium": (2048, 256, 1),
    "original": (4096, 512, 2),
}
VOCABULARY_SIZE = 50_000
NUM_SAMPLED = 8192


def encoder_flops(bilm):
    """Forward FLOPs per position of the token encoder."""
    d = bilm.char_embedding_dim
    cnn = sum(2 * (50 - w + 1) * w * d * n for w, n in bilm.filters)
    width = sum(n for _, n in bilm.filters)
    highway = bilm.num_highway_layers * 2 * 2 * width * width
    projection = 0
    if bilm.use_token_projection:
        projection = 2 * width * bilm.projection_dim
    return cnn + highway + projection


def model_flops(bilm, num_sampled=None):
    """Forward FLOPs per position (see the module docstring)."""
    h, p = bilm.units, bilm.projection_dim
    lstm_projection = 2 * h * p if p < h else 0
    lstm = 2 * bilm.num_layers * (2 * 2 * p * 4 * h + lstm_projection)
    softmax = 2 * 2 * p * (num_sampled + 1) if num_sampled else 0
    return encoder_flops(bilm) + lstm + softmax


def median_seconds(fn, repeats):
    import numpy as np

    fn()  # warm-up (tracing)
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def matmul_rate(repeats, dtype="float32", size=4096):
    import tensorflow as tf

    a = tf.random.normal((size, size), dtype=dtype)
    b = tf.random.normal((size, size), dtype=dtype)
    run = tf.function(lambda a, b: tf.reduce_sum(tf.matmul(a, b)))
    seconds = median_seconds(lambda: run(a, b).numpy(), repeats)
    return 2 * size**3 / seconds / 1e9


def real_text_batch(batch, length):
    """`batch` consecutive `length`-token pieces of the held-out text."""
    with gzip.open(TEXT, "rt", encoding="utf-8") as f:
        tokens = f.read().split()
    return [tokens[i * length : (i + 1) * length] for i in range(batch)]


def bench_config(name, sentences, repeats, jit, dedupe):
    import keras
    import numpy as np
    import tensorflow as tf

    import keras_elmo
    from keras_elmo.models import ELMoLanguageModel
    from keras_elmo.optimizers import SparseAdagrad

    units, projection_dim, highway = CONFIGS[name]
    bilm = keras_elmo.BiLM(
        units=units,
        projection_dim=projection_dim,
        num_highway_layers=highway,
        deduplicate_tokens=dedupe,
    )
    ids = keras_elmo.batch_to_ids(sentences)
    batch, length = ids.shape[:2]
    tokens = batch * length
    positions = batch * (length + 2)
    # Distinct tokens, plus <S> and </S>.
    distinct = len({t for s in sentences for t in s}) + 2
    encoder = encoder_flops(bilm)
    # FLOPs actually executed: the encoder on distinct tokens only.
    skipped = (positions - distinct) * encoder if dedupe else 0
    results = {"config": name, "distinct_fraction": distinct / positions}

    def rates(seconds, flops_per_position, with_encoder=True):
        all_token = positions * flops_per_position / seconds
        executed = all_token - (skipped / seconds if with_encoder else 0)
        return tokens / seconds, executed, all_token

    forward = model_flops(bilm)

    infer = tf.function(
        lambda ids: bilm(ids, training=False)["layer_outputs"],
        jit_compile=jit,
    )
    seconds = median_seconds(lambda: [x.numpy() for x in infer(ids)], repeats)
    results["inference"] = rates(seconds, forward)

    embeddings = bilm.encode_tokens(ids)
    mask = np.ones((batch, length), bool)
    cached = tf.function(
        lambda e, m: bilm({"token_embeddings": e, "mask": m}, training=False)[
            "layer_outputs"
        ],
        jit_compile=jit,
    )
    seconds = median_seconds(
        lambda: [x.numpy() for x in cached(embeddings, mask)], repeats
    )
    results["cached_inference"] = rates(seconds, forward - encoder, False)

    model = ELMoLanguageModel(
        keras_elmo.BiLM(**bilm.get_config()),
        vocabulary_size=VOCABULARY_SIZE,
        num_sampled=NUM_SAMPLED,
        dropout=0.1,
        seed=0,
    )
    model.compile(optimizer=SparseAdagrad(), jit_compile=jit)
    rng = np.random.default_rng(0)
    targets = rng.integers(0, VOCABULARY_SIZE, (batch, 2, length + 2))
    weights = np.ones((batch, 2, length + 2), "float32")
    weights[:, 0, -1] = weights[:, 1, 0] = 0  # no target there
    x = {"character_ids": ids}
    seconds = median_seconds(
        lambda: model.train_on_batch(x, targets, sample_weight=weights),
        repeats,
    )
    train_flops = 3 * model_flops(model.bilm, NUM_SAMPLED)
    skipped *= 3
    results["training"] = rates(seconds, train_flops)
    keras.backend.clear_session()
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--configs",
        default="small,medium,original",
        help="comma-separated published sizes (small,medium,original)",
    )
    parser.add_argument("--batch", type=int, default=64, help="rows (64)")
    parser.add_argument(
        "--length", type=int, default=25, help="tokens a row (25)"
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed runs, median (5)"
    )
    parser.add_argument(
        "--policy",
        default="float32",
        choices=["float32", "mixed_bfloat16", "mixed_float16"],
        help="Keras dtype policy; mixed results are also divided by the "
        "matmul rate in that half precision",
    )
    parser.add_argument(
        "--jit", action="store_true", help="XLA-compile every step"
    )
    parser.add_argument(
        "--no-dedupe",
        action="store_true",
        help="encode every token, not each distinct token once",
    )
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    import keras
    import tensorflow as tf

    keras.config.set_dtype_policy(args.policy)
    rate = matmul_rate(args.repeats)
    reference = rate
    if args.policy != "float32":
        half = args.policy.split("_")[1]
        reference = matmul_rate(args.repeats, dtype=half)
    sentences = real_text_batch(args.batch, args.length)
    print(
        f"TensorFlow {tf.__version__}, {os.cpu_count()} CPUs, policy "
        f"{args.policy}{', XLA' if args.jit else ''}"
        f"{', every token encoded' if args.no_dedupe else ''}; batch "
        f"{args.batch} x "
        f"{args.length} tokens of real text"
    )
    print(f"matmul rate (float32, 4096^3): {rate:,.1f} GFLOP/s")
    if reference != rate:
        print(f"matmul rate ({half}, 4096^3): {reference:,.1f} GFLOP/s")
    print(
        f"{'config':<9} {'mode':<17} {'tokens/s':>10} {'GFLOP/s':>9} "
        f"{'executed':>9} {'all-token':>9}   (% of the matmul rate)"
    )
    rows = []
    for name in args.configs.split(","):
        result = bench_config(
            name, sentences, args.repeats, args.jit, not args.no_dedupe
        )
        for mode in ("inference", "cached_inference", "training"):
            tokens_per_s, executed, all_token = result[mode]
            print(
                f"{name:<9} {mode:<17} {tokens_per_s:>10,.0f} "
                f"{executed / 1e9:>9,.1f} "
                f"{100 * executed / 1e9 / reference:>8.1f}% "
                f"{100 * all_token / 1e9 / reference:>8.1f}%",
                flush=True,
            )
            rows.append(
                {
                    "config": name,
                    "mode": mode,
                    "tokens_per_s": round(tokens_per_s, 1),
                    "executed_gflops": round(executed / 1e9, 2),
                    "executed_fraction": round(executed / 1e9 / reference, 4),
                    "all_token_fraction": round(all_token / 1e9 / reference, 4),
                    "distinct_fraction": round(result["distinct_fraction"], 3),
                }
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "matmul_gflops_float32": round(rate, 1),
                    "matmul_gflops_reference": round(reference, 1),
                    "policy": args.policy,
                    "jit": args.jit,
                    "deduplicate_tokens": not args.no_dedupe,
                    "batch": args.batch,
                    "length": args.length,
                    "results": rows,
                },
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
