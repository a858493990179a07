"""Clean steps (issue #34): each built-in cleaner on hand-made text, before and after, with text it
must leave alone; and a recipe's clean steps end to end: changed text in the corpus, every change
in cleaned.tsv, counts in the manifest and the summary, under the local and sharded writers."""

import json

import pytest

from bitextforge import BitextforgeError, Cleaner
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe
from bitextforge.report.summary import summary_table
from bitextforge.plugins.cleaners import (HtmlCleaner, MosesPunctuation, UnicodeCleaner,
                                          UnwrapQuotes)

from conftest import read_tsv

#: typographic quotes every cleaner must leave as they are
QUOTED = ["Er sagte: „Guten Morgen“.", "Il a dit : « bonjour ».", "She said “hi” and ‘bye’."]


def test_unwrap_quotes_undoes_csv_quoting_of_a_whole_side():
    before = ['"He said ""no"" to me."', '"Plain sentence."', '"""Quoted"" title"']
    assert UnwrapQuotes().clean(before, "src") == ['He said "no" to me.', "Plain sentence.",
                                                   '"Quoted" title']


def test_unwrap_quotes_leaves_speech_and_typographic_quotes():
    keep = ['"Yes," he said, "no."', '"a" and "b"', '""', 'No quotes', 'He said "no".', *QUOTED]
    assert UnwrapQuotes().clean(keep, "tgt") == keep


def test_html_strips_tags_then_decodes_entities():
    before = ["Fish &amp; chips", "<b>Bold</b> move<br/>", "caf&eacute; &#233;",
              "&lt;b&gt; is a tag", "<!-- nav --><p>Text</p>"]
    assert HtmlCleaner().clean(before, "src") == ["Fish & chips", "Bold move", "café é",
                                                  "<b> is a tag", "Text"]


def test_html_leaves_comparisons_and_plain_text():
    keep = ["x < y and y > z", "AT&T", "5 < 6", *QUOTED]
    assert HtmlCleaner().clean(keep, "src") == keep


def test_html_options_choose_what_changes():
    only_entities = HtmlCleaner(HtmlCleaner.Config(tags=False))
    assert only_entities.clean(["<i>a &amp; b</i>"], "src") == ["<i>a & b</i>"]
    only_tags = HtmlCleaner(HtmlCleaner.Config(entities=False))
    assert only_tags.clean(["<i>a &amp; b</i>"], "src") == ["a &amp; b"]


def test_unicode_nfc_controls_and_whitespace():
    before = ["Cafe\u0301", "a\x07b", "  two   spaces\tand tab ", "\ufeffBOM", "x\x1b\x07 y",
              "line\u2028break"]
    # a control character between two words is a space (removing it would glue them), a
    # byte-order mark is removed
    assert UnicodeCleaner().clean(before, "src") == ["Café", "a b", "two spaces and tab", "BOM",
                                                    "x y", "line break"]


def test_unicode_keeps_no_break_spaces_and_quotes():
    keep = ["Il a dit\u00a0: «\u00a0bonjour\u00a0».", "Normal text.", *QUOTED]
    assert UnicodeCleaner().clean(keep, "src") == keep


def test_moses_punctuation_per_language_keeps_typographic_quotes():
    mp = MosesPunctuation(MosesPunctuation.Config(src_lang="de", tgt_lang="en"))
    assert mp.clean(["Seite 3–5 ( siehe oben ) .", "„Hallo“ – sagte er."], "src") == [
        "Seite 3-5 (siehe oben).", "„Hallo“ - sagte er."]
    # the language's own rule: English moves a comma inside the closing quote
    assert mp.clean(['He said "yes", then left.'], "tgt") == ['He said "yes," then left.']
    # the quotes survive; Moses' own rule still removes the space before a colon
    assert mp.clean(QUOTED, "src") == [QUOTED[0], "Il a dit: « bonjour ».", QUOTED[2]]
    assert mp.clean(["Nothing to do here."], "tgt") == ["Nothing to do here."]


def test_moses_punctuation_can_flatten_quotes_when_asked():
    mp = MosesPunctuation(MosesPunctuation.Config(src_lang="de", keep_quotes=False))
    assert mp.clean(["„Hallo“"], "src") == ['"Hallo"']


def test_fix_mojibake_repairs_and_leaves_alone():
    pytest.importorskip("ftfy")
    from bitextforge.plugins.cleaners import FixMojibake

    fm = FixMojibake()
    assert fm.clean(["Ã la suite de lâ€™examen", "naÃ¯ve cafÃ©"], "tgt") == [
        "à la suite de l’examen", "naïve café"]
    keep = ["à la suite de l’examen", "Fish &amp; chips", "plain ascii", *QUOTED]
    assert fm.clean(keep, "tgt") == keep


