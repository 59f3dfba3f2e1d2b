"""ELMo in a plain PyTorch model, trained with a plain PyTorch loop.

    KERAS_BACKEND=torch python examples/pytorch_finetune.py [--quick]

On Keras's PyTorch backend every Keras layer is a `torch.nn.Module`, so
`ELMoEmbedding` sits in a `torch.nn.Module` like any other submodule: its
trainable weights (the scalar mix, gamma and, with `--fine-tune`, the
whole biLM) are among `model.parameters()`, and `torch.optim.Adam` trains
them with the task head. Tokens go in as lists of strings; the
`TokenBatcher` turns each batch into character ids on the host, as a
`torch.utils.data.DataLoader` `collate_fn`.

The task is UPOS tagging of UD English-EWT (`data/ud_english_ewt/`). The
biLM is the published "small" model (downloaded once), or any biLM given
as every `keras-elmo` command takes it: `--model` (or `--options` and
`--weights`). `--quick` is a smoke run of a few
seconds on the tiny test-fixture biLM and 64 sentences; it prints the loss
before and after training and returns them.
"""

import argparse
import gzip
import os
import sys

from keras_elmo_cli.arguments import add_bilm_source
from keras_elmo_cli.arguments import bilm_source
from keras_elmo_cli.arguments import bilm_vocabulary

os.environ.setdefault("KERAS_BACKEND", "torch")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRAIN = os.path.join(
    ROOT, "data", "ud_english_ewt", "en_ewt-ud-train.conllu.gz"
)
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "bilm-tf", "model")


def read_conllu(path, limit):
    """`(words, tags)` pairs of the first `limit` sentences."""
    sentences, words, tags = [], [], []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if words:
                    sentences.append((words, tags))
                    words, tags = [], []
                    if len(sentences) == limit:
                        break
                continue
            fields = line.split("\t")
            if line.startswith("#") or not fields[0].isdigit():
                continue  # comments, multi-word tokens, empty nodes
            words.append(fields[1])
            tags.append(fields[3])
    return sentences


def make_model(bilm, num_tags, fine_tune):
    import torch

    import keras_elmo

    class Tagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.elmo = keras_elmo.ELMoEmbedding(
                bilm, fine_tune=fine_tune, dropout=0.2
            )
            self.head = torch.nn.Linear(2 * bilm.projection_dim, num_tags)

        def forward(self, ids):
            return self.head(self.elmo(ids))

    return Tagger()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    add_bilm_source(parser)  # --model, or --options and --weights
    parser.add_argument("--fine-tune", action="store_true")
    parser.add_argument("--epochs", type=int, default=None)
    args = parser.parse_args(argv)

    import keras
    import torch

    import keras_elmo
    from elmo_core.ids.host_ids import TokenBatcher

    if keras.backend.backend() != "torch":
        sys.exit("Run with KERAS_BACKEND=torch.")
    torch.manual_seed(0)
    if args.quick:
        options = os.path.join(FIXTURE, "options.json")
        weights = os.path.join(FIXTURE, "lm_weights.hdf5")
        bilm = keras_elmo.load_bilm(options, weights)
        limit, epochs = 64, args.epochs or 3
    elif args.model or args.options or args.weights:
        source = bilm_source(args)
        bilm = source.load_bilm(bilm_vocabulary(args, source))
        limit, epochs = 2000, args.epochs or 2
    else:
        bilm = keras_elmo.load_bilm("small")
        limit, epochs = 2000, args.epochs or 2
    data = read_conllu(TRAIN, limit)
    names = sorted({t for _, tags in data for t in tags})
    tag_id = {t: i for i, t in enumerate(names)}
    to_ids = TokenBatcher(bilm)

    def collate(batch):
        words = [w for w, _ in batch]
        ids = torch.as_tensor(to_ids(words))
        labels = torch.full(ids.shape[:2], -100, dtype=torch.long)
        for i, (_, tags) in enumerate(batch):
            labels[i, : len(tags)] = torch.as_tensor([tag_id[t] for t in tags])
        return ids, labels

    loader = torch.utils.data.DataLoader(
        data, batch_size=16, shuffle=True, collate_fn=collate
    )
    model = make_model(bilm, len(names), args.fine_tune)
    optimizer = torch.optim.Adam(
        [p for p in model.parameters() if p.requires_grad], lr=1e-2
    )
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100)

    def mean_loss():
        model.eval()
        with torch.no_grad():
            losses = [
                loss_fn(model(ids).flatten(0, 1), labels.flatten()).item()
                for ids, labels in loader
            ]
        return sum(losses) / len(losses)

    before = mean_loss()
    print(f"loss before training: {before:.3f}")
    for epoch in range(epochs):
        model.train()
        for ids, labels in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(ids).flatten(0, 1), labels.flatten())
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch + 1}: last batch loss {loss.item():.3f}")
    after = mean_loss()
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"loss after training: {after:.3f} ({trained:,} trained weights)")
    return {"loss_before": before, "loss_after": after, "trained": trained}


if __name__ == "__main__":
    main()
