"""What the teacher costs a distillation step.

    python benchmarks/distillation.py --teacher SOURCE [--size tiny]
                                      [--batches 40] [--repeats 3]
                                      [--mixed-precision auto|off]

On the first `--batches` batches of the bundled training corpus (the
small-corpus recipe's 1,024 tokens a batch), with the same student size
and precision, in one process:

- the distillation step (`keras-elmo distill`'s compiled training step:
  the student, its layer maps and softmax, and the teacher's forward pass
  inside it);
- the teacher's forward pass alone (its inference call, compiled, the
  layers the step reads): the teacher's share of a step is its time over
  the step's;
- the reference, what a user would run instead: the same student's
  training step without a teacher (`keras-elmo train --size tiny`).

Each is timed over the batches after one pass that compiles them (a batch
shape is compiled once), the median of `--repeats` passes; tokens/s count
the batches' real tokens. `--teacher` is any biLM source; `original`
with random weights is `--teacher random:original` (size and speed only).
Results: docs/benchmarks.md, "Distillation".
"""

import argparse
import dataclasses
import os
import statistics
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = os.path.join(ROOT, "data", "gutenberg_lm", "train.txt.gz")


def teacher_bilm(source, dtype):
    """The teacher: a biLM source, or `random:SIZE` (a training size with
    random weights, seed 0)."""
    import keras

    import keras_elmo
    from elmo_core.settings.sizes import SIZES
    from keras_elmo.layers.bilm import BiLM

    if source.startswith("random:"):
        keras.utils.set_random_seed(0)
        bilm = BiLM(**SIZES[source.partition(":")[2]], dtype=dtype)
        bilm.build()
        return bilm
    return keras_elmo.load_bilm(source, **({"dtype": dtype} if dtype else {}))


def batches(config, vocabulary, count):
    from keras_elmo.data.datasets import lm_dataset
    from keras_elmo.data.datasets import scan_corpus

    scan = scan_corpus(
        [TRAIN],
        max_length=config.max_length,
        tokens_per_batch=config.tokens_per_batch,
    )
    dataset = lm_dataset(scan, vocabulary, shuffle=False, repeat=False)
    return [tuple(b) for b in dataset.take(count)]


def timed(function, data, repeats):
    """Median seconds of a pass of `function` over `data`, after one pass
    that compiles every shape."""
    for item in data:
        function(*item)
    passes = []
    for _ in range(repeats):
        started = time.perf_counter()
        for item in data:
            function(*item)
        passes.append(time.perf_counter() - started)
    return statistics.median(passes)


def measure(args):
    import numpy as np
    import tensorflow as tf

    from elmo_core.ids.vocabulary import Vocabulary
    from elmo_core.settings.precision import choose_precision
    from elmo_core.settings.sizes import bilm_size
    from elmo_core.settings.training_config import MIXED_PRECISION
    from keras_elmo.training.compiled_model import build_model
    from keras_elmo.training.distill_settings import distill_settings
    from keras_elmo.training.run_setup import run_config

    vocabulary = Vocabulary.from_corpus([TRAIN], min_count=2)
    precision, _ = choose_precision(args.mixed_precision, saved=None, gpu=False)
    config = run_config(
        dict(tokens_per_batch=1024, num_sampled=2048, optimizer="adam",
             learning_rate=0.006, mixed_precision=precision),
        train_files=[TRAIN],
        bilm=bilm_size(args.size),
        vocabulary_size=len(vocabulary),
    )  # fmt: skip
    teacher = teacher_bilm(args.teacher, MIXED_PRECISION[precision])
    data = batches(config, vocabulary, args.batches)
    tokens = sum(
        int(np.sum(x["character_ids"][..., 0] > 0)) for x, _, _ in data
    )

    distilled = build_model(
        dataclasses.replace(
            config, distill=distill_settings(args.teacher, teacher)
        )
    )
    distilled.attach_teacher(teacher)
    alone = build_model(config)

    @tf.function(reduce_retracing=True)
    def teacher_forward(x):
        return teacher(x, training=False, keep_boundaries=True)["layer_outputs"]

    results = {
        "distillation step": timed(
            distilled.train_on_batch, data, args.repeats
        ),
        "teacher forward": timed(
            lambda x, y, w: teacher_forward(x), data, args.repeats
        ),
        "student step alone (reference)": timed(
            alone.train_on_batch, data, args.repeats
        ),
    }
    return results, tokens, teacher, distilled


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--teacher", required=True)
    parser.add_argument("--size", default="tiny")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--mixed-precision", choices=["auto", "off"], default="auto"
    )
    args = parser.parse_args(argv)
    results, tokens, teacher, distilled = measure(args)
    print(
        f"teacher {args.teacher}: {teacher.count_params():,} biLM weights; "
        f"student --size {args.size}: {distilled.bilm.count_params():,}; "
        f"{args.batches} batches, {tokens:,} tokens"
    )
    step = results["distillation step"]
    for name, seconds in results.items():
        print(
            f"{name}: {1000 * seconds / args.batches:.1f} ms a batch, "
            f"{tokens / seconds:,.0f} tokens/s"
        )
    reference = results["student step alone (reference)"]
    print(
        f"teacher's share of a distillation step: "
        f"{results['teacher forward'] / step:.0%}; distillation step / "
        f"student step alone: {step / reference:.2f}x"
    )


if __name__ == "__main__":
    main()
