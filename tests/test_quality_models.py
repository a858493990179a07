"""Quality filters that load models (heliport, lingua, MiniLM, scikit-learn), on small texts
written for these tests, and their training commands."""

import json

import pytest

from bitextforge import ComponentError, InputError
from bitextforge.cli.main import main
from bitextforge.plugins.quality.classifier import ReferenceClassifierFilter
from bitextforge.plugins.quality.embeddings import EmbeddingCosineFilter
from bitextforge.plugins.quality.langid import LanguageIdFilter
from bitextforge.plugins.quality.lm import find_tool

DE = ["Der Hund schläft heute im Garten.", "Ich trinke morgens gern einen Kaffee.",
      "Wo ist bitte der Bahnhof?"]
EN = ["The dog is sleeping in the garden today.", "I like to drink a coffee in the morning.",
      "Where is the train station, please?"]


@pytest.fixture(scope="module")
def heliport_filter():
    f = LanguageIdFilter(LanguageIdFilter.Config(src_lang="de", tgt_lang="en"))
    yield f
    f.close()


def test_language_id_heliport_signs_the_confidence(heliport_filter):
    f = heliport_filter
    good = f.score({"src": DE, "tgt": EN})
    assert all(s > 0 for s in good)
    swapped = f.score({"src": EN, "tgt": DE})
    assert all(s < 0 for s in swapped)
    # the pair scores the worse side: a correct src does not rescue an English tgt
    mixed = f.score({"src": DE, "tgt": DE})
    assert all(s < 0 for s in mixed)
    assert f.side_scores([""], "src") == [-7.0]  # empty text is zxx for heliport


def test_language_id_identifies_each_distinct_text_once(heliport_filter):
    """Repeated texts, in one batch or a later one, are looked up: the scores are those of
    identifying every text, and the manifest counts what was identified and what was not."""
    f = LanguageIdFilter(LanguageIdFilter.Config(src_lang="de", tgt_lang="en"))
    try:
        src, tgt = DE + DE[:2] + [""], EN + EN[:1] + [DE[0], ""]
        direct = [min(a, b) for a, b in zip(f.side_scores(src, "src"), f.side_scores(tgt, "tgt"))]
        assert list(f.score({"src": src, "tgt": tgt})) == direct
        assert f.manifest_info() == {"identified": 4 + 5, "repeats_looked_up": 2 + 1}
        assert list(f.score({"src": src[::-1], "tgt": tgt[::-1]})) == direct[::-1]
        assert f.manifest_info() == {"identified": 9, "repeats_looked_up": 3 + 12}
    finally:
        f.close()


def test_language_id_one_side_and_bad_codes():
    f = LanguageIdFilter(LanguageIdFilter.Config(tgt_lang="en", backend="lingua",
                                                 lingua_candidates=["de", "fr"]))
    s = f.score({"src": EN, "tgt": EN + [""] if False else EN})
    assert all(0.5 < x <= 1.0 for x in s)
    s2 = f.score({"src": EN, "tgt": DE})
    assert all(0.0 <= x < 0.5 for x in s2)
    with pytest.raises(ComponentError, match="set src_lang and/or tgt_lang"):
        LanguageIdFilter(LanguageIdFilter.Config())
    with pytest.raises(ComponentError, match="lingua does not know language 'xx'"):
        LanguageIdFilter(LanguageIdFilter.Config(src_lang="xx", backend="lingua",
                                                 lingua_candidates=["en"]))
    with pytest.raises(ComponentError, match="heliport has no model for language 'qq'"):
        LanguageIdFilter(LanguageIdFilter.Config(src_lang="qq"))


@pytest.fixture(scope="module")
def minilm():
    f = EmbeddingCosineFilter(EmbeddingCosineFilter.Config(precision="fp32"))
    yield f
    f.close()


