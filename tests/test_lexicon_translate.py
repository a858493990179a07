"""lexicon_translate.v1: word-for-word back-translation from a dictionary (Hu et al. 2019, DALI):
the ranking of a word's translations, what is kept and copied, the generate step in a recipe, its
errors, and the real Ding dictionary when the shared data is there."""

from __future__ import annotations

import pytest

from bitextforge.errors import BitextforgeError
import random

from bitextforge.plugins.lexical.wordforword import (
    LexiconTranslateGenerator, ranked_translations, translate_words, word_translations)
from bitextforge.api import run_recipe
from bitextforge.recipe.load import parse_recipe

from conftest import read_tsv, shared

#: Ding's layout: line number, German synonyms, English synonyms
DICT = """line\tde\ten
1\tGerüstklammer; Rüstklammer\tdog; cramp iron
2\tHund {m}\tdog; hound
3\tHunde {pl}\tdogs
4\tHund ist los\tthe dog is loose
5\tHundehütte\tdog house; kennel
6\tzum\tto the
7\tder; die; das\tthe
8\tlaufen; rennen\tto run
9\tRad; Fahrrad\tbike; bicycle
10\tFahrrad\tbicycle
"""


@pytest.fixture
def ding(tmp_path):
    path = tmp_path / "ding.tsv"
    path.write_text(DICT, encoding="utf-8")
    ranked_translations.cache_clear()
    return path


def test_a_word_takes_its_headword_entry_and_the_commonest_translation(ding):
    t = word_translations(str(ding), (2, 1), "en", "de")
    # "dog" heads lines 1 and 2; their first translations tie on position, and "Hund" is in
    # more entries (lines 2 and 4) than "Gerüstklammer"
    assert t["dog"] == "Hund"
    assert t["hound"] == "Hund" and t["dogs"] == "Hunde"
    # "to the" is cleaned to "the" but lost a word: the real entry of "the" wins
    assert t["the"] == "der"
    assert t["run"] == "laufen"  # an English infinitive's "to" goes
    # "bicycle" is second on line 9 and first on line 10
    assert t["bicycle"] == "Fahrrad" and t["bike"] == "Rad"
    assert "kennel" in t and "house" not in t  # multi-word entries are not used
    # the other direction of the same file
    assert word_translations(str(ding), (1, 2), "de", "en")["hund"] == "dog"


def test_words_are_replaced_and_the_rest_kept_or_copied():
    table = {"the": "der", "dog": "Hund", "runs": "läuft", "a": "ein"}
    assert translate_words("The dog runs, a cat too!", table) == (
        "Der Hund läuft, ein cat too!", 4, 6)
    assert translate_words("  ", table) == ("  ", 0, 0)
    assert translate_words("dog-sled 42", table) == ("dog-sled 42", 0, 2)  # whole tokens only



def test_every_translation_is_ranked_and_the_best_comes_first(ding):
    r = ranked_translations(str(ding), (2, 1), "en", "de")
    # lines 1 and 2 tie on the word's position, so commonness; then the translation's position
    assert r["dog"] == ("Hund", "Gerüstklammer", "Rüstklammer")
    assert r["bicycle"] == ("Fahrrad", "Rad")  # "Fahrrad" in two entries, ranked by its best
    assert r["bike"] == ("Rad", "Fahrrad")
    assert {w: t[0] for w, t in r.items()} == word_translations(str(ding), (2, 1), "en", "de")


def test_a_sequence_of_translations_gives_its_first_or_a_seeded_draw():
    table = {"dog": ("Hund", "Köter"), "the": "der"}
    assert translate_words("the dog", table) == ("der Hund", 2, 2)
    draws = {translate_words("the dog", table, random.Random(k))[0] for k in range(20)}
    assert draws == {"der Hund", "der Köter"}


