"""What the device tokenizer costs a tagger, against spaCy's tokens.

    python benchmarks/device_tokenizer.py [--tagger runs/deploy_tagger]
                                          [--file tagger-float32.onnx]

An app has raw sentences and no spaCy: `examples/device/ElmoTokenizer.java`
splits them by a short rule (its Python twin is
`elmo_core.text.device_tokenizer`). This measures what that rule costs
the tagger `examples/deploy_tagger.py` trained and exported (tagger (b)
on the main job's biLM, whose corpus spaCy split), on UD English-EWT dev:

1. every dev sentence's raw text (its `# text` line) is tokenised three
   ways: UD's gold words (what the tagger was trained on), spaCy's
   rule-based tokenizer (`elmo_core.text.tokenizer("spacy")`, what
   `keras-elmo prepare` splits with) and the device rule;
2. each tokenisation is tagged by the exported file as the device runs it
   (`DeviceTagger` of `examples/deploy_tagger.py`: the file,
   `tagger.json`, `elmo_core.runtime`; no TensorFlow);
3. scored as CoNLL 2018 scores a system that tokenises by itself: a
   token is right when its character span is a gold word's and its tag
   that word's; UPOS F1 is over the predicted and the gold counts (for the
   gold words it is the accuracy). Token span F1 against the gold words,
   and between the two tokenizers, is printed beside it, with each
   tokenizer's speed (sentences a second, one process).

A gold word inside a multiword token ("don't": "do" "n't") has its span
when the words spell the token, else none (no tokenizer can match it).
"""

import argparse
import gzip
import importlib.util
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV = os.path.join(ROOT, "data", "ud_english_ewt", "en_ewt-ud-dev.conllu.gz")
BATCH = 64


def read_dev(path=DEV):
    """`[(text, [(start, end, tag, form), ...])]`: each sentence's raw
    text and its gold words' spans, tags and forms."""
    found, text, rows = [], None, []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# text = "):
                text = line[len("# text = ") :]
            elif not line and rows:
                found.append((text, gold_words(text, rows)))
                text, rows = None, []
            elif line and not line.startswith("#"):
                rows.append(line.split("\t"))
    return found


def gold_words(text, rows):
    """The spans and tags of a sentence's syntactic words."""
    words, at, covered = [], 0, 0
    for row in rows:
        number, form, tag = row[0], row[1], row[3]
        if "." in number:  # an empty node
            continue
        if "-" in number:  # a multiword token: its words follow
            first, last = map(int, number.split("-"))
            start = text.find(form, at)
            at, covered = start + len(form), last
            parts = [r for r in rows if _number(r) in range(first, last + 1)]
            spelled = "".join(r[1] for r in parts) == form
            for part in parts:
                end = start + len(part[1])
                span = (start, end) if spelled else (-1, -1)
                words.append((*span, part[3], part[1]))
                start = end
        elif int(number) > covered:
            start = text.find(form, at)
            words.append((start, start + len(form), tag, form))
            at = start + len(form)
    return words


def _number(row):
    return int(row[0]) if row[0].isdigit() else -1


def spans(text, tokens):
    """Each token's span in `text`, in order (None if one is not there:
    a tokenizer that changed the text)."""
    found, at = [], 0
    for token in tokens:
        start = text.find(token, at)
        if start < 0:
            return None
        found.append((start, start + len(token)))
        at = start + len(token)
    return found


def tokenizers():
    """`{name: a function from text to tokens}` of the two tokenizers."""
    from elmo_core.text import tokenizer
    from elmo_core.text.device_tokenizer import tokenize

    return {"spacy": tokenizer("spacy").tokenize, "device": tokenize}