def test_embedding_cosine_ranks_paraphrases_and_encodes_each_sentence_once(minilm):
    batch = {"src": ["x"] * 3, "tgt": ["The dog sleeps in the garden.",
                                       "The dog sleeps in the garden.", "The cat is black."],
             "tgt_original": ["A dog is sleeping in the yard.", "Stock markets fell sharply.",
                              "The cat is black."]}
    before = minilm.encoder.encoded
    s = minilm.score(batch)
    assert minilm.encoder.encoded - before == 4  # 5 distinct sentences minus the repeated one
    assert s[0] > 0.6 > 0.2 > s[1] and s[2] == pytest.approx(1.0, abs=1e-5)
    assert minilm.manifest_info()["precision"] == "fp32"


def test_embedding_cosine_missing_model_is_one_clear_line(tmp_path):
    with pytest.raises(ComponentError, match="cannot load model .*no model-hub access"):
        EmbeddingCosineFilter(EmbeddingCosineFilter.Config(model="nobody/no-such-model-xyz"))


REFS = ["Honestly, I never thought we'd get this far - but here we are!",
        "She laughed; the joke wasn't funny, yet she couldn't stop.",
        "We've got to leave soon, haven't we?", "Don't worry: it'll be fine, I promise.",
        "Well, that's that, then.", "Isn't it odd how things turn out?"]
MTS = ["It is the case that the government has announced the measure.",
       "The measure is that the government has announced it is the case.",
       "It is important that the measure of the government is announced.",
       "The government has announced that it is the case of the measure.",
       "It is the measure that the government has the case.",
       "The announced measure of the government is the case."]


