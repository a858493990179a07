"""Rule filters with bicleaner-hardrules and OpusFilter semantics (issue #34): each rule fires on a
hand-made pair and not on a clean one, by its own default bound; and hardrules.v1 names the rule
that fired in rejected.tsv, the manifest and the summary."""

import json

import pytest

from bitextforge import BitextforgeError
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe
from bitextforge.report.summary import summary_table
from bitextforge.plugins import hardrules as hr

from conftest import read_tsv

CLEAN = ("Der Zug fährt um neun Uhr ab.", "The train leaves at nine o'clock.")

#: rule -> (options, a pair the rule rejects)
FIRES = {
    "urls": ({}, ("Mehr auf www.example.com heute.", "More at www.example.com today.")),
    "only_symbols": ({}, ("*** --- ### !!! ...", "The train leaves at nine.")),
    "only_numbers": ({}, ("12345 678 90", "The train leaves at nine.")),
    "repeated_words": ({"src_lang": "de"}, ("Zugfahrt Zugfahrt ist schön.",
                                            "The train ride is nice.")),
    "glued_words": ({}, ("HomeAboutContactImpressum", "Home about contact imprint.")),
    "unicode_noise": ({}, ("Der Zug Ã¤Ã¶Ã¼ fährt.", "The train leaves now.")),
    "space_noise": ({}, ("D e r Z u g fährt.", "The train leaves now.")),
    "bad_encoding": ({"src_lang": "de"}, ("Der Zug fÃ¤hrt ab.", "The train leaves now.")),
    "titles": ({}, ("Allgemeine Geschäftsbedingungen Und Datenschutz",
                    "General Terms And Privacy Policy")),
    "literals": ({}, ("Re: Der Zug fährt ab.", "Re: The train leaves now.")),
    "parentheses": ({}, ("Der Zug [fährt ab.", "The train [leaves now.")),
    "escaped_unicode": ({}, ("Der Zug f\\u00e4hrt ab.", "The train leaves now.")),
    "identical": ({}, ("Alle Preise inklusive Mehrwertsteuer.",
                       "Alle Preise inklusive Mehrwertsteuer!")),
    "breadcrumbs": ({}, ("Home > Reisen > Züge > Fahrplan | Kontakt | Impressum",
                         "Home > Travel > Trains")),
    "too_long": ({}, ("Wort " * 210, "word " * 210)),
    "too_short": ({}, ("Zug.", "The train leaves now.")),
    "alphabet_ratio": ({}, ("Zug 12:35, 14:50, 16:05 ab Gleis 7.", "The train leaves now.")),
    "character_script": ({"src_script": "Latin", "tgt_script": "Latin"},
                         ("Der Zug fährt ab.", "Поезд отправляется сейчас.")),
    "terminal_punctuation": ({}, ("Ab. Jetzt. Sofort! Wirklich? Ja.", "The train leaves now")),
    "nonzero_numerals": ({}, ("Der Zug fährt um 14:35 Uhr.", "The train leaves at 9:10.")),
    "longest_word": ({}, ("Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbau.",
                          "The Danube steamship electricity works.")),
    "average_word_length": ({}, ("a b c d e f", "The train leaves now.")),
    "html_tags": ({}, ("Der <b>Zug</b> fährt ab.", "The train leaves now.")),
    "repetition": ({}, ("Der Zug fährt ab ab ab ab.", "The train leaves now.")),
    "regexp": ({"src": r"\d", "tgt": r"\d"}, ("Gleis 7.", "Platform 7.")),
}


def rule(name, options):
    cls = hr.RULES[name]
    return cls(cls.Config(**options))


def batch(*pairs):
    return {"src": [p[0] for p in pairs], "tgt": [p[1] for p in pairs]}


def test_every_rule_of_the_issue_is_here():
    assert set(FIRES) == set(hr.RULES)


@pytest.mark.parametrize("name", sorted(FIRES))
def test_rule_fires_on_noise_and_not_on_clean_text(name):
    options, noisy = FIRES[name]
    r = rule(name, options)
    b = batch(noisy, CLEAN)
    assert list(r.fires(b)) == [True, False], (name, list(r.score(b)))


def test_side_rules_score_one_side_or_the_worse_of_both():
    r = hr.UrlsFilter(hr.UrlsFilter.Config(side="tgt"))
    b = batch(("see www.a.com and www.b.org", "plain"), ("plain", "see www.c.net"))
    assert list(r.score(b)) == [0, 1]
    assert list(hr.UrlsFilter().score(b)) == [2, 1]
    assert list(hr.TooShortFilter().score(batch(("one two three four", "one two")))) == [2]


def test_language_exceptions():
    pt = hr.BadEncodingFilter(hr.BadEncodingFilter.Config(src_lang="pt", tgt_lang="de"))
    assert list(pt.score(batch(("São Paulo e Ãgua", "Wasser"), ("x", "FÃ¼r")))) == [0, 1]
    ja = hr.TooShortFilter(hr.TooShortFilter.Config(src_lang="ja"))
    assert list(ja.score(batch(("電車が出ます", "The train leaves now.")))) == [4]
    iceland = hr.UnicodeNoiseFilter(hr.UnicodeNoiseFilter.Config(src_lang="is"))
    assert list(iceland.score(batch(("Hvað þýðir þetta", "What does it mean")))) == [0]
    assert list(hr.UnicodeNoiseFilter().score(batch(("Hvað þýðir þetta", "x")))) == [1]


def test_parentheses_lists_with_closing_brackets_pass():
    r = hr.ParenthesesFilter()
    assert list(r.score(batch(("a) Zug b) Bus", "a) train b) bus"),
                              ("a) Zug b) Bus", "train (bus")))) == [0, 1]


