"""Which library should split raw text into sentences and tokens?

    python benchmarks/tokenization.py [--sample 3000] [--seed 0]
                                    [--ewt dev,train] [--speed-bytes 1000000]

Candidates, each imported only where it is used (a missing one is reported
as "not installed"):

- regex: the standard-library rules of data/gutenberg_lm/prepare.py, the
  script that made the bundled corpus until `keras-elmo prepare` did (so
  it is the corpus reference; read from git at `REFERENCE`, with the
  files it made);
- sacremoses: `MosesTokenizer(lang).tokenize(text, escape=False)` on the
  whole text (tokens only, Moses has no sentence splitter);
- pysbd + sacremoses: pysbd sentences, each tokenised by Moses (the
  package's `moses` takes spaCy's sentences instead: pysbd missed a third
  of the corpus's);
- spacy: `spacy.blank(lang)` rule-based tokenizer + the `sentencizer` pipe;
- syntok: its segmenter on its tokenizer (hyphens emitted as tokens, "n't"
  kept as written, so no character is dropped or replaced);
- pysbd: sentences only.

Measured, all in one run:

1. corpus tokens: `--sample` paragraphs (seeded, over all books) of
   `paragraphs(clean(raw))`, tokenised by each candidate against the
   tokens prepare.py gave the same paragraph (checked first: prepare.py
   rebuilds train.txt.gz + valid.txt.gz). Whitespace is removed, every
   token becomes a character span of the whitespace-free string, and a
   token agrees when start and end both match: precision / recall / F1
   over all tokens. The raw books hold no curly quotes, so quotes are as-is;
2. corpus sentences: F1 of sentence end positions (whitespace-free) inside
   each paragraph; the paragraph's own end is not counted (every splitter
   gets it), nor are prepare.py's 150-token cuts;
3. UD English-EWT (`--ewt` splits): token span F1 per `# text` sentence
   against the gold syntactic words ("do" "n't") and against the surface
   tokens (multiword ranges such as "don't" whole); the same after mapping
   curly quotes to straight ones in the input; and sentence-end F1 on each
   document's sentences joined by spaces (document end not counted);
4. speed: split + tokenise of about `--speed-bytes` of the sampled
   paragraphs (seeded order), one process, after a warm-up; rates are in
   the reference (prepare.py) tokens of that text, so rows compare;
5. languages: how many each library has rules for, found from its data
   where possible, and a few non-English sentences tokenised by each.

Prints the machine (CPU model, avx2/avx512f/avx512_vnni, cores) and date,
a summary table (one row per candidate), P/R/F1 details, the most frequent
disagreements with the corpus per candidate, the language counts and the
sample sentences.
"""

import argparse
import collections
import datetime
import gzip
import os
import random
import re
import subprocess
import time
import types
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUTENBERG = os.path.join(ROOT, "data", "gutenberg_lm")
EWT = os.path.join(ROOT, "data", "ud_english_ewt", "en_ewt-ud-{}.conllu.gz")
CURLY_CHARS = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
CURLY = str.maketrans(CURLY_CHARS)
SAMPLES = {
    "de": "Herr Dr. Müller sagte: „Das ist z. B. nicht möglich.“ Er ging.",
    "fr": "L'homme n'est-il pas arrivé? « Oui », dit M. Dupont aujourd'hui.",
    "es": "¿Dónde está el Sr. García? No lo sé. ¡Qué día!",
    "ru": "Г-н Иванов сказал: «Это т. е. невозможно». Он ушёл.",
    "zh": "我们今天去北京。他说：“你好！”然后走了。",
}
EXTRAS = ("sudachipy", "mecab-ko", "natto-py", "pythainlp", "pyvi", "jieba")
# The last commit with the bundled corpus as data/gutenberg_lm/prepare.py
# made it (its regex rules are the corpus reference; `keras-elmo prepare`
# made it after).
REFERENCE = "539c8fe"
WINDOW = 30  # characters a token may lie ahead of the cursor when aligned


# -- the candidates --------------------------------------------------------


