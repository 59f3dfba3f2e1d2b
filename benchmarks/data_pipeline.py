"""Does the tf.data pipeline keep the model fed?

    python benchmarks/data_pipeline.py [--steps 40] [--preset cpu]

Measures, on the bundled corpus, in the same run:
- the pipeline alone: text shards -> char ids + targets, batches of 4096
  tokens, iterated as fast as possible;
- training: `fit` steps of the same batches (sampled softmax, 2048
  negatives).
Both are reported in tokens/s (real tokens, boundaries excluded); the
pipeline must be several times faster than training, since it shares the
CPU cores with it.
"""

import argparse
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = os.path.join(ROOT, "data", "gutenberg_lm", "train.txt.gz")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--preset", default="cpu")
    args = parser.parse_args()

    from elmo_core.ids.vocabulary import Vocabulary
    from elmo_core.settings.sizes import SIZES
    from elmo_core.settings.training_config import TrainingConfig
    from keras_elmo.data import lm_dataset
    from keras_elmo.data import scan_corpus
    from keras_elmo.training.compiled_model import build_model

    vocabulary = Vocabulary.from_corpus([TRAIN])
    scan = scan_corpus([TRAIN], max_length=100, tokens_per_batch=4096)

    def tokens_of(batch):
        # Forward targets = tokens + one </S> per sentence.
        weights = batch[2][:, 0]
        return float(weights.numpy().sum()) - batch[0]["character_ids"].shape[0]

    dataset = lm_dataset(scan, vocabulary, seed=0)
    iterator = iter(dataset)
    next(iterator)  # warm-up: shuffle buffer, tracing
    start, tokens = time.perf_counter(), 0.0
    for _ in range(args.steps * 4):
        tokens += tokens_of(next(iterator))
    pipeline = tokens / (time.perf_counter() - start)

    config = TrainingConfig(
        train_files=[TRAIN],
        bilm=SIZES[args.preset],
        vocabulary_size=len(vocabulary),
        num_sampled=2048,
        optimizer="adam",
    )
    model = build_model(config)
    batches = list(dataset.take(args.steps + 3))
    model.train_on_batch(*batches[0])  # warm-up: tracing
    model.train_on_batch(*batches[1])
    start, tokens = time.perf_counter(), 0.0
    for batch in batches[2:]:
        model.train_on_batch(*batch)
        tokens += tokens_of(batch)
    training = tokens / (time.perf_counter() - start)

    print(f"pipeline alone : {pipeline:10,.0f} tokens/s")
    print(f"training ({args.preset:>4}): {training:10,.0f} tokens/s")
    print(f"ratio          : {pipeline / training:10.1f}x")


if __name__ == "__main__":
    main()