def recipe(tmp_path, src, tgt, steps, extra=""):
    s, t = tmp_path / "in.src", tmp_path / "in.tgt"
    s.write_text("\n".join(src) + "\n", encoding="utf-8")
    t.write_text("\n".join(tgt) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    text = (f"name: t\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'{extra}}}\n"
            f"progress: false\nbatch_size: 2\nsteps:\n{steps}")
    return parse_recipe(text, "r.yaml"), out


SRC = ['"Das ist ""gut""."', "Fisch &amp; Pommes", "Schon sauber.", "„Zitat“ bleibt."]
TGT = ["That is good.", '"Fish ""and"" chips"', "Already clean.", "Quote  stays."]
STEPS = """\
  - clean: unwrap_quotes.v1
  - clean: html.v1
    side: src
  - clean: unicode.v1
"""


@pytest.mark.parametrize("shard", [None, 3])
def test_clean_steps_change_text_and_record_each_change(tmp_path, shard):
    extra = f", shard_size: {shard}" if shard else ", shard_size: null"
    rec, out = recipe(tmp_path, SRC, TGT, STEPS, extra)
    res = run_recipe(rec)
    assert (res.rows_in, res.rows_out, res.rejected) == (4, 4, 0)
    assert (out / "corpus.src").read_text(encoding="utf-8").splitlines() == [
        'Das ist "gut".', "Fisch & Pommes", "Schon sauber.", "„Zitat“ bleibt."]
    assert (out / "corpus.tgt").read_text(encoding="utf-8").splitlines() == [
        "That is good.", 'Fish "and" chips', "Already clean.", "Quote stays."]
    changes = [(r["step"], r["id"], r["column"], r["before"], r["after"])
               for r in read_tsv(out / "cleaned.tsv")]
    assert changes == [
        ("steps[0]:unwrap_quotes.v1", "0", "src", '"Das ist ""gut""."', 'Das ist "gut".'),
        ("steps[0]:unwrap_quotes.v1", "1", "tgt", '"Fish ""and"" chips"', 'Fish "and" chips'),
        ("steps[1]:html.v1", "1", "src", "Fisch &amp; Pommes", "Fisch & Pommes"),
        ("steps[2]:unicode.v1", "3", "tgt", "Quote  stays.", "Quote stays."),
    ]
    m = json.loads((out / "manifest.json").read_text())
    counts = [(st["kind"], st["counts"]) for st in m["steps"]]
    assert counts == [
        ("clean", {"changed_src": 1, "changed_tgt": 1, "changed": 2}),
        ("clean", {"changed_src": 1, "changed": 1}),
        ("clean", {"changed_src": 0, "changed_tgt": 1, "changed": 1}),
    ]
    table = summary_table(m["steps"])
    assert "2 rows changed (src 1, tgt 1)" in table and "1 rows changed (src 1)" in table


def test_report_html_says_the_rows_each_clean_step_changed(tmp_path):
    rec, out = recipe(tmp_path, SRC, TGT, STEPS)
    run_recipe(rec)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "4 rows in, 4 rows out; 2 rows changed (src 1, tgt 1), " in page
    assert "4 rows in, 4 rows out; 1 rows changed (src 1), " in page


def test_no_clean_step_no_cleaned_tsv(tmp_path):
    rec, out = recipe(tmp_path, SRC, TGT, "  - filter: dedupe.v1\n")
    run_recipe(rec)
    assert not (out / "cleaned.tsv").exists()


class Shout(Cleaner):
    """Upper-cases text (a test cleaner)."""

    name = "shout.v1"

    def clean(self, texts, side):
        """Upper case."""
        return [t.upper() for t in texts]


class Broken(Cleaner):
    """Returns one text too few."""

    name = "broken_cleaner.v1"

    def clean(self, texts, side):
        """Drops the last text."""
        return texts[:-1]


def test_a_plugin_cleaner_runs_on_one_side(tmp_path, bitextforge_plugin):
    bitextforge_plugin(Shout, Broken)
    rec, out = recipe(tmp_path, SRC, TGT, "  - clean: shout.v1\n    side: tgt\n")
    run_recipe(rec)
    assert (out / "corpus.tgt").read_text(encoding="utf-8").splitlines()[2] == "ALREADY CLEAN."
    assert (out / "corpus.src").read_text(encoding="utf-8").splitlines()[2] == "Schon sauber."
    assert {r["column"] for r in read_tsv(out / "cleaned.tsv")} == {"tgt"}


def test_a_cleaner_returning_too_few_texts_is_one_error_and_no_output(tmp_path,
                                                                      bitextforge_plugin):
    bitextforge_plugin(Shout, Broken)
    rec, out = recipe(tmp_path, SRC, TGT, "  - clean: broken_cleaner.v1\n")
    with pytest.raises(BitextforgeError, match=r"broken_cleaner.v1: clean\(\) returned 1 texts "
                                               r"for 2"):
        run_recipe(rec)
    assert not (out / "corpus.src").exists() and not (out / "cleaned.tsv").exists()


def test_clean_step_key_errors_name_the_path(tmp_path):
    with pytest.raises(BitextforgeError, match=r"steps\[0\]"):
        recipe(tmp_path, SRC, TGT, "  - clean: unicode.v1\n    side: left\n")
    with pytest.raises(BitextforgeError, match=r"steps\[0\].*unknown cleaner 'unicod.v1'"):
        recipe(tmp_path, SRC, TGT, "  - clean: unicod.v1\n")

