"""Any language pair from a seed corpus: word segmentation applied alike everywhere
(segmented.v1), validate-time language checks, copy rules limited to numbers and Latin script,
FreeDict's Japanese headwords, negatives that equal a clean pair dropped, per-kind ROC-AUC, and
``bitextforge build-filter`` end to end on a few hundred real ja-en seed pairs."""

from __future__ import annotations

import gzip
import importlib.util
import json

import numpy as np
import pytest
from pydantic import ValidationError

from conftest import ROOT, run_cli, shared

needs_fugashi = pytest.mark.skipif(importlib.util.find_spec("fugashi") is None,
                                   reason="needs fugashi + unidic-lite (bitextforge[segment])")

# real sentences of small_parallel_enja's test set, written out raw (its files are tokenised)
JA = ["誰が一番に着くか私には分かりません。", "多くの動物が人間によって滅ぼされた。",
      "私はテニス部員です。", "エミは幸せそうに見えます。"]
EN = ["i can 't tell who will arrive first .", "many animals have been destroyed by men .",
      "i 'm in the tennis club .", "emi looks happy ."]


def _cli(*args):
    return run_cli(*args, cwd=ROOT)


# ------------------------------------------------------------------------ validate-time checks
def test_stem_for_a_language_without_a_stemmer_fails_at_validation(tmp_path):
    """normalise: stem (the default) for ja used to pass validate and fail inside the training."""
    from bitextforge.plugins.lexical.components import (LexicalCoverageFilter,
                                                        LexicalTranslationTrainer)

    with pytest.raises(ValidationError, match="no Snowball stemmer for language 'ja'"):
        LexicalTranslationTrainer.Config(corpus=["x.tsv"], langs=("ja", "en"), output="o")
    with pytest.raises(ValidationError, match="use normalise: lowercase"):
        LexicalCoverageFilter.Config(dictionary="d.tsv", src_lang="ja", tgt_lang="en")
    LexicalTranslationTrainer.Config(corpus=["x.tsv"], langs=("ja", "en"), output="o",
                                     normalise="lowercase")
    (tmp_path / "c.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in zip(JA, EN)),
                                    encoding="utf-8")
    (tmp_path / "r.yaml").write_text(f"""name: t
prepare:
  - train: lexical_translation_model.v1
    with: {{corpus: [{tmp_path}/c.tsv], langs: [ja, en], output: {tmp_path}/tables}}
input: {{path: {tmp_path}/c.tsv, format: tsv, columns: [src, tgt]}}
output: {tmp_path}/out
steps:
  - filter: length.v1
    keep: {{min: 1}}
""")
    res = _cli("validate", tmp_path / "r.yaml")
    assert res.returncode == 2, res.stdout
    assert "prepare[0]" in res.stderr and "no Snowball stemmer for language 'ja'" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "tables").exists()


def test_segmenter_checks_name_the_option():
    from bitextforge.plugins.lexical.segment import SegmentedFilter

    with pytest.raises(ValidationError, match="src_segmenter: language 'ja' is written without "
                                              "spaces"):
        SegmentedFilter.Config(src_lang="ja", tgt_lang="en", src_segmenter="words",
                               filter="length.v1")
    with pytest.raises(ValidationError, match="sentencepiece model /nope.model does not exist"):
        SegmentedFilter.Config(src_lang="km", tgt_lang="en",
                               src_segmenter="sentencepiece:/nope.model", filter="length.v1")
    with pytest.raises(ValidationError, match=r"with\.unit"):
        SegmentedFilter.Config(src_lang="de", tgt_lang="en", filter="length.v1",
                               **{"with": {"unit": "pages"}})


