"""Held-out perplexity of a run trained on windows, read as it trained.

    python benchmarks/window_perplexity.py --model RUN [--data FILE ...]

`keras-elmo evaluate` reads every held-out sentence on its own, from a
zero LSTM state, the way ELMo embeds sentences. A run trained with
`--windows N` never starts from a zero state: it carries its state from
window to window, across sentences. This script reads held-out text the
way such a run trained: each file as `keras_elmo.data.windows` streams
(the run's rows and window length, state carried, starting from zeros
once), and leaves out the predictions that sentence evaluation does not
make (`<S>` after `</S>` forward, `</S>` after `<S>` backward), so that
the targets are the sentences' own. The streams wrap around the file, so
a few sentences at the end of a pass are read twice.

Prints, per file, the full-softmax perplexity of each direction and
their mean (exp of the mean loss of both directions, as `evaluate`).
Default `--data`: the main job's two held-out texts. Results:
docs/benchmarks.md, "Out of domain".
"""

import argparse
import json
import math
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELD_OUT = [
    os.path.join(ROOT, "data", "gutenberg_lm", "valid.txt.gz"),
    os.path.join(ROOT, "data", "ud_english_ewt", "dev.txt.gz"),
]


def zero_states(model):
    for per_layer in model.window_states:
        for part in per_layer:
            for variable in part:
                variable.assign(variable.numpy() * 0)


def passes(path, rows, length):
    """Batches in one pass over `path` (tokens and two boundaries a
    sentence)."""
    from elmo_core.text.lines import iter_sentences

    tokens = sentences = 0
    for sentence in iter_sentences(path):
        tokens += len(sentence)
        sentences += 1
    return math.ceil((tokens + 2 * sentences) / (rows * length))


def direction_losses(model, x, y, w):
    """Summed losses and target counts `(2,)` of one batch."""
    import numpy as np
    from keras import ops

    from keras_elmo.models.softmax_losses import full_softmax_loss

    outputs = model(x, training=False)
    sums, counts = np.zeros(2), np.zeros(2)
    kernel = ops.cast(model.softmax_kernel, "float32")
    bias = ops.cast(model.softmax_bias, "float32")
    for d, name in enumerate(("forward", "backward")):
        hidden = ops.cast(outputs[name], "float32")
        hidden = ops.reshape(hidden, (-1, hidden.shape[-1]))
        losses = full_softmax_loss(hidden, y[:, d].reshape(-1), kernel, bias)
        weights = w[:, d].reshape(-1)
        sums[d] = float(np.sum(np.asarray(losses) * weights))
        counts[d] = float(weights.sum())
    return sums, counts


def stream_perplexity(model, vocabulary, config, path):
    import numpy as np

    from keras_elmo.data.windows import window_batches

    rows, length = model.window_rows, config.window_length
    zero_states(model)
    batches = window_batches([path], vocabulary, rows, length, seed=0)
    sums, counts = np.zeros(2), np.zeros(2)
    for _ in range(passes(path, rows, length)):
        x, y, w = next(batches)
        w[:, 0][y[:, 0] == vocabulary.bos_id] = 0
        w[:, 1][y[:, 1] == vocabulary.eos_id] = 0
        batch_sums, batch_counts = direction_losses(model, x, y, w)
        sums += batch_sums
        counts += batch_counts
    means = sums / counts
    return {
        "forward": math.exp(means[0]),
        "backward": math.exp(means[1]),
        "perplexity": math.exp(means.mean()),
        "targets": int(counts[0]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="a run of --windows")
    parser.add_argument("--data", nargs="+", default=HELD_OUT)
    args = parser.parse_args()
    from keras_elmo.training.run_directory import load_run

    model, vocabulary, config = load_run(args.model)
    if not config.window_length:
        raise SystemExit(f"{args.model} trained on sentences, not windows")
    results = {}
    for path in args.data:
        results[path] = stream_perplexity(model, vocabulary, config, path)
        print(json.dumps({path: results[path]}), flush=True)


if __name__ == "__main__":
    main()
