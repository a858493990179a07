"""Unit tests of the quality filters on small texts written for these tests (no shared data)."""

import math

import pytest

from bitextforge import ComponentError
from bitextforge.plugins.quality.cost import TranslationCostFilter
from bitextforge.plugins.quality.lm import KenlmPerplexityFilter, find_tool, train_lm
from bitextforge.plugins.quality.overlap import (NgramOverlapFilter, SentenceBleuFilter,
                                                  SentenceChrfFilter)
from bitextforge.plugins.quality.wordvec import ParaphraseScoreFilter
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from test_run import read_tsv, recipe_text


def make(cls, **kw):
    return cls(cls.Config(**kw))


def test_ngram_overlap_counts_distinct_ngrams_over_the_smaller_side():
    f = make(NgramOverlapFilter, n=1)
    batch = {"src": ["the cat sat", "A B", "x", ""], "tgt": ["The cat sat on the mat", "c d",
                                                             "x y z", "y"]}
    # {the,cat,sat} all in tgt -> 3/3; no shared -> 0; 1/1; empty side -> 0
    assert f.score(batch) == [1.0, 0.0, 1.0, 0.0]
    f2 = make(NgramOverlapFilter, n=2, lowercase=False)
    # src bigrams {(the,cat),(cat,sat)}; tgt {(The,cat),(cat,sat),...}: 1 shared of 2
    assert f2.score({"src": ["the cat sat"], "tgt": ["The cat sat on the mat"]}) == [0.5]
    f3 = make(NgramOverlapFilter, n=3)
    assert f3.score({"src": ["two words"], "tgt": ["two words"]}) == [0.0]  # no trigram
    # sacremoses splits punctuation, so "mat." shares the trigram "the mat ."
    assert f3.score({"src": ["on the mat."], "tgt": ["He sat on the mat."]}) == [1.0]


def test_pair_filters_prefer_the_original_column_and_accept_explicit_columns():
    f = make(NgramOverlapFilter, n=1)
    batch = {"src": ["ein Hund"], "tgt": ["a big dog"], "tgt_original": ["a dog"]}
    assert f.score(batch) == [1.0]  # tgt vs tgt_original, not src vs tgt
    g = make(NgramOverlapFilter, n=1, columns=("src", "tgt"))
    assert g.score(batch) == [0.0]
    with pytest.raises(ComponentError, match="column 'nope' does not exist"):
        make(NgramOverlapFilter, columns=("src", "nope")).score(batch)


def test_sentence_bleu_and_chrf_match_sacrebleu_and_honour_smoothing():
    import sacrebleu

    hyp, ref = ["the cat sat on a mat", "the different words"], \
               ["the cat sat on the mat", "the cat sat on the mat"]
    batch = {"src": hyp, "tgt": ref}
    exp = make(SentenceBleuFilter).score(batch)
    assert exp == pytest.approx([sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(hyp, ref)])
    addk = make(SentenceBleuFilter, smooth_method="add-k", smooth_value=1).score(batch)
    assert addk[0] != exp[0] and addk[1] != exp[1]  # BLEU+1 smoothing differs from exp
    assert make(SentenceBleuFilter).score({"src": ["Same words ."], "tgt": ["Same words ."]}) \
        == [pytest.approx(100.0)]
    chrf = make(SentenceChrfFilter).score(batch)
    assert chrf == pytest.approx([sacrebleu.sentence_chrf(h, [r]).score for h, r in zip(hyp, ref)])
    chrfpp = make(SentenceChrfFilter, word_order=2).score(batch)
    assert chrfpp[0] != chrf[0] and chrf[0] > chrf[1]


def test_translation_cost_reads_the_column_and_handles_missing_values():
    batch = {"src": ["a", "b", "c"], "tgt": ["x", "y", "z"], "nll": [0.5, None, "1.25"]}
    s = make(TranslationCostFilter).score(batch)
    assert s[0] == 0.5 and math.isnan(s[1]) and s[2] == 1.25
    assert make(TranslationCostFilter, missing="value", missing_value=9).score(batch) == [0.5, 9, 1.25]
    with pytest.raises(ComponentError, match="column 'cost' does not exist"):
        make(TranslationCostFilter, column="cost").score(batch)
    assert math.isnan(make(TranslationCostFilter, column="cost",
                           missing_column="missing").score(batch)[0])
    with pytest.raises(ComponentError, match="non-number"):
        make(TranslationCostFilter).score({"src": ["a"], "tgt": ["b"], "nll": ["high"]})