# ------------------------------------------------------------------ segmentation, rules, ratio
@needs_fugashi
def test_segmented_rules_count_japanese_words():
    """Raw Japanese is one whitespace token a line: length.v1 cannot fire and length_ratio.v1
    sees ratios of 6-9 in clean pairs; segmented, the counts are words."""
    from bitextforge.plugins.basic_filters import LengthFilter, LengthRatioFilter
    from bitextforge.plugins.lexical.segment import SegmentedFilter

    batch = {"src": JA, "tgt": EN}
    raw_len = LengthFilter(LengthFilter.Config(side="src")).score(batch)
    assert list(raw_len) == [1, 1, 1, 1]
    seg_len = SegmentedFilter(SegmentedFilter.Config(
        src_lang="ja", tgt_lang="en", filter="length.v1", **{"with": {"side": "src"}})).score(batch)
    assert all(n >= 4 for n in seg_len)
    raw_ratio = LengthRatioFilter(LengthRatioFilter.Config()).score(batch)
    seg_ratio = SegmentedFilter(SegmentedFilter.Config(
        src_lang="ja", tgt_lang="en", filter="length_ratio.v1")).score(batch)
    assert max(raw_ratio) >= 4 and max(seg_ratio) <= 2


@needs_fugashi
def test_pre_segmented_and_raw_japanese_come_out_alike():
    from bitextforge.plugins.lexical.segment import Segmenter

    seg = Segmenter("fugashi", "ja")
    assert seg("誰 が 一番 に 着 く か 私 に は 分か り ま せ ん 。") == seg(JA[0])
    assert Segmenter("words", "en", lowercase=True)("Tokyo, 2,020 people.") == \
        "tokyo , 2,020 people ."
    # full-width digits and letters are the ASCII ones: one number on both sides of a pair
    assert seg("２０００年にＫＤＤＩ") == seg("2000年にKDDI") == "2000 年 に KDDI"


def test_a_sentencepiece_segmenter_from_the_seed(tmp_path):
    """For a language no installed segmenter knows, a sentencepiece model trained on the seed
    splits its lines; segmented.v1 takes it by path and refuses a missing one."""
    from bitextforge.plugins.lexical.segment import (SegmentedFilter, Segmenter,
                                                     train_sentencepiece)

    lines = shared("small_parallel_enja", "train.ja").read_text(encoding="utf-8").splitlines()
    model = train_sentencepiece(lines[:400], tmp_path / "seg-ja")
    seg = Segmenter(f"sentencepiece:{model}", "ja")
    assert len(seg(JA[0]).split()) > 5 and "".join(seg(JA[0]).split()) == JA[0]
    f = SegmentedFilter(SegmentedFilter.Config(
        src_lang="ja", tgt_lang="en", src_segmenter=f"sentencepiece:{model}",
        filter="length.v1", **{"with": {"side": "src"}}))
    assert f.score({"src": [JA[0]], "tgt": [EN[0]]})[0] > 5


def test_a_language_heliport_does_not_know_builds_without_language_id():
    from bitextforge.plugins.lexical.pair_builder import language_id_missing, recipe_text

    assert "no model for language 'km'" in language_id_missing("km", "en")
    assert language_id_missing("ja", "en") is None
    th = {"ratio_max": 2.0, "length_max": 150, "quantile": 0.995}
    with_id = recipe_text("r", "m", "km", "en", ["sentencepiece:m/s.model", "words"], False, th,
                          None, False)
    without = recipe_text("r", "m", "km", "en", ["sentencepiece:m/s.model", "words"], False, th,
                          None, False, langid=False)
    assert "language_id.v1" in with_id and "language_id.v1" not in without


def test_seed_thresholds_follow_the_seed():
    """A de-en bound (3) rejects pairs of a pair whose word counts differ more; the seed's own
    quantile keeps 99.5 % of its pairs."""
    from bitextforge.plugins.lexical.pair_builder import ratio, seed_thresholds

    rng = np.random.default_rng(0)
    a = rng.integers(2, 20, 1000)
    b = np.maximum(1, (a * rng.uniform(2.0, 3.6, 1000)).astype(int))
    th = seed_thresholds(list(a), list(b))
    kept = np.mean([ratio(x, y) <= th["ratio_max"] for x, y in zip(a, b)])
    assert kept >= 0.995 and np.mean([ratio(x, y) <= 3 for x, y in zip(a, b)]) < 0.8
    assert th["length_max"] == 150


