"""The table a run and `score` end with, the effective threshold of top/words decisions, counts of
rows added by paraphrasing and weighting, and warnings about degenerate paraphrases."""

import json

import pytest

from bitextforge import Paraphraser
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe
from bitextforge.report.summary import summary_table

from conftest import SMALL_DE, SMALL_EN, run_cli


def cli(*args):
    return run_cli(*args)


def recipe_text(s, t, out, steps):
    return (f"name: t\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\n"
            f"progress: false\nbatch_size: 3\nsteps:\n{steps}")


WORDS = """\
  - filter: dedupe.v1
  - filter: length.v1
    with: {side: tgt}
    keep: {words: 20, order: lowest}
"""


def test_words_decision_reports_its_cut_in_manifest_and_table(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    res = run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "o", WORDS), "r.yaml"))
    step = res.manifest["steps"][1]
    kept = (tmp_path / "o" / "corpus.tgt").read_text().splitlines()
    lengths = sorted(len(x.split()) for x in kept)
    cut = step["effective_threshold"]
    # shortest first until 20 words: the cut is the longest kept line's length
    assert cut == {"decision": "words 20", "order": "lowest", "candidates": 7,
                   "selected": len(kept), "score": float(lengths[-1]), "words": sum(lengths)}
    assert sum(lengths) <= 20
    table = summary_table(res.manifest["steps"])
    lines = table.splitlines()
    assert lines[0].split() == ["step", "rows", "in", "rows", "out", "rejected", "added",
                                "seconds"]
    assert lines[1].split()[:5] == ["steps[0]", "dedupe.v1", "8", "7", "1"]
    assert lines[2].split()[:5] == ["steps[1]", "length.v1", "7", str(len(kept)),
                                    str(7 - len(kept))]
    assert lines[2].endswith(f"words 20: cut at score {lengths[-1]} (lowest kept; {len(kept)} of "
                             f"7 rows, {sum(lengths)} words)")


class Echo(Paraphraser):
    """Paraphrases only sentences that start with a capital letter: reversed text."""

    name = "some_test.v1"

    def paraphrase(self, sentences):
        return [[(s[::-1], -0.1)] if s[:1].isupper() else [] for s in sentences]


class Dots(Paraphraser):
    """An undertrained model: dots, empties and copies."""

    name = "dots_test.v1"

    def paraphrase(self, sentences):
        return [[(".", -1.0), ("", -2.0), (s, -3.0), ("a real one", -4.0)] for s in sentences]


@pytest.fixture
def paraphrasers(bitextforge_plugin):
    return bitextforge_plugin(Echo, Dots, name="summary_paraphrasers")


def test_paraphrase_and_weight_counts(paraphrasers, pair_files, tmp_path):
    s, t = pair_files(["a", "b", "c", "d"], ["One", "two", "Three", "four"])
    steps = ("  - paraphrase: some_test.v1\n    side: tgt\n"
             "  - weight: distributed.v1\n    with: {n: 2}\n")
    res = run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "o", steps), "r.yaml"))
    para, weight = res.manifest["steps"]
    assert para["counts"]["originals"] == 4 and para["counts"]["without_candidates"] == 2
    assert weight["counts"] == {"groups": 4, "groups_without_paraphrase": 2}
    # distributed.v1 with n = 2 makes 3 rows of every group: e0 e1 e0, or e0 e0 e0 without e1
    assert weight["rows_in"] == 6 and weight["rows_out"] == 12
    lines = summary_table(res.manifest["steps"]).splitlines()
    assert lines[1].split()[2:5] == ["4", "6", "+2"]
    assert lines[1].endswith("2 of 4 originals got no paraphrase")
    assert lines[2].split()[2:5] == ["6", "12", "+6"]
    assert lines[2].endswith("2 of 4 originals have no paraphrase left")
    assert res.manifest["warnings"] == []