def from_history(path):
    """The bytes of `path` (relative to the repository) at `REFERENCE`."""
    return subprocess.run(
        ["git", "show", f"{REFERENCE}:{path}"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout


def load_prepare():
    """The bundled corpus's first preparation script, from `REFERENCE`."""
    source = from_history("data/gutenberg_lm/prepare.py").decode("utf-8")
    module = types.ModuleType("prepare")
    exec(compile(source, "prepare.py", "exec"), module.__dict__)
    return module


def build_regex(lang):
    prepare = load_prepare()
    return lambda text: list(prepare.sentences(text))


def build_sacremoses(lang):
    from sacremoses import MosesTokenizer

    moses = MosesTokenizer(lang=lang)
    return lambda text: [moses.tokenize(text, escape=False)]


def build_pysbd(lang):
    import pysbd

    segmenter = pysbd.Segmenter(language=lang, clean=False)
    return lambda text: [[s] for s in segmenter.segment(text) if s.strip()]


def build_pysbd_sacremoses(lang):
    from sacremoses import MosesTokenizer

    split = build_pysbd(lang)
    moses = MosesTokenizer(lang=lang)
    return lambda text: [moses.tokenize(s, escape=False) for [s] in split(text)]


def build_spacy(lang):
    import spacy

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    return lambda text: [
        [t.text for t in s if not t.is_space] for s in nlp(text).sents
    ]


def build_syntok(lang):
    from syntok.segmenter import segment
    from syntok.tokenizer import Tokenizer

    tokenizer = Tokenizer(
        emit_hyphen_or_underscore_sep=True, replace_not_contraction=False
    )
    return lambda text: [
        [t.value for t in s] for s in segment(tokenizer.tokenize(text))
    ]


# name: (build(lang) -> text -> [[token]], gives tokens, gives sentences)
CANDIDATES = {
    "regex (prepare.py)": (build_regex, True, True),
    "sacremoses": (build_sacremoses, True, False),
    "pysbd + sacremoses": (build_pysbd_sacremoses, True, True),
    "spacy blank+sentencizer": (build_spacy, True, True),
    "syntok": (build_syntok, True, True),
    "pysbd": (build_pysbd, False, True),
}


def load_candidates(lang="en"):
    """`{name: run}`, or `{name: "not installed" / "failed: ..."}`."""
    runs = {}
    for name, (build, _, _) in CANDIDATES.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run = build(lang)
                run("Mr. Smith didn't go. He stayed.")
            runs[name] = run
        except ImportError as error:
            runs[name] = f"not installed ({error.name})"
        except Exception as error:  # a broken library is a result too
            runs[name] = f"failed: {type(error).__name__}: {error}"[:60]
    return runs


# -- spans and scores ------------------------------------------------------


def nospace(text):
    return re.sub(r"\s+", "", text)


def spans(tokens, text):
    """Character spans of `tokens` in the whitespace-free `text`; a token
    not found within WINDOW characters of the cursor gets None."""
    out, cursor = [], 0
    for token in tokens:
        piece = nospace(token)
        if not piece:
            continue
        at = text.find(piece, cursor, cursor + WINDOW + len(piece))
        if at < 0:
            out.append(None)
            continue
        out.append((at, at + len(piece)))
        cursor = at + len(piece)
    return out


def sentence_ends(sentences, text):
    """Whitespace-free end offsets of all sentences but the last."""
    ends, cursor = [], 0
    for sentence in sentences:
        found = [s for s in spans(sentence, text[cursor:]) if s]
        if found:
            cursor += found[-1][1]
            ends.append(cursor)
    return set(e for e in ends if e < len(text))


class Score:
    """Micro precision / recall / F1 over sets of items."""

    def __init__(self):
        self.hit = self.predicted = self.gold = 0

    def add(self, predicted, gold, counted=None):
        predicted_set = set(p for p in predicted if p is not None)
        self.hit += len(predicted_set & set(gold))
        self.predicted += len(predicted) if counted is None else counted
        self.gold += len(gold)

    def prf(self):
        p = self.hit / max(self.predicted, 1)
        r = self.hit / max(self.gold, 1)
        return p, r, 2 * p * r / max(p + r, 1e-12)

    def f1(self):
        return self.prf()[2]


# -- data ------------------------------------------------------------------


def check_reference(prepare):
    """Does prepare.py rebuild the bundled train + valid files?"""
    built = []
    for path in prepare.raw_files(os.path.join(GUTENBERG, "raw")):
        built.extend(prepare.book_sentences(path)[1])
    bundled = []
    for split in ("train", "valid"):
        path = f"data/gutenberg_lm/{split}.txt.gz"
        text = gzip.decompress(from_history(path)).decode("utf-8")
        bundled.extend(text.splitlines())
    return sorted(built) == sorted(bundled), len(bundled)


def sample_paragraphs(prepare, n, seed):
    """`[(book, paragraph)]`: n paragraphs drawn over all books."""
    paragraphs = []
    for path in prepare.raw_files(os.path.join(GUTENBERG, "raw")):
        name, text = prepare.read_raw(path)
        book = name.split(".")[0]
        paragraphs.extend((book, p) for p in prepare.paragraphs(
            prepare.clean(text)))  # fmt: skip
    rng = random.Random(seed)
    rng.shuffle(paragraphs)
    return paragraphs[:n], paragraphs


def read_conllu(path):
    """`[[(text, words, surface)]]`: the sentences of each document."""
    documents, sentence = [], None
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# newdoc") or (
                line.startswith("# text = ") and not documents
            ):
                documents.append([])
            if line.startswith("# text = "):
                sentence = (line[len("# text = ") :], [], [])
                documents[-1].append(sentence)
            elif line and not line.startswith("#"):
                add_conllu_token(sentence, line.split("\t"))
    return [d for d in documents if d]


def add_conllu_token(sentence, columns):
    index, form = columns[0], columns[1]
    _, words, surface = sentence
    if "." in index:  # empty node
        return
    if "-" in index:  # multiword range: surface token
        start, end = (int(i) for i in index.split("-"))
        surface.append((form, start, end))
        return
    words.append(form)
    if not any(s <= int(index) <= e for _, s, e in surface if e):
        surface.append((form, int(index), 0))


# -- measurements ----------------------------------------------------------


def corpus_tokens(runs, prepare, paragraphs, translate=None):
    """Token span scores and the disagreements counter of each run."""
    scores = {n: Score() for n in runs}
    missed = {n: collections.Counter() for n in runs}
    for _, paragraph in paragraphs:
        text = nospace(paragraph)
        gold_tokens = [t for t, _ in prepare.tokenize(paragraph)]
        gold = spans(gold_tokens, text)
        source = paragraph.translate(translate) if translate else paragraph
        for name, run in runs.items():
            tokens = [t for s in run(source) for t in s]
            found = spans(tokens, text)
            scores[name].add(found, gold)
            count_disagreements(missed[name], gold_tokens, gold, set(found))
    return scores, missed


def count_disagreements(counter, tokens, gold, found):
    for token, span in zip(tokens, gold):
        if span not in found:
            counter[token] += 1


def corpus_sentences(runs, prepare, paragraphs):
    scores = {n: Score() for n in runs}
    for _, paragraph in paragraphs:
        text = nospace(paragraph)
        gold = sentence_ends(prepare.sentences(paragraph), text)
        for name, run in runs.items():
            scores[name].add(list(sentence_ends(run(paragraph), text)), gold)
    return scores


def ewt_tokens(runs, documents, translate=None):
    """`{name: (words Score, surface Score)}` and the gold mismatches."""
    scores = {n: (Score(), Score()) for n in runs}
    unaligned = 0
    for document in documents:
        for raw, words, surface in document:
            text = nospace(raw)
            gold_words = spans(words, text)
            gold_surface = spans([f for f, _, _ in surface], text)
            unaligned += gold_words.count(None) + gold_surface.count(None)
            source = raw.translate(translate) if translate else raw
            for name, run in runs.items():
                found = spans([t for s in run(source) for t in s], text)
                scores[name][0].add(found, [g for g in gold_words if g])
                scores[name][1].add(found, [g for g in gold_surface if g])
    return scores, unaligned


def ewt_sentences(runs, documents):
    scores = {n: Score() for n in runs}
    for document in documents:
        raw = " ".join(text for text, _, _ in document)
        text = nospace(raw)
        gold, cursor = set(), 0
        for sentence, _, _ in document[:-1]:
            cursor += len(nospace(sentence))
            gold.add(cursor)
        for name, run in runs.items():
            scores[name].add(list(sentence_ends(run(raw), text)), gold)
    return scores


def speed(runs, prepare, paragraphs, size):
    """`{name: reference tokens / s}` over about `size` bytes of text."""
    chosen, total = [], 0
    for _, paragraph in paragraphs:
        if total >= size:
            break
        chosen.append(paragraph)
        total += len(paragraph.encode("utf-8"))
    tokens = sum(len(prepare.tokenize(p)) for p in chosen)
    rates = {}
    for name, run in runs.items():
        for paragraph in chosen[:50]:  # warm-up
            run(paragraph)
        started = time.perf_counter()
        for paragraph in chosen:
            run(paragraph)
        rates[name] = tokens / (time.perf_counter() - started)
    return rates, total, tokens


# -- languages -------------------------------------------------------------


def moses_languages():
    from sacremoses._data_nonbreaking_prefixes import NONBREAKING_PREFIXES

    return sorted(k.split(".")[-1] for k in NONBREAKING_PREFIXES
                  if k.startswith("nonbreaking_prefix."))  # fmt: skip


def pysbd_languages():
    from pysbd.languages import LANGUAGE_CODES

    return sorted(LANGUAGE_CODES)


def spacy_languages():
    """(codes that `spacy.blank` loads, {code: missing package})."""
    import pkgutil

    import spacy
    import spacy.lang

    loaded, missing = [], {}
    for module in pkgutil.iter_modules(spacy.lang.__path__):
        if not module.ispkg:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                spacy.blank(module.name)
            loaded.append(module.name)
        except ImportError as error:
            found = [k for k in EXTRAS if k in str(error).lower()]
            missing[module.name] = "+".join(found) or str(error)[:30]
        except Exception as error:
            missing[module.name] = type(error).__name__
    return loaded, missing


def languages():
    """`{library: (count, note)}`."""
    out = {"regex": (1, "English (hand list of English abbreviations)")}
    for name, find in (("sacremoses", moses_languages),
                       ("pysbd", pysbd_languages)):  # fmt: skip
        try:
            codes = find()
            out[name] = (len(codes), " ".join(codes))
        except ImportError:
            out[name] = (None, "not installed")
    if out["sacremoses"][0] and out["pysbd"][0]:
        both = sorted(set(out["sacremoses"][1].split())
                      & set(out["pysbd"][1].split()))  # fmt: skip
        out["pysbd + sacremoses"] = (len(both), "both: " + " ".join(both))
    try:
        loaded, missing = spacy_languages()
        needs = ", ".join(f"{c}: {m}" for c, m in sorted(missing.items()))
        out["spacy"] = (len(loaded), f"blank() loads; needs extra: {needs}")
    except ImportError:
        out["spacy"] = (None, "not installed")
    out["syntok"] = (3, "docs: designed for English, German, Spanish "
                        "(other Indo-European may work)")  # fmt: skip
    return out


def language_of(name):
    return {"regex (prepare.py)": "regex", "sacremoses": "sacremoses",
            "pysbd + sacremoses": "pysbd + sacremoses", "pysbd": "pysbd",
            "spacy blank+sentencizer": "spacy",
            "syntok": "syntok"}[name]  # fmt: skip


def print_samples():
    for lang, text in SAMPLES.items():
        print(f"\n[{lang}] {text}")
        for name, run in load_candidates(lang).items():
            if isinstance(run, str):
                print(f"  {name:24} {run}")
                continue
            shown = " | ".join(" ".join(s) for s in run(text))
            print(f"  {name:24} {shown}")


# -- report ----------------------------------------------------------------


def machine():
    model, flags = "?", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    wanted = ("avx2", "avx512f", "avx512_vnni")
    present = " ".join(f"{w}={'yes' if w in flags else 'no'}" for w in wanted)
    now = datetime.datetime.now().astimezone().isoformat(timespec="minutes")
    return (f"{now}; CPU {model}; {present}; {os.cpu_count()} cores "
            "(a machine that may be shared)")  # fmt: skip


def cell(score, wanted):
    return f"{score.f1():.3f}" if wanted and score is not None else "-"


def print_table(runs, results, langs):
    head = ("candidate", "corpus tok", "corpus sent", "EWT tok w",
            "EWT tok s", "EWT sent", "tokens/s", "langs")  # fmt: skip
    print("%-24s %10s %11s %9s %9s %8s %9s %5s" % head)
    for name, run in runs.items():
        if isinstance(run, str):
            print(f"{name:24} {run}")
            continue
        _, tok, sent = CANDIDATES[name]
        ewt = results["ewt_tokens"][name]
        count = langs.get(language_of(name), (None,))[0]
        print("%-24s %10s %11s %9s %9s %8s %9.0f %5s" % (
            name, cell(results["corpus_tokens"][name], tok),
            cell(results["corpus_sentences"][name], sent),
            cell(ewt[0], tok), cell(ewt[1], tok),
            cell(results["ewt_sentences"][name], sent),
            results["speed"][name], count))  # fmt: skip


def print_details(runs, results):
    rows = (("corpus tokens", "corpus_tokens", 1),
            ("corpus sentences", "corpus_sentences", 2),
            ("EWT tokens, words", "ewt_tokens", 1),
            ("EWT tokens, surface", "ewt_tokens", 1),
            ("EWT tok. words, curly->straight", "ewt_curly", 1),
            ("EWT sentences", "ewt_sentences", 2))  # fmt: skip
    print("\nprecision / recall / F1")
    for title, key, kind in rows:
        print(f"  {title}")
        for name, run in runs.items():
            if isinstance(run, str) or not CANDIDATES[name][kind]:
                continue
            score = results[key][name]
            if key in ("ewt_tokens", "ewt_curly"):
                score = score[1 if "surface" in title else 0]
            p, r, f = score.prf()
            print(f"    {name:24} {p:.3f} / {r:.3f} / {f:.3f}")


def print_disagreements(missed, top=12):
    print("\nreference tokens most often not matched (corpus sample)")
    for name, counter in missed.items():
        shown = "  ".join(f"{t} {n}" for t, n in counter.most_common(top))
        print(f"  {name:24} {shown}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sample", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ewt", default="dev,train")
    parser.add_argument("--speed-bytes", type=int, default=1_000_000)
    args = parser.parse_args()
    print(machine())
    prepare = load_prepare()
    same, lines = check_reference(prepare)
    print(f"prepare.py rebuilds train+valid ({lines} lines): {same}")
    sample, everything = sample_paragraphs(prepare, args.sample, args.seed)
    books = len(set(b for b, _ in sample))
    print(f"corpus sample: {len(sample)} paragraphs from {books} books "
          f"(seed {args.seed})")  # fmt: skip
    runs = load_candidates()
    ready = {n: r for n, r in runs.items() if not isinstance(r, str)}
    results = measure(ready, prepare, sample, everything, args)
    langs = languages()
    print()
    print_table(runs, results, langs)
    print_details(runs, results)
    print_disagreements(results["missed"])
    print("\nlanguages with rules")
    for name, (count, note) in langs.items():
        print(f"  {name:18} {count if count is not None else '-':>3}  {note}")
    print_samples()


def measure(runs, prepare, sample, everything, args):
    results = {}
    tokenizers = {n: r for n, r in runs.items() if CANDIDATES[n][1]}
    splitters = {n: r for n, r in runs.items() if CANDIDATES[n][2]}
    results["corpus_tokens"], results["missed"] = corpus_tokens(
        tokenizers, prepare, sample)  # fmt: skip
    results["corpus_sentences"] = corpus_sentences(splitters, prepare, sample)
    documents = [d for split in args.ewt.split(",")
                 for d in read_conllu(EWT.format(split))]  # fmt: skip
    sentences = sum(len(d) for d in documents)
    results["ewt_tokens"], unaligned = ewt_tokens(tokenizers, documents)
    results["ewt_curly"], _ = ewt_tokens(tokenizers, documents, CURLY)
    results["ewt_sentences"] = ewt_sentences(splitters, documents)
    results["speed"], size, tokens = speed(
        runs, prepare, everything, args.speed_bytes)  # fmt: skip
    for name in runs:
        results["corpus_tokens"].setdefault(name, None)
        results["corpus_sentences"].setdefault(name, None)
        results["ewt_tokens"].setdefault(name, (None, None))
        results["ewt_sentences"].setdefault(name, None)
    print(
        f"EWT ({args.ewt}): {len(documents)} documents, {sentences} "
        f"sentences; {unaligned} gold tokens not aligned to the text"
    )
    print(f"speed text: {size} bytes, {tokens} reference tokens")
    curly = "".join(CURLY_CHARS)
    in_books = sum(p.count(c) for _, p in everything for c in curly)
    in_ewt = sum(t.count(c) for d in documents for t, _, _ in d for c in curly)
    print(f"curly quotes: {in_books} in the books, {in_ewt} in EWT texts")
    return results


if __name__ == "__main__":
    main()