# ----------------------------------------------------------------------------------- copy rules
def _tables(tmp_path):
    from bitextforge.plugins.lexical.tables import TranslationTables, train_tables

    src = ["犬 が 走る", "猫 が 寝る", "犬 が 寝る"] * 5
    tgt = ["the dog runs", "the cat sleeps", "the dog sleeps"] * 5
    train_tables(src, tgt, tmp_path / "t", ("ja", "en"), "lowercase", iterations=1)
    return TranslationTables(tmp_path / "t").oriented("ja", "en")


def test_untranslated_japanese_copies_are_not_translations(tmp_path):
    """IBM-1 gave every identical unknown word copy_prob, so a Japanese sentence copied as its
    own English scored like a translation; numbers and Latin-script names still do."""
    from bitextforge.plugins.lexical.components import lexical_translation_scores

    fw, bw = _tables(tmp_path)
    copy = "鯨 鮫 鰐"
    s_copy = lexical_translation_scores(fw, bw, [copy], [copy], "src2tgt", 1e-5, 0.5)[0]
    s_name = lexical_translation_scores(fw, bw, ["Tokyo 2020"], ["Tokyo 2020"], "src2tgt",
                                        1e-5, 0.5)[0]
    assert s_copy < np.log(1e-3) < s_name


def test_coverage_counts_no_japanese_copy():
    from bitextforge.plugins.lexical.coverage import Idf, coverage
    from bitextforge.plugins.lexical.dictionary import Lexicon

    a, b = [["鯨", "鮫"], ["obama", "2020"]], [["鯨", "鮫"], ["obama", "2020"]]
    s2t, _ = coverage(a, b, Lexicon(set()), Idf(a), Idf(b))
    assert list(s2t) == [0.0, 1.0]


# -------------------------------------------------------------------------- FreeDict jpn-eng
def _b64(n: int) -> str:
    alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out = alpha[n % 64]
    while n >= 64:
        n //= 64
        out = alpha[n % 64] + out
    return out


def test_freedict_japanese_headwords_lose_readings_and_tags(tmp_path):
    """FreeDict jpn-eng's headline lists tags, written forms and kana readings; its sense lines
    include grammar notes."""
    from bitextforge.plugins.lexical.dictionary import read_dictd

    entries = [("違法", " [ichi1]  [news1]  [nf06]  違法 /(en)tʃˈaɪ/,  [ichi1]  [news1]  [nf06] "
                        "いほう /ihˈo̞ɯᵝ/\n(adjectival nouns or quasi-adjectives (keiyodoshi))\n"
                        " (noun (common) (futsuumeishi))\nillegal, illegality\n"),
               ("いほう", " [ichi1]  違法 /x/,  [ichi1] いほう /y/\nillegal\n"),
               ("きり", "[ichi1]  切り  , 限り  ,  (irregular okurigana usage)  限  ,  [ichi1] "
                        "きり\nonly\n"),
               ("すし", "すし /s/\n(expressions (phrases\nsushi\n")]
    body, index = b"", []
    for head, text in [("00-database-info", "x\n"), *entries]:
        data = text.encode()
        index.append(f"{head}\t{_b64(len(body))}\t{_b64(len(data))}")
        body += data
    with gzip.open(tmp_path / "freedict-jpn-eng.dict.dz", "wb") as fh:
        fh.write(body)
    idx = tmp_path / "freedict-jpn-eng.index"
    idx.write_text("\n".join(index) + "\n", encoding="utf-8")
    assert read_dictd(idx) == [("違法", "illegal"), ("違法", "illegality"), ("切り", "only"),
                               ("限り", "only"), ("限", "only"), ("すし", "sushi")]


# -------------------------------------------------------------------- negatives and per-kind AUC
def test_negatives_equal_to_a_clean_pair_are_dropped():
    """A one-word side truncated keeps its one word: that "negative" is the clean pair."""
    from bitextforge.plugins.lexical.pair_classifier import drop_equal_to_clean, make_negatives

    src = ["犬", "猫 が 寝る", "鳥", "魚 が 泳ぐ"] * 10
    tgt = ["dog", "the cat sleeps", "bird", "the fish swims"] * 10
    ns, nt, nk = make_negatives(src, tgt, ("truncated",), seed=3)
    assert any((a, b) in set(zip(src, tgt)) for a, b in zip(ns, nt))
    ks, kt, kk, origin = drop_equal_to_clean(src, tgt, ns, nt, nk)
    assert not any((a, b) in set(zip(src, tgt)) for a, b in zip(ks, kt))
    assert len(ks) == len(origin) < len(ns) and all(ns[i] == a for i, a in zip(origin, ks))


