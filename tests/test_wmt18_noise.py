"""The noisy-corpus builder of benchmarks/studies/wmt18-filtering/recipes/filtering.yaml
(benchmarks/make_noisy_multi30k.py):
every row carries the label and noise kind it was made with, and the recipe's documented random
and oracle variants validate."""

from __future__ import annotations

from collections import Counter

from bitextforge.recipe.load import load_recipe

from conftest import ROOT, benchmark


CLEAN = [(f"Ein Hund Nummer {i} läuft über die Wiese .",
          f"A dog number {i} runs over the meadow .") for i in range(4)]
BASE = [(f"Zwei Kinder spielen im Sand am Strand Nummer {i} .",
         f"Two children play in the sand on beach number {i} .") for i in range(10)]
FOREIGN = [f"Deux enfants jouent dans le sable numéro {i} ." for i in range(10)]
WEB = [("Hallo Welt", "Hallo Welt"), ("Guten Morgen .", "Good morning ."),
       ("Danke schön .", "Thank you very much ."), ("Bis bald .", "See you soon .")]


def test_builder_labels_each_row_with_its_noise_kind():
    rows = benchmark("make_noisy_multi30k").build(CLEAN, BASE, FOREIGN, WEB, seed=3)
    kinds = Counter(r[3] for r in rows)
    assert kinds == {"clean": 4, "misaligned": 2, "misordered": 2, "wrong_language": 2,
                     "untranslated": 2, "short": 2, "opus100_copy": 1, "opus100_misaligned": 3}
    base_src = {s for s, _ in BASE}
    base_pair = dict(BASE)
    web_pair = dict(WEB)
    for src, tgt, label, kind in rows:
        assert label == ("V" if kind == "clean" else "N"), (label, kind)
        if kind == "clean":
            assert (src, tgt) in CLEAN
        elif kind == "misaligned":
            assert src in base_src and tgt != base_pair[src]
            assert tgt in base_pair.values()
        elif kind == "misordered":
            assert sorted(tgt.split()) == sorted(base_pair[src].split()) and tgt != base_pair[src]
        elif kind == "wrong_language":
            assert tgt == FOREIGN[BASE.index((src, base_pair[src]))]
        elif kind == "untranslated":
            assert src == tgt and src in base_src
        elif kind == "short":
            n = len(src.split())
            assert 1 <= n <= 5 and n == len(tgt.split())
            full = next(p for p in BASE if p[0].startswith(src))
            assert full[1].startswith(tgt)
        elif kind == "opus100_copy":
            assert src == tgt == "Hallo Welt"
        else:
            assert src in web_pair and tgt != web_pair[src] and tgt in web_pair.values()
    # shuffled: the clean rows are not simply first
    assert [r[3] for r in rows[:4]] != ["clean"] * 4
    assert rows == benchmark("make_noisy_multi30k").build(CLEAN, BASE, FOREIGN, WEB, seed=3)


def test_builder_rejects_unaligned_foreign_lines():
    import pytest

    with pytest.raises(ValueError, match="10 base pairs but 9 foreign"):
        benchmark("make_noisy_multi30k").build(CLEAN, BASE, FOREIGN[:9], WEB)


def test_wmt18_random_and_oracle_variants_validate():
    path = ROOT / "benchmarks/studies/wmt18-filtering/recipes/filtering.yaml"
    select = "steps=[{filter: dedupe.v1, keep: {min: 1, words: 166000}}]"
    main = load_recipe(path)
    assert main.steps[-1].keep.words == 166000
    rnd = load_recipe(path, [select, "evaluate[1].with.baseline=null"])
    assert rnd.steps[0].keep.words == 166000 and len(rnd.steps) == 1
    oracle = load_recipe(path, [select, "input.path=runs/wmt18-data/clean.tsv"])
    assert oracle.input.path.endswith("clean.tsv")


def test_news_split_keeps_the_scorers_data_apart_from_the_corpus():
    """The news variant's scorers are trained on pool pairs the noisy corpus never holds: every
    pair lands on one side only, each set but Tatoeba is halved, Tatoeba gives the corpus at
    most its cap, empty pairs go, and the split is the same for the same seed."""
    sets = {"nc": [(f"nc de {i}", f"nc en {i}") for i in range(11)],
            "tatoeba": [(f"ta de {i}", f"ta en {i}") for i in range(40)] + [("", "leer")]}
    b = benchmark("make_noisy_multi30k")
    corpus, scorers = b.news_split(sets, seed=5, tatoeba=6)
    assert len(corpus) == 5 + 6
    assert len(scorers["nc"]) == 6 and len(scorers["tatoeba"]) == 34
    every = [p for ps in sets.values() for p in ps if p[0]]
    assert sorted(corpus + scorers["nc"] + scorers["tatoeba"]) == sorted(every)
    assert not set(corpus) & (set(scorers["nc"]) | set(scorers["tatoeba"]))
    assert (corpus, scorers) == b.news_split(sets, seed=5, tatoeba=6)


def test_wmt18_news_variants_validate():
    path = ROOT / "benchmarks/studies/wmt18-filtering/recipes/news.yaml"
    main = load_recipe(path)
    assert main.steps[-1].keep.words == 424000
    # the scorers are trained on the scorer files only, never on the corpus
    files = [str(f) for p in main.prepare for f in p.with_["corpus"]]
    assert len(files) == 11 and sum("scorer-" in f for f in files) == 8
    assert not any("noisy" in f or "clean" in f for f in files)
    rnd = load_recipe(path, ["prepare=[]", "steps=[{filter: dedupe.v1, keep: {min: 1, words: "
                             "424000}}]", "evaluate[1].with.baseline=null"])
    assert len(rnd.steps) == 1 and not rnd.prepare