def test_opusfilter_scores():
    tp = hr.TerminalPunctuationFilter()
    # one mark on each side: no penalty; three against none: -log(1 + 3 + 2)
    assert list(tp.score(batch(("Ab.", "Off."), ("A. B. C.", "x")))) == pytest.approx(
        [0.0, -1.791759469])
    nz = hr.NonZeroNumeralsFilter()
    assert list(nz.score(batch(("Um 10:30.", "At 1:30."), ("Keine.", "None.")))) == [1.0, 1.0]
    rep = hr.RepetitionFilter()
    assert list(rep.score(batch(("abc abc abc", "x"), ("abc abc", "x")))) == [2, 0]


def test_config_errors_are_refused_at_validation():
    with pytest.raises(ValueError, match="unknown Unicode script 'Klingon'"):
        hr.CharacterScriptFilter.Config(src_script="Klingon")
    with pytest.raises(ValueError, match="invalid pattern"):
        hr.RegexpFilter.Config(src="(")
    with pytest.raises(ValueError, match="unknown rule.*'url'"):
        hr.HardrulesFilter.Config(rules=["url"])


def test_composite_scores_the_first_rule_that_fires():
    h = hr.HardrulesFilter(hr.HardrulesFilter.Config(rules=["urls", "titles", "too_short"]))
    b = batch(CLEAN, FIRES["titles"][1], ("Zug.", "see www.example.com"), FIRES["too_short"][1])
    assert list(h.score(b)) == [0, 2, 1, 3]
    assert [h.reason(s) for s in (1, 2, 3)] == ["urls", "titles", "too_short"]


def test_composite_refuses_rules_that_need_their_own_options():
    with pytest.raises(BitextforgeError, match="rule regexp needs options of its own"):
        hr.HardrulesFilter(hr.HardrulesFilter.Config(rules=["regexp"]))


def test_composite_reason_in_rejected_tsv_manifest_and_summary(tmp_path):
    pairs = [CLEAN, FIRES["glued_words"][1], FIRES["urls"][1], FIRES["titles"][1],
             ("Noch ein Satz hier.", "Another sentence here.")]
    s, t = tmp_path / "in.src", tmp_path / "in.tgt"
    s.write_text("\n".join(p[0] for p in pairs) + "\n", encoding="utf-8")
    t.write_text("\n".join(p[1] for p in pairs) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    text = (f"name: t\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\n"
            f"progress: false\nbatch_size: 2\nsteps:\n"
            f"  - filter: hardrules.v1\n    with: {{rules: [urls, glued_words, titles]}}\n")
    res = run_recipe(parse_recipe(text, "r.yaml"))
    assert (res.rows_out, res.rejected) == (2, 3)
    rej = [(r["id"], r["rejected_by"], r["rejected_score"]) for r in read_tsv(out / "rejected.tsv")]
    assert rej == [("1", "steps[0]:hardrules.v1 (glued_words)", "2"),
                   ("2", "steps[0]:hardrules.v1 (urls)", "1"),
                   ("3", "steps[0]:hardrules.v1 (titles)", "3")]
    m = json.loads((out / "manifest.json").read_text())
    assert m["steps"][0]["counts"] == {"rejected_by:glued_words": 1, "rejected_by:urls": 1,
                                       "rejected_by:titles": 1}
    assert "rejected by glued_words 1, titles 1, urls 1" in summary_table(m["steps"])


def test_language_sets_and_glued_words_as_bicleaner_hardrules_2_10_8():
    """Differences the side-by-side run with bicleaner-hardrules 2.10.8 found
    (benchmarks/bench_hardrules.py): its glued-words pattern wants two capitalised words written
    together, not three (it rejects news text naming YouTube or PayPal); Romanian and Ligurian
    write "Â"; ISO 639-3 codes of Chinese, Japanese and Korean count characters."""
    glued = hr.GluedWordsFilter()
    assert list(glued.fires(batch(("Elon Musk, Mitbegründer von PayPal.", "of PayPal"),
                                  ("YouTube-Kanäle", "YouTube channels"), CLEAN,
                                  ("Der McDonald Zug.", "The train")))) == [True, True, False,
                                                                             True]
    ro = hr.BadEncodingFilter(hr.BadEncodingFilter.Config(src_lang="ro", tgt_lang="en"))
    assert list(ro.fires(batch(("În România, Âncuţa pleacă.", "In Romania, Ancuta leaves."),
                               ("În România, Âncuţa pleacă.", "Â in English")))) == [False, True]
    short = hr.TooShortFilter(hr.TooShortFilter.Config(src_lang="en", tgt_lang="jpn"))
    assert list(short.fires(batch(("The train leaves now.", "列車が出発します。"),
                                  ("The train leaves now.", "列車")))) == [False, True]


def test_glued_words_three_words_keeps_names_and_still_rejects_glued_menus():
    """``words: 3`` (the defaults in recipes/defaults/) keeps news and captions that name
    YouTube, McCord or KitchenAid, which 2.10.8's two-word pattern (still the default) rejects;
    a glued navigation menu fires under both."""
    names = (("Raymond McCord sagte, er werde das Urteil prüfen.", "Raymond McCord said so."),
             ("Ein Video auf YouTube.", "A video on YouTube."),
             ("Eine Schüssel von KitchenAid.", "A KitchenAid mixing bowl."))
    menu = ("HomeAboutContactImpressum", "Home about contact imprint.")
    three = hr.GluedWordsFilter(hr.GluedWordsFilter.Config(words=3))
    assert list(three.fires(batch(*names, menu, CLEAN))) == [False, False, False, True, False]
    assert list(hr.GluedWordsFilter().fires(batch(*names, menu))) == [True, True, True, True]
    with pytest.raises(ValueError):
        hr.GluedWordsFilter.Config(words=1)