def test_paraphrase_score_is_the_cosine_of_averaged_word_vectors(tmp_path):
    vec = tmp_path / "tiny.vec"
    vec.write_text("4 2\ncat 1 0\ndog 0.8 0.6\ncar 0 1\n. 0 0\n", encoding="utf-8")
    f = make(ParaphraseScoreFilter, vectors=str(vec))
    s = f.score({"src": ["Cat.", "cat", "cat dog", "unknown"],
                 "tgt": ["dog", "car", "cat dog", "cat"]})
    # cat=(1,0) vs dog=(.8,.6): .8; cat vs car: 0; identical: 1; no known token: 0
    assert s == pytest.approx([0.8, 0.0, 1.0, 0.0])
    bad = tmp_path / "bad.vec"
    bad.write_text("cat 1 0\ndog 1\n", encoding="utf-8")
    with pytest.raises(ComponentError, match="bad.vec:2: 1 values, expected 2"):
        make(ParaphraseScoreFilter, vectors=str(bad))
    with pytest.raises(ComponentError, match="does not exist"):
        make(ParaphraseScoreFilter, vectors=str(tmp_path / "none.vec"))


needs_lmplz = pytest.mark.skipif(find_tool("lmplz") is None or find_tool("build_binary") is None,
                                 reason="KenLM lmplz/build_binary not built (run make env)")

LM_TEXT = [
    "the dog sleeps in the garden .", "the cat sleeps in the house .",
    "a dog runs in the park .", "the children play in the garden .",
    "a man reads a book in the house .", "the woman walks the dog in the park .",
] * 5


@needs_lmplz
def test_train_lm_and_perplexity_prefer_fluent_text(tmp_path):
    text = tmp_path / "lm.txt"
    text.write_text("\n".join(LM_TEXT) + "\n", encoding="utf-8")
    model = train_lm(text, tmp_path / "lm.binary", order=3, lowercase=True)
    assert (tmp_path / "lm.binary.json").exists()
    f = make(KenlmPerplexityFilter, model=str(model))
    assert f.settings == {"tokenize": True, "lowercase": True, "lang": "en"}
    s = f.score({"src": ["", ""], "tgt": ["The dog sleeps in the garden.",
                                          "garden the in sleeps dog the."]})
    assert 1 < s[0] < s[1]
    with pytest.raises(ComponentError, match="lowercase=False but .* was trained with "
                                             "lowercase=True"):
        make(KenlmPerplexityFilter, model=str(model), lowercase=False)


def test_kenlm_errors_are_one_clear_line(tmp_path, monkeypatch):
    with pytest.raises(ComponentError, match="does not exist; train one with `bitextforge "
                                             "train-lm"):
        make(KenlmPerplexityFilter, model=str(tmp_path / "none.binary"))
    text = tmp_path / "t.txt"
    text.write_text("a b c\n", encoding="utf-8")
    monkeypatch.setenv("BITEXTFORGE_LMPLZ", str(tmp_path / "no-lmplz"))
    with pytest.raises(ComponentError, match="lmplz was not found; run `make env`"):
        train_lm(text, tmp_path / "m.binary")
    ok = dict((what.split(" (")[0], good) for good, what, _ in KenlmPerplexityFilter.doctor())
    assert ok["KenLM lmplz"] is False


RECIPE_STEPS = """\
  - filter: ngram_overlap.v1
    with: {n: 1, columns: [src, tgt]}
    keep: {min: 0.3, max: 0.9}
"""


def test_recipe_applies_lower_and_upper_bounds(pair_files, tmp_path):
    src = ["the dog sleeps", "the dog sleeps in the garden", "a cat", "one two three four"]
    tgt = ["the dog sleeps", "the dog sleeps on the sofa", "the dog", "one five six seven"]
    s, t = pair_files(src, tgt)
    res = run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "out", RECIPE_STEPS), "r.yaml"))
    # overlaps: 1.0 (above max), 4/5 = 0.8 (kept), 0 (below min), 1/4 = 0.25 (below min)
    assert res.rows_out == 1
    kept = read_tsv(tmp_path / "out" / "corpus.tsv")
    assert [r["src"] for r in kept] == [src[1]]
    rej = {r["src"]: float(r["rejected_score"]) for r in read_tsv(tmp_path / "out" /
                                                                   "rejected.tsv")}
    assert rej == {src[0]: 1.0, src[2]: 0.0, src[3]: 0.25}