def test_degenerate_candidates_are_warned_about(paraphrasers, pair_files, tmp_path):
    s, t = pair_files([f"s{i}" for i in range(5)], [f"t{i}" for i in range(5)])
    steps = "  - paraphrase: dots_test.v1\n    side: tgt\n"
    res = run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "o", steps), "r.yaml"))
    assert res.manifest["warnings"] == [
        "steps[0] dots_test.v1: 4 of 20 generated texts (20%) repeat a text already made for "
        "another sentence: the output collapsed towards a few sentences; the component is "
        "probably undertrained or wrong for this input; a dedupe.v1 step removes the repeats",
        "steps[0] dots_test.v1: 75% of 20 paraphrase candidates are degenerate (5 empty, 5 "
        "punctuation only, 5 identical to the text they replace); the component is probably "
        "undertrained or wrong for this input"]
    saved = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert saved["warnings"] == res.manifest["warnings"]


def test_score_marks_the_step_that_would_reject_each_row(pair_files, tmp_path):
    """`score` removes nothing, and its rejected_by column agrees row for row with what `run`
    rejects (rejected.tsv), including the corpus-wide words decision."""
    s, t = pair_files(SMALL_DE, SMALL_EN)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(recipe_text(s, t, tmp_path / "o", WORDS))
    res = cli("score", recipe, "-q", "-o", tmp_path / "scores.tsv")
    assert res.returncode == 0, res.stderr
    rows = [ln.split("\t") for ln in (tmp_path / "scores.tsv").read_text().splitlines()]
    head, body = rows[0], rows[1:]
    assert head[-1] == "rejected_by" and len(body) == len(SMALL_DE)
    marked = {r[0]: r[-1] for r in body if r[-1]}
    assert cli("run", recipe, "-q").returncode == 0
    rej = [ln.split("\t") for ln in (tmp_path / "o" / "rejected.tsv").read_text().splitlines()]
    ri = rej[0].index("rejected_by")
    run_marked = {r[0]: r[ri].split(" (")[0] for r in rej[1:]}
    assert marked == run_marked and len(marked) >= 3
    assert "words 20: cut at score" in res.stdout
    assert "steps[0] dedupe.v1" in res.stdout


def test_only_the_kind_table_branches_on_step_kinds():
    """Issue #35: summary.py, report.py, serve's app and page compared step kinds as strings, so a
    new kind meant editing each of them. They ask the kind table or the executor's attributes
    (decides, makes, changes_text, StepKind.note); kinds.py is the one place that names kinds."""
    import re

    from conftest import ROOT

    compare = re.compile(r"""\bkind\s*(===?|!==?)|\bkind\s+(not\s+)?in\s*[(\[{]""")
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
             for p in sorted((ROOT / "core").rglob("*")) if p.suffix in (".py", ".js")
             and p.name != "kinds.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if compare.search(line)]
    assert found == []


def test_a_selection_that_keeps_every_row_says_nothing_was_cut(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    res = run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "o",
                                              WORDS.replace("words: 20", "words: 100000")),
                                  "r.yaml"))
    line = summary_table(res.manifest["steps"]).splitlines()[2]
    assert line.endswith("words 100000: nothing cut (every row kept; 7 of 7 rows, "
                         f"{sum(len(x.split()) for x in set(SMALL_EN))} words)"), line


def test_a_wrapped_filter_is_named_in_the_table(pair_files, tmp_path):
    """build-filter's recipes wrap each rule in segmented.v1: the table names the wrapped filter
    too, so three segmented steps do not all read "segmented.v1"."""
    s, t = pair_files(SMALL_DE, SMALL_EN)
    steps = """\
  - filter: segmented.v1
    with: {src_lang: de, tgt_lang: en, filter: length.v1, with: {combine: shorter}}
    keep: {min: 1}
    as: shorter_words
  - filter: segmented.v1
    with: {src_lang: de, tgt_lang: en, filter: length_ratio.v1, with: {unit: tokens}}
    keep: {max: 3}
  - filter: length.v1
    keep: {min: 1}
"""
    res = run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "o", steps), "r.yaml"))
    labels = [" ".join(line.split()[:2])
              for line in summary_table(res.manifest["steps"]).splitlines()[1:]]
    assert labels == ["steps[0] segmented.v1(length.v1)", "steps[1] segmented.v1(length_ratio.v1)",
                      "steps[2] length.v1"]