def test_sample_top_draws_per_sentence_the_same_in_any_order(ding):
    def make(**kw):
        config = LexiconTranslateGenerator.Config(dictionary=str(ding), **kw)
        return LexiconTranslateGenerator(config)

    gen = make(sample_top=2, seed=3)
    sents = [f"the bike {i}" for i in range(40)]
    out = [c[0][0] for c in gen.generate(sents)]
    assert {o.split()[1] for o in out} == {"Rad", "Fahrrad"}  # both of "bike"'s best two
    again = [c[0][0] for c in gen.generate(sents[::-1])][::-1]
    assert again == out  # seeded by the sentence, not by its position
    other = make(sample_top=2, seed=4)
    assert [c[0][0] for c in other.generate(sents)] != out
    assert "sample_top=2 seed=3" in gen.describe()
    best = make()
    assert {c[0][0] for c in best.generate(sents)} == {f"der Rad {i}" for i in range(40)}
    assert best.describe() == "lexicon_translate.v1 dictionary=ding.tsv columns=2,1"

def recipe(tmp_path, ding, extra_with: str = ""):
    (tmp_path / "b.de").write_text("eins\nzwei\n", encoding="utf-8")
    (tmp_path / "b.en").write_text("one\ntwo\n", encoding="utf-8")
    (tmp_path / "m.en").write_text("The dog runs.\nxyz qqq\n...\nthe dogs\n", encoding="utf-8")
    text = (f"name: t\ninput:\n  - {{name: bitext, src: {tmp_path}/b.de, tgt: {tmp_path}/b.en}}\n"
            f"  - {{name: mono, tgt: {tmp_path}/m.en}}\n"
            f"steps:\n  - generate: lexicon_translate.v1\n    side: src\n"
            f"    with: {{dictionary: {ding}{extra_with}}}\n"
            f"output: {{dir: {tmp_path / 'out'}, shard_size: null}}\nprogress: false\n")
    return parse_recipe(text, "t.yaml")


def test_generate_step_fills_the_source_side_and_rejects_what_it_cannot(tmp_path, ding):
    res = run_recipe(recipe(tmp_path, ding, ", min_translated: 0.5"))
    rows = read_tsv(tmp_path / "out" / "corpus.tsv")
    mono = [(r["src"], r["tgt"]) for r in rows if r["origin"] == "mono"]
    # "runs" is not in the dictionary (only "run"): copied, 2 of 3 words translated
    assert mono == [("Der Hund runs.", "The dog runs."), ("der Hunde", "the dogs")]
    assert {r["generated_by"] for r in rows if r["origin"] == "mono"} == {
        "lexicon_translate.v1 dictionary=ding.tsv columns=2,1"}
    rejected = read_tsv(tmp_path / "out" / "rejected.tsv")
    # nothing translated in "xyz qqq" (under min_translated), no word at all in "..."
    assert [(r["tgt"], r["rejected_by"]) for r in rejected] == [
        ("xyz qqq", "steps[0]:lexicon_translate.v1: no output"),
        ("...", "steps[0]:lexicon_translate.v1: no output")]
    info = res.manifest["steps"][0]
    assert info["counts"]["without_output"] == 2


def test_a_missing_dictionary_is_refused_with_its_key(tmp_path):
    r = recipe(tmp_path, tmp_path / "nowhere.tsv")
    with pytest.raises(BitextforgeError, match=r"steps\[0\] \(\w+\)\.with\.dictionary.*nowhere\.tsv"):
        run_recipe(r)
    assert not (tmp_path / "out" / "corpus.tsv").exists()


@pytest.mark.long
def test_the_ding_dictionary_translates_caption_words():
    path = shared("deen-train-pool", "ding-trans-de-en-1.9-6-lexicon",
                  "subentry_pairs.de-en.tsv.gz")
    t = word_translations(str(path), (2, 1), "en", "de")
    assert len(t) > 100_000
    assert [t[w] for w in ("dog", "man", "woman", "girl", "ball", "water", "the")] == [
        "Hund", "Mann", "Frau", "Mädchen", "Ball", "Wasser", "die"]
