"""The main job's report (`examples/pretrain_gutenberg.py`): held-out
perplexity in domain and out of domain, each beside the count baselines
trained on the same text, and the out-of-domain text kept out of
training."""

import importlib.util
import json
import os
import shutil

import pytest

from keras_elmo.baselines.kneser_ney import KneserNey
from keras_elmo.training.evaluate import evaluate
from tests.helpers import COMPAT_RUN
from tests.helpers import TRAIN_TEXT

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EWT_DEV = os.path.join(ROOT, "data", "ud_english_ewt", "dev.txt.gz")


def _main_job():
    path = os.path.join(ROOT, "examples", "pretrain_gutenberg.py")
    spec = importlib.util.spec_from_file_location("main_job", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_out_of_domain_text_is_not_trained_on():
    job = _main_job()
    args = job.train_args("runs/x", "60s")
    given = [args[i + 1] for i, a in enumerate(args) if a in ("--train",
             "--validation")]  # fmt: skip
    assert job.OUT_OF_DOMAIN not in given
    assert os.path.exists(job.OUT_OF_DOMAIN)
    # Web text: EWT dev, 2,001 sentences.
    assert sum(1 for _ in job.pieces(job.OUT_OF_DOMAIN)) == 2001


def test_report_gives_both_texts_beside_their_baselines(
    tmp_path, capsys, monkeypatch
):
    job = _main_job()
    run = tmp_path / "run"
    shutil.copytree(COMPAT_RUN, run)
    inside = tmp_path / "inside.txt"
    with open(TRAIN_TEXT, encoding="utf-8") as f:
        inside.write_text(f.read())
    outside = tmp_path / "outside.txt"
    outside.write_text("the cat sat on a mat today .\nsome new words here\n")
    # Enough text for the 5-gram's discounts.
    monkeypatch.setattr(job, "TRAIN", EWT_DEV)
    held_out = {"in domain": str(inside), "out of domain": str(outside)}
    monkeypatch.setattr(job, "HELD_OUT", held_out)
    truth = evaluate(str(run), [str(inside)], verbose=0)
    history = [
        {
            "step": 7,
            "epoch": 1.0,
            "elapsed_s": 60.0,
            **{f"valid_{k}": truth[k] for k in
               ("perplexity", "forward_perplexity", "backward_perplexity")},
        }
    ]  # fmt: skip
    vocab = (run / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    job.report(str(run), history, vocab)
    printed = capsys.readouterr().out
    record = json.loads((run / "heldout.json").read_text())
    away = evaluate(str(run), [str(outside)], verbose=0)
    assert record["out of domain"]["bilm"] == pytest.approx(away["perplexity"])
    assert record["in domain"]["bilm"] == pytest.approx(truth["perplexity"])
    # The 5-gram of each column: Kneser-Ney on the training text, in the
    # vocabulary's ids, evaluated on that column's text.
    ids = {w: i for i, w in enumerate(vocab)}

    def mapped(path):
        return [[ids.get(w, ids["<UNK>"]) for w in s]
                for s in job.pieces(path)]  # fmt: skip

    five = KneserNey(len(ids), ids["<S>"], ids["</S>"], order=5)
    five.fit(mapped(EWT_DEV))
    for name, path in held_out.items():
        column = record[name]
        assert column["kneser_ney_5gram"] == pytest.approx(
            five.perplexity(mapped(path))
        )
        assert column["ratio_to_5gram"] == pytest.approx(
            column["bilm"] / column["kneser_ney_5gram"]
        )
    assert record["in domain"]["bilm"] != record["out of domain"]["bilm"]
    ratios = (
        f"{record['in domain']['ratio_to_5gram']:.3f}x",
        f"{record['out of domain']['ratio_to_5gram']:.3f}x",
    )
    line = next(x for x in printed.split("\n") if "biLM / 5-gram" in x)
    assert line.split()[-2:] == list(ratios)
    assert "in domain" in printed and "out of domain" in printed
