"""recipes/wieting-classifier-data.yaml and recipes/wieting-filters.yaml, run as shipped on tiny
real data: a de->en Marian model trained for a few updates on 300 News Commentary pairs, 40
sentences to back-translate, the real KenLM and classifier trainers, and small embedding models.
These check the pipeline (which rows, which files, which score columns, equal-size selections),
not the quality of the paraphrases, which benchmarks/studies/wieting/history.md measures with the real model."""

from __future__ import annotations

import gzip
import math

import pytest
import yaml

from bitextforge.recipe.load import dump_yaml, parse_recipe
from bitextforge.api import run_recipe

from conftest import ROOT, read_lines, shared

pytest.importorskip("ctranslate2")
pytest.importorskip("kenlm")

POOL = "deen-train-pool"


def _tsv_lines(*parts: str, n: int) -> list[tuple[str, str]]:
    return [tuple(line.split("\t")[:2]) for line in read_lines(shared(POOL, *parts), n)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 1+1-layer Marian de->en model trained for a few updates, and small real inputs."""
    from bitextforge.plugins.nmt.train import TrainOptions, train

    d = tmp_path_factory.mktemp("wieting")
    nc = _tsv_lines("news-commentary-v11-deen-20k", "train.de-en.tsv.gz", n=300)
    news = _tsv_lines("wmt-newstest-2008-2013-deen", "train.de-en.tsv.gz", n=60)
    (d / "t.de").write_text("".join(de + "\n" for de, _ in nc), encoding="utf-8")
    (d / "t.en").write_text("".join(en + "\n" for _, en in nc), encoding="utf-8")
    with gzip.open(d / "nc.tsv.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(f"{de}\t{en}\n" for de, en in nc[:40])
    with gzip.open(d / "news.tsv.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(f"{de}\t{en}\n" for de, en in news)
    sts = read_lines(shared("stsbenchmark", "sts-dev.csv"), 200)
    (d / "sts.csv").write_text("".join(x + "\n" for x in sts), encoding="utf-8")
    opts = TrainOptions(src_train=str(d / "t.de"), tgt_train=str(d / "t.en"), src_lang="de",
                        tgt_lang="en", output=str(d / "model"), max_steps=12, vocab_size=400,
                        d_model=32, layers=1, heads=2, ffn_dim=64, batch_tokens=600, lr=3e-3,
                        warmup=5, min_warmup_steps=0, threads=1, max_len=24)
    train(opts, log=lambda m: None)
    return {"dir": d, "model": d / "model", "news": news}


def _recipe(name: str, changes) -> object:
    data = yaml.safe_load((ROOT / "recipes" / name).read_text(encoding="utf-8"))
    changes(data)
    return parse_recipe(dump_yaml(data), name)


def _classifier_data(tiny):
    d = tiny["dir"]

    def changes(r):
        r["input"].update(path=str(d / "news.tsv.gz"), limit=30)
        r["steps"][0]["with"].update(model=str(tiny["model"]), max_length=24, threads=1)
        r["output"]["dir"] = str(d / "classifier-data")
        r["progress"] = False

    run_recipe(_recipe("wieting-classifier-data.yaml", changes))
    return d / "classifier-data"


def test_classifier_data_pairs_each_translation_with_its_reference(tiny):
    out = _classifier_data(tiny)
    translations = (out / "corpus.src").read_text(encoding="utf-8").splitlines()
    references = (out / "corpus.tgt").read_text(encoding="utf-8").splitlines()
    # one translation per German sentence, its English reference on the same line
    assert references == [en for _, en in tiny["news"][:30]]
    assert len(translations) == 30 and any(translations)
    assert translations != references


def test_filters_recipe_scores_every_candidate_and_compares_at_equal_size(tiny):
    d = tiny["dir"]
    data = _classifier_data(tiny)

    def changes(r):
        r["input"]["path"] = str(d / "nc.tsv.gz")
        r["prepare"][0]["with"].update(text=str(d / "news.tsv.gz"),
                                       output=str(d / "lm" / "en.binary"))
        r["prepare"][1]["with"].update(references=str(data / "corpus.tgt"),
                                       translations=str(data / "corpus.src"),
                                       output=str(d / "clf" / "ref.joblib"))
        r["steps"][0]["with"].update(model=str(tiny["model"]), max_length=24, threads=1)
        step = {s.get("filter"): s for s in r["steps"]}
        step["kenlm_perplexity.v1"]["with"]["model"] = str(d / "lm" / "en.binary")
        step["reference_classifier.v1"]["with"]["model"] = str(d / "clf" / "ref.joblib")
        # the shipped filters and bounds on 40 sentences of a 12-update model may leave no pair
        # in a bound; two selections that always have pairs keep the run about the pipeline
        ev = r["evaluate"][0]["with"]
        ev.update(max_pairs=15, dim=16, epochs=2, workers=1, seeds=[1],
                  benchmarks={"dev": str(d / "sts.csv")},
                  selections={"random": {}, "short": {"length": {"max": 1000}},
                              "diverse": {"unigram_overlap": {"max": 1.0}}})
        r["output"]["dir"] = str(d / "filters")
        r["progress"] = False

    res = run_recipe(_recipe("wieting-filters.yaml", changes))
    lines = (d / "filters" / "corpus.tsv").read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    rows = [dict(zip(head, ln.split("\t"))) for ln in lines[1:]]
    bt = [r for r in rows if r["variant"] != "0"]
    # every original and every candidate stays: the steps only score
    assert len(rows) - len(bt) == 40 and len(bt) > 40
    for r in bt:
        assert int(r["length"]) == len(r["tgt"].split())
        assert float(r["translation_cost"]) > 0
        assert float(r["kenlm_perplexity"]) > 1
        assert 0 <= float(r["reference_classifier"]) <= 1
        for n in ("unigram", "bigram", "trigram"):
            assert 0 <= float(r[f"{n}_overlap"]) <= 1
        assert 0 <= float(r["sentence_bleu"]) <= 100
        assert 0 <= float(r["chrf"]) <= 100
        assert -1 <= float(r["minilm_cosine"]) <= 1.0001
    # a back-translation identical to its reference is the same sentence to MiniLM
    same = [r for r in bt if r["tgt"] == r["tgt_original"]]
    assert all(float(r["minilm_cosine"]) > 0.999 for r in same)
    nums = res.reports["paraphrastic_embeddings.v1"]["numbers"]
    assert [nums[f"{s}.pairs"] for s in ("random", "short", "diverse")] == [15, 15, 15]
    for s in ("random", "short", "diverse"):
        for m in ("word", "trigram"):
            assert -1 <= nums[f"{s}.{m}.dev"] <= 1 and not math.isnan(nums[f"{s}.{m}.dev"])


def test_shipped_selections_name_the_recipes_score_columns():
    """Every column a shipped selection bounds is one the recipe's filter steps write."""
    data = yaml.safe_load((ROOT / "recipes" / "wieting-filters.yaml").read_text(encoding="utf-8"))
    columns = {s.get("as") or s["filter"].split(".")[0] for s in data["steps"] if "filter" in s}
    (ev,) = data["evaluate"]
    sel = ev["with"]["selections"]
    assert "random" in sel and sel["random"] == {}
    assert {c for bounds in sel.values() for c in bounds} <= columns
    assert ev["with"]["max_pairs"] == 3000 and ev["with"]["seeds"] == [1, 2, 3, 4]