def device_tagger(folder, file_name):
    """examples/deploy_tagger.py's `DeviceTagger` on `folder/file_name`."""
    path = os.path.join(ROOT, "examples", "deploy_tagger.py")
    spec = importlib.util.spec_from_file_location("deploy_tagger", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(os.path.join(folder, "tagger.json"), encoding="utf-8") as f:
        info = json.load(f)
    return module.DeviceTagger(os.path.join(folder, file_name), info)


def tag_all(tagger, sentences):
    """Tags of every token list, in batches of similar length."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    tags = [None] * len(sentences)
    for at in range(0, len(order), BATCH):
        batch = order[at : at + BATCH]
        for i, found in zip(batch, tagger([sentences[i] for i in batch])):
            tags[i] = found
    return tags


def score(dev, tokenised, tags):
    """`(UPOS F1, token span F1)` of tagged token spans against gold."""
    right_tags = right_spans = predicted = gold = 0
    for (text, words), token_spans, sentence_tags in zip(dev, tokenised, tags):
        truth = {(start, end): tag for start, end, tag, _ in words}
        for span, tag in zip(token_spans, sentence_tags):
            right_spans += span in truth
            right_tags += truth.get(span) == tag
        predicted += len(token_spans)
        gold += len(words)
    return 2 * right_tags / (predicted + gold), 2 * right_spans / (
        predicted + gold
    )


def agreement(a, b):
    """Token span F1 between two tokenisations of the same sentences."""
    same = sum(len(set(x) & set(y)) for x, y in zip(a, b))
    return 2 * same / sum(len(x) + len(y) for x, y in zip(a, b))


def tokenise(dev, tokenize):
    """`(token lists, span lists, sentences a second)`."""
    started = time.perf_counter()
    tokens = [tokenize(text) for text, _ in dev]
    rate = len(dev) / (time.perf_counter() - started)
    found = [spans(text, t) for (text, _), t in zip(dev, tokens)]
    if any(s is None for s in found):
        sys.exit("a tokenizer changed a dev sentence's text: spans unknown")
    return tokens, found, rate


def cpu():
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        names = [
            line.split(":", 1)[1].strip()
            for line in f
            if line.startswith("model name")
        ]
    return f"{names[0] if names else 'unknown'}, {os.cpu_count()} CPUs"


def measure(dev, tagger):
    """`{tokens: (UPOS F1, token F1, F1 with spaCy's, sentences/s)}`."""
    gold_tokens = [[w[3] for w in words] for _, words in dev]
    gold_spans = [[w[:2] for w in words] for _, words in dev]
    rows = {"gold words": (gold_tokens, gold_spans, None)}
    for name, tokenize in tokenizers().items():
        rows[name] = tokenise(dev, tokenize)
    results = {}
    for name, (tokens, token_spans, rate) in rows.items():
        upos, token_f1 = score(dev, token_spans, tag_all(tagger, tokens))
        same = agreement(token_spans, rows["spacy"][1])
        results[name] = (upos, token_f1, same, rate)
    return results


def print_report(dev, file_name, results):
    words = sum(len(w) for _, w in dev)
    print(f"UD English-EWT dev, {len(dev):,} sentences, {words:,} words")
    print(f"tagger: {file_name}; {cpu()}")
    header = ["tokens", "UPOS F1", "token F1", "as spaCy", "sent/s"]
    print(f"{header[0]:<12}" + "".join(f"{h:>10}" for h in header[1:]))
    for name, (upos, token_f1, same, rate) in results.items():
        numbers = [f"{100 * x:>10.2f}" for x in (upos, token_f1, same)]
        numbers.append(f"{rate:>10,.0f}" if rate else "")
        print(f"{name:<12}" + "".join(numbers))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--tagger",
        default=os.path.join(ROOT, "runs", "deploy_tagger"),
        help="examples/deploy_tagger.py's output folder",
    )
    parser.add_argument(
        "--file",
        default="tagger-float32.onnx",
        help="the exported tagger file in it (default %(default)s)",
    )
    args = parser.parse_args(argv)
    dev = read_dev()
    results = measure(dev, device_tagger(args.tagger, args.file))
    print_report(dev, args.file, results)


if __name__ == "__main__":
    main()