def test_negatives_that_only_lose_a_space_are_dropped():
    from bitextforge.plugins.lexical.pair_classifier import drop_equal_to_clean

    ks, _, _, origin = drop_equal_to_clean(["a b ."], ["x y ."], ["a b.", "a ."],
                                           ["x y .", "x y ."], ["partial", "partial"])
    assert ks == ["a ."] and origin == [1]


def _train_classifier(tmp_path, corpus, **options):
    from bitextforge.plugins.lexical.pair_classifier import PairClassifierTrainer

    out = tmp_path / "clf.joblib"
    return PairClassifierTrainer(PairClassifierTrainer.Config(
        corpus=[str(p) for p in corpus], output=str(out), **options)).train()


def _pairs(path, n, start=0):
    path.write_text("".join(f"word{i} number {i} here\tmot{i} nombre {i} ici\n"
                            for i in range(start, start + n)), encoding="utf-8")
    return path


def test_classifier_limit_is_shared_out_across_files(tmp_path):
    """limit 40 over a file of 3 pairs and one of 100 read 3 + 20: the small file's unused
    share was lost."""
    facts = _train_classifier(tmp_path, [_pairs(tmp_path / "a.tsv", 3),
                                         _pairs(tmp_path / "b.tsv", 100, 3)], limit=40)
    assert facts["clean_pairs"] == 40
    from bitextforge.plugins.lexical.pair_classifier import file_shares

    assert file_shares([3, 100, 10], 30) == [3, 17, 10]
    assert file_shares([3, 4], 100) == [3, 4] and file_shares([5], None) == [None]


def test_classifier_trains_on_no_negative_equal_to_a_clean_pair(tmp_path):
    src = ["犬", "猫 が 寝る", "鳥", "魚 が 泳ぐ とても 速く"] * 20
    tgt = ["dog", "the cat sleeps", "bird", "the fish swims very fast"] * 20
    (tmp_path / "c.tsv").write_text("".join(f"{a}\t{b}{i}\n" for i, (a, b) in
                                            enumerate(zip(src, tgt))), encoding="utf-8")
    facts = _train_classifier(tmp_path, [tmp_path / "c.tsv"], negatives=["truncated"],
                              held_out=0.25)
    assert facts["negatives_equal_to_clean_left_out"] > 0
    assert facts["train_rows"] < 2 * 60


def test_japanese_full_stop_agrees_with_an_english_one():
    """"。" against "." counted as final punctuation that disagrees, as in a pair whose Japanese
    side lost its end: the feature could not tell a cut Japanese sentence from a whole one."""
    from bitextforge.plugins.lexical.pair_classifier import surface_features

    x = surface_features(["私 は 学生 です 。", "私 は 学生 です"], ["i am a student ."] * 2,
                         ["final_punct_agree"])
    assert list(x[:, 0]) == [1.0, 0.0]


def test_label_auc_per_kind(tmp_path):
    from bitextforge.io.corpus import CorpusView
    from bitextforge.plugins.evaluation.label_auc import LabelAucEvaluator

    rows = [(0, "clean", 0.9), (1, "clean", 0.8), (2, "shuffled", 0.1), (3, "shuffled", 0.2),
            (4, "partial", 0.85), (5, "partial", 0.5)]
    p = tmp_path / "c.tsv"
    p.write_text("id\tsrc\ttgt\tlabel\ts\n" + "".join(f"{i}\ta\tb\t{k}\t{s}\n" for i, k, s in rows))
    view = CorpusView(p, numeric=["id", "s"])
    nums = LabelAucEvaluator(LabelAucEvaluator.Config(positive=["clean"], per_kind=True)
                             ).evaluate(view).numbers
    assert nums["s.roc_auc.shuffled"] == 1.0 and nums["s.roc_auc.partial"] == 0.75
    assert nums["s.roc_auc.mean_of_kinds"] == pytest.approx(0.875)
    plain = LabelAucEvaluator(LabelAucEvaluator.Config(positive=["clean"])).evaluate(view).numbers
    assert not any(k.startswith("s.roc_auc.") for k in plain)