def test_train_reference_classifier_command_and_filter(tmp_path, capsys):
    r, t = tmp_path / "refs.txt", tmp_path / "mt.txt"
    r.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    t.write_text("\n".join(MTS) + "\n", encoding="utf-8")
    out = tmp_path / "clf.joblib"
    assert main(["train-reference-classifier", "--references", str(r), "--translations", str(t),
                 "--output", str(out), "--heldout", "0"]) == 0
    assert "wrote" in capsys.readouterr().out
    info = json.loads((tmp_path / "clf.joblib.json").read_text())
    assert info["n_references"] == 6 and info["n_translations"] == 6
    f = ReferenceClassifierFilter(ReferenceClassifierFilter.Config(model=str(out)))
    s = f.score({"src": ["", ""], "tgt": ["Oh well, we'll see, won't we?",
                                          "It is the case that the measure is announced."]})
    assert 0 <= s[1] < 0.5 < s[0] <= 1
    with pytest.raises(ComponentError, match="does not exist; train one with"):
        ReferenceClassifierFilter(ReferenceClassifierFilter.Config(model=str(tmp_path / "x")))
    assert main(["train-reference-classifier", "--references", str(tmp_path / "none"),
                 "--translations", str(t), "--output", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.skipif(find_tool("lmplz") is None, reason="KenLM lmplz not built (run make env)")
def test_train_lm_command(tmp_path, capsys):
    text = tmp_path / "t.txt"
    text.write_text("the dog sleeps .\nthe cat sleeps .\na dog runs .\n" * 3, encoding="utf-8")
    assert main(["train-lm", "--text", str(text), "--output", str(tmp_path / "m.binary"),
                 "--order", "2"]) == 0
    assert "order 2" in capsys.readouterr().out
    assert json.loads((tmp_path / "m.binary.json").read_text())["lines"] == 9
    assert main(["train-lm", "--text", str(tmp_path / "none.txt"), "--output",
                 str(tmp_path / "x.binary")]) == 2


@pytest.mark.long
def test_embedding_cosine_bf16_agrees_with_fp32_and_follows_sts_gold(minilm):
    """On 100 STS-B dev pairs (200 sentences): bf16 autocast scores against fp32 (Pearson >=
    0.999), and fp32 cosine against the human similarity ratings. (bf16 is emulated, hence slow,
    on CPUs without AVX512-BF16/AMX such as the project machine.)"""
    from scipy.stats import pearsonr, spearmanr

    from conftest import read_lines, shared

    rows = [ln.rstrip("\r").split("\t")[:7]
            for ln in read_lines(shared("stsbenchmark", "sts-dev.csv"), 100)]
    batch = {"src": [r[5] for r in rows], "tgt": [r[6] for r in rows]}
    fp32 = minilm.score(batch)
    minilm.encoder.bf16 = True
    try:
        bf16 = minilm.score(batch)
    finally:
        minilm.encoder.bf16 = False
    assert pearsonr(fp32, bf16).statistic >= 0.999
    assert spearmanr(fp32, [float(r[4]) for r in rows]).statistic > 0.75


def test_embedding_cosine_ctranslate2_int8_agrees_with_fp32(minilm):
    """The CTranslate2 int8 conversion of MiniLM against the torch fp32 model, 100 STS-B pairs.
    The conversion is made once into the default cache (~/.cache/bitextforge/ct2, or
    $BITEXTFORGE_CACHE) and reused by later runs, as for users."""
    from scipy.stats import pearsonr

    from conftest import read_lines, shared

    rows = [ln.rstrip("\r").split("\t")[:7]
            for ln in read_lines(shared("stsbenchmark", "sts-dev.csv"), 100)]
    batch = {"src": [r[5] for r in rows], "tgt": [r[6] for r in rows]}
    f = EmbeddingCosineFilter(EmbeddingCosineFilter.Config(backend="ctranslate2"))
    assert pearsonr(minilm.score(batch), f.score(batch)).statistic >= 0.99
    distinct = len(set(batch["src"]) | set(batch["tgt"]))  # STS-B repeats some sentences
    assert f.manifest_info() == {"backend": "ctranslate2", "precision": "int8",
                                 "device": "cpu", "encoded": distinct}


def test_language_id_heliport_undetermined_gap_or_neutral(heliport_filter):
    """A pair OpusFilter's HeliportSimpleFilter keeps and the default rejects: heliport calls one
    side 'und' (too close to call). 'neutral' scores such a side 0.0, as OpusFilter accepts it."""
    pair = {"src": ["Ein blond gelocktes Kind weint."], "tgt": ["A child with blond curly hair crying."]}
    labels = [heliport_filter.ident.identify_with_score(pair[s][0])[0] for s in ("src", "tgt")]
    assert "und" in labels
    assert heliport_filter.score(pair)[0] < 0
    neutral = LanguageIdFilter(LanguageIdFilter.Config(src_lang="de", tgt_lang="en",
                                                       heliport_undetermined="neutral"))
    try:
        assert neutral.score(pair) == [0.0]
        assert neutral.score({"src": EN[:2], "tgt": EN[:2]})[0] < 0  # a wrong language still fails
    finally:
        neutral.close()


@pytest.mark.skipif(find_tool("lmplz") is None, reason="KenLM lmplz not built (run make env)")
def test_kenlm_trainer_reads_one_side_of_tsv_corpora(tmp_path):
    """kenlm_model.v1 trains on one field of several TSV files; the model scores that side's
    language better than the other's; a line without the field is one error naming file and line."""
    import gzip

    from bitextforge.plugins.quality.trainers import KenlmTrainer
    from bitextforge.plugins.quality.lm import KenlmPerplexityFilter

    pairs = [("der hund schläft .", "the dog sleeps ."), ("die katze läuft .", "the cat runs ."),
             ("ein hund läuft .", "a dog runs .")] * 4
    a = tmp_path / "a.tsv.gz"
    with gzip.open(a, "wt", encoding="utf-8") as fh:
        fh.writelines(f"{d}\t{e}\n" for d, e in pairs[:6])
    b = tmp_path / "b.tsv"
    b.write_text("".join(f"{d}\t{e}\n" for d, e in pairs[6:]), encoding="utf-8")
    out = tmp_path / "en.binary"
    KenlmTrainer(KenlmTrainer.Config(text=[str(a), str(b)], field=1, output=str(out),
                                     order=2)).train()
    assert json.loads((tmp_path / "en.binary.json").read_text())["lines"] == 12
    f = KenlmPerplexityFilter(KenlmPerplexityFilter.Config(model=str(out), column="tgt"))
    en, de = f.score({"src": ["", ""], "tgt": ["the dog runs .", "der hund läuft ."]})
    assert en < de
    bad = tmp_path / "bad.tsv"
    bad.write_text("eins\tone\nzwei\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.tsv:2: no tab-separated field 1"):
        KenlmTrainer(KenlmTrainer.Config(text=str(bad), field=1, output=str(tmp_path / "x"),
                                         order=2)).train()
