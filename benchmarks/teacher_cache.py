"""What the teacher cache gives a distillation's later epochs.

    python benchmarks/teacher_cache.py --teacher SOURCE [--tokens 40000]
                                       [--size tiny] [--cached-epochs 3]
                                       [--mixed-precision auto|off]

A text of the first `--tokens` tokens of the bundled training corpus (the
small-corpus recipe's 1,024 tokens a batch), and the pieces of a
`keras-elmo distill` run (its compiled model and threads, its data
pipeline, its teacher cache opened as a run opens it), trained with
Keras `fit` one epoch after another, in one process:

1. without the cache, the teacher in every step: an epoch that compiles,
   then one timed;
2. with a new cache: its first epoch (the teacher runs on each sentence
   and its outputs are written), then `--cached-epochs` - 1 that read it;
3. without the cache again, timed (the machine's load may have moved).

The speed-up of the later epochs is the median epoch without the cache
over the median later epoch with it. `--teacher` is any biLM source, or
`random:SIZE` (a training size with random weights: `random:original`,
speed only). The cache lies in a temporary folder, removed at the end.
Results: docs/benchmarks.md, "Distillation".
"""

import argparse
import gzip
import os
import statistics
import sys
import tempfile
import time

import keras

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backends import cpu_name  # noqa: E402 (benchmarks/backends.py)
from distillation import TRAIN  # noqa: E402 (benchmarks/distillation.py)
from distillation import teacher_bilm  # noqa: E402


class EpochTimes(keras.callbacks.Callback):
    """The seconds of each epoch of `fit`."""

    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self.started)


def write_text(tokens, folder):
    """The first lines of the corpus that hold `tokens` tokens, as a file."""
    path = os.path.join(folder, "text.txt")
    count = 0
    with gzip.open(TRAIN, "rt", encoding="utf-8") as lines:
        with open(path, "w", encoding="utf-8") as out:
            for line in lines:
                if count >= tokens:
                    break
                out.write(line)
                count += len(line.split())
    return path


def run_config(args, precision, text, teacher, vocabulary, cache_folder):
    """The config of the distillation, with a teacher cache."""
    from elmo_core.settings.distillation import teacher_cache_settings
    from elmo_core.settings.sizes import bilm_size
    from keras_elmo.training.distill_settings import distill_settings
    from keras_elmo.training.run_setup import run_config as config_of

    cache = teacher_cache_settings(cache_folder, args.precision)
    return config_of(
        dict(tokens_per_batch=1024, num_sampled=2048, optimizer="adam",
             learning_rate=0.006, mixed_precision=precision),
        train_files=[text],
        bilm=bilm_size(args.size),
        vocabulary_size=len(vocabulary),
        distill=distill_settings(args.teacher, teacher, teacher_cache=cache),
    )  # fmt: skip


def measure(args, folder):
    from elmo_core.ids.vocabulary import Vocabulary
    from elmo_core.settings.precision import choose_precision
    from elmo_core.settings.training_config import MIXED_PRECISION
    from keras_elmo.data.datasets import scan_corpus
    from keras_elmo.training.cached_teacher import cached_teacher
    from keras_elmo.training.compiled_model import build_model
    from keras_elmo.training.corpus_scans import scan_dataset

    vocabulary = Vocabulary.from_corpus([TRAIN], min_count=2)
    text = write_text(args.tokens, folder)
    precision, _ = choose_precision(args.mixed_precision, saved=None, gpu=False)
    teacher = teacher_bilm(args.teacher, MIXED_PRECISION[precision])
    cache_folder = os.path.join(folder, "cache")
    config = run_config(
        args, precision, text, teacher, vocabulary, cache_folder
    )
    scan = scan_corpus([text], tokens_per_batch=config.tokens_per_batch)
    model = build_model(config)
    model.attach_teacher(teacher)
    timer = EpochTimes()

    def epochs(model, count, cache=None):
        dataset = scan_dataset(
            None, scan, vocabulary, model, seed=0, teacher_cache=cache
        )
        model.fit(dataset, epochs=count, steps_per_epoch=scan.steps_per_epoch,
                  shuffle=False, callbacks=[timer], verbose=0)  # fmt: skip
        return timer.seconds[-count:]

    uncached = epochs(model, 2)[1:]
    with cached_teacher(config, scan, model, 1, verbose=1) as cache:
        cached = epochs(model, args.cached_epochs, cache)
        size = cache.cache.size
    uncached += epochs(model, 1)
    return scan, teacher, model, uncached, cached, size


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--teacher", required=True)
    parser.add_argument("--size", default="tiny")
    parser.add_argument("--tokens", type=int, default=40000)
    parser.add_argument("--cached-epochs", type=int, default=3)
    parser.add_argument(
        "--precision", choices=["float16", "float32"], default="float16"
    )
    parser.add_argument(
        "--mixed-precision", choices=["auto", "off"], default="auto"
    )
    args = parser.parse_args(argv)
    from keras_elmo.training.threads import use_training_threads

    print(use_training_threads() or "threads: TensorFlow's default")
    with tempfile.TemporaryDirectory() as folder:
        results = measure(args, folder)
    report(args, *results)


def report(args, scan, teacher, model, uncached, cached, size):
    from elmo_core.pretrained.units import human_size

    print(
        f"{cpu_name()}, {os.cpu_count()} CPUs; teacher {args.teacher}: "
        f"{teacher.count_params():,} biLM weights; student --size "
        f"{args.size}: {model.bilm.count_params():,}; an epoch: "
        f"{scan.steps_per_epoch} batches, {scan.num_tokens:,} tokens; the "
        f"cache {human_size(size)} in {args.precision}"
    )

    def line(name, seconds):
        return (
            f"{name}: {seconds:.1f} s an epoch, "
            f"{1000 * seconds / scan.steps_per_epoch:.1f} ms a step, "
            f"{scan.num_tokens / seconds:,.0f} tokens/s"
        )

    for i, seconds in enumerate(uncached):
        print(line(f"without the cache ({'before' if i == 0 else 'after'})",
                   seconds))  # fmt: skip
    print(line("with the cache, its first epoch (filling it)", cached[0]))
    for i, seconds in enumerate(cached[1:], 2):
        print(line(f"with the cache, epoch {i} (reading it)", seconds))
    later = statistics.median(cached[1:])
    speed_up = statistics.median(uncached) / later
    print(f"later epochs with the cache: {speed_up:.1f}x faster than without")


if __name__ == "__main__":
    main()