# ------------------------------------------------------------------------------- end to end
@needs_fugashi
def test_build_filter_end_to_end(tmp_path):
    """build-filter on 700 real ja-en seed pairs, without a dictionary: tables, LMs, classifier,
    a bench AUC per kind, and a recipe that validates and runs on raw newstest pairs."""
    base = shared("small_parallel_enja")
    ja = base.joinpath("train.ja").read_text(encoding="utf-8").splitlines()[:700]
    en = base.joinpath("train.en").read_text(encoding="utf-8").splitlines()[:700]
    (tmp_path / "s.ja").write_text("\n".join(ja) + "\n", encoding="utf-8")
    (tmp_path / "s.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    (tmp_path / "c.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in zip(JA, EN)),
                                    encoding="utf-8")
    out = tmp_path / "m"
    args = ["build-filter", "--src-lang", "ja", "--tgt-lang", "en", "--seed-src",
            tmp_path / "s.ja", "--seed-tgt", tmp_path / "s.en", "--sample", 500,
            "--classifier-pairs", 200, "--bench-pairs", 100, "--iterations", 1,
            "--corpus", tmp_path / "c.tsv", "-o", out]
    res = _cli(*args)
    assert res.returncode == 0, res.stderr
    facts = json.loads((out / "build.json").read_text())
    assert facts["segmenters"] == ["fugashi", "words"] and facts["lowercase"] is True
    assert facts["normalise"] == "lowercase" and facts["dictionary"] is None
    kinds = facts["bench"]["roc_auc_by_kind"]
    assert set(kinds) == {"misaligned", "shuffled", "truncated", "wrong_language",
                          "untranslated", "numbers", "partial", "neighbour"}
    assert kinds["untranslated"] > 0.9 and kinds["wrong_language"] > 0.9
    assert "held-out ROC-AUC per noise kind" in res.stderr
    assert facts["pairs"]["bench"] == 100 and facts["pairs"]["classifier_unseen_by_tables"] == 100
    scored = (out / "seed" / "bench-scored.tsv").read_text(encoding="utf-8").splitlines()
    assert scored[0] == "kind\tscore\tsrc\ttgt"
    assert len(scored) == 1 + 100 + facts["bench"]["negatives"]
    run = _cli("run", out / "recipe.yaml", "--set", f"output.dir={tmp_path}/run", "-q")
    assert run.returncode == 0, run.stderr
    kept = (tmp_path / "run" / "corpus.tsv").read_text(encoding="utf-8")
    rejected = (tmp_path / "run" / "rejected.tsv").read_text(encoding="utf-8")
    # the text comes out as it went in (segmented only for scoring)
    assert all(s in kept + rejected for s in JA)
    # the pair's cleaning defaults run first, and the filled recipe (segmented.v1's wrapped
    # options written under their field name) reads back: the report is written
    assert "extends: " in (out / "recipe.yaml").read_text() and "hardrules.v1" in run.stdout
    # the step table names what each segmented.v1 step wraps
    assert "segmented.v1(pair_classifier.v1)" in run.stdout
    assert (tmp_path / "run" / "report.html").is_file()
    # a second build into the same folder is refused, and a failed build leaves no folder
    again = _cli(*args)
    assert again.returncode == 2 and "exists and is not empty" in again.stderr
    bad = _cli(*args[:-1], tmp_path / "m2", "--bench-pairs", 5000)
    assert bad.returncode == 2 and "at least" in bad.stderr
    assert not (tmp_path / "m2").exists()
    bad = _cli(*args[:-1], tmp_path / "m3", "--kinds", "shuffled,machine_translated")
    assert bad.returncode == 2 and "--kinds: unknown kind 'machine_translated'" in bad.stderr
