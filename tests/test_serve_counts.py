"""``bitextforge serve`` replays a run in the run's order: before any bound is moved, the rows in,
kept and rejected that its API shows for every step are the run's own (``manifest.json``), for
recipes with filters (min/max, ``top``, ``words``, ``apply_to``), a paraphrase step, a split step
and a weight step. A row made by step k is seen only by the steps after k."""

from __future__ import annotations

from pathlib import Path

import pytest

from bitextforge import Generator, Paraphraser

from conftest import ROOT

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from bitextforge.recipe.load import load_recipe, parse_recipe  # noqa: E402
from bitextforge.api import run_recipe  # noqa: E402
from bitextforge.serve.data import load_run  # noqa: E402

DE = ROOT / "recipes" / "data" / "quickstart.de"
EN = ROOT / "recipes" / "data" / "quickstart.en"

CLEAN = ("  - filter: dedupe.v1\n"
         "  - filter: length.v1\n    with: {combine: shorter}\n    keep: {min: 1}\n"
         "    as: shorter\n")
PARAPHRASE = "  - paraphrase: suffix_test.v1\n    side: tgt\n"
RECIPES = {
    "top": CLEAN + "  - filter: length_ratio.v1\n    keep: {top: 0.8, order: lowest}\n"
                   "  - filter: length.v1\n    with: {side: src}\n    keep: {top: 200}\n",
    "words": CLEAN + "  - filter: length_ratio.v1\n"
                     "    keep: {max: 2.5, words: 1500, words_side: both, order: lowest}\n",
    # filters before the paraphrase step (one a corpus-wide selection), filters of its candidates
    # and of every row after it, then weighting
    "paraphrase": CLEAN + "  - filter: length_ratio.v1\n    keep: {top: 0.9, order: lowest}\n"
                  + PARAPHRASE
                  + "  - filter: length.v1\n    with: {unit: chars, side: tgt}\n"
                    "    keep: {max: 40, top: 0.8}\n    apply_to: paraphrases\n    as: cand_len\n"
                    "  - filter: length_ratio.v1\n    keep: {max: 2.2}\n    as: ratio_after\n"
                    "  - weight: distributed.v1\n    with: {n: 3}\n",
    # a selection before the split (of whole rows), after it (of pieces), then paraphrases of
    # the pieces and weighting
    "split": CLEAN + "  - filter: length.v1\n    with: {side: src}\n    keep: {top: 0.9}\n"
                     "    as: whole_len\n"
                     "  - split: nichols_split.v1\n"
                     "  - filter: length_ratio.v1\n    keep: {max: 2.0, words: 1200}\n"
             + PARAPHRASE
             + "  - filter: length.v1\n    with: {unit: chars, side: tgt}\n    keep: {max: 30}\n"
               "    apply_to: paraphrases\n    as: cand_len\n"
               "  - weight: distributed.v1\n    with: {n: 3}\n",
}


def served_counts(run_dir: Path) -> list[dict]:
    """What serve's API returns for the untouched page, per step."""
    from starlette.testclient import TestClient

    from bitextforge.serve.app import create_app

    client = TestClient(create_app(load_run(run_dir)), base_url="http://127.0.0.1:8765")
    res = client.get("/api/decide")
    assert res.status_code == 200, res.text
    return res.json()["steps"]


def assert_counts_are_the_runs(run_dir: Path, manifest: dict) -> None:
    steps = served_counts(run_dir)
    assert len(steps) == len(manifest["steps"])
    for shown, ran in zip(steps, manifest["steps"]):
        where = f"steps[{ran['index']}] ({ran['kind']} {ran['component']})"
        assert (shown["rows_in"], shown["rows_out"]) == (ran["rows_in"], ran["rows_out"]), where
        if ran["kind"] == "filter":
            assert shown["rejected"] == ran["rows_in"] - ran["rows_out"], where
        assert shown["unscored"] == 0 and not shown["changed"], where


def test_quickstart_counts_are_the_runs(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)  # the recipe's paths are relative to the repository root
    recipe = load_recipe(ROOT / "recipes" / "quickstart.yaml", [f"output.dir={tmp_path / 'run'}"])
    res = run_recipe(recipe, progress=False)
    assert_counts_are_the_runs(tmp_path / "run", res.manifest)


def two_sentence_rows(pair_files):
    """The quick-start pairs joined two by two: the splitter splits most rows back in two."""
    de = DE.read_text(encoding="utf-8").splitlines()
    en = EN.read_text(encoding="utf-8").splitlines()
    return pair_files([f"{a} {b}" for a, b in zip(de[::2], de[1::2])] + de[:40],
                      [f"{a} {b}" for a, b in zip(en[::2], en[1::2])] + en[:40])


class Echo(Generator):
    """Test generator: two outputs per sentence (its words reversed, then upper-cased), none for
    sentences with a digit (rejected)."""

    name = "echo_test.v1"

    def generate(self, sentences):
        return [[] if any(c.isdigit() for c in s) else
                [(" ".join(reversed(s.split())), -0.3), (s.upper(), -0.6)] for s in sentences]


def test_generation_recipe_counts_are_the_runs(bitextforge_plugin, tmp_path):
    """Bitext and monolingual text, a filter before the generate step (the monolingual rows reach
    it with an empty side), generation with two outputs and rejected sentences, filters of every
    row after it, a paraphrase step and weighting."""
    bitextforge_plugin(Echo, Suffix, name="echo")
    out = tmp_path / "run"
    text = (f"name: gen\ninput:\n  - {{name: bitext, src: '{DE}', tgt: '{EN}', limit: 150}}\n"
            f"  - {{name: mono, tgt: '{EN}', skip: 150}}\noutput: {{dir: '{out}'}}\n"
            f"progress: false\nbatch_size: 16\nsteps:\n"
            "  - filter: length.v1\n    with: {side: tgt}\n    keep: {min: 3, top: 0.9}\n"
            "  - generate: echo_test.v1\n    side: src\n"
            "  - filter: length_ratio.v1\n    keep: {max: 2.0}\n    origins: [mono]\n"
            + PARAPHRASE + "  - weight: distributed.v1\n    with: {n: 3}\n")
    res = run_recipe(parse_recipe(text, "gen.yaml"), progress=False)
    gen = res.manifest["steps"][1]
    assert gen["rows_out"] > gen["rows_in"] and gen["counts"]["without_output"] > 0
    assert_counts_are_the_runs(out, res.manifest)


class Suffix(Paraphraser):
    """Test paraphraser: two candidates per sentence, never equal to it (a weighter writes
    identical variants once, and a row it drops is stored nowhere)."""

    name = "suffix_test.v1"

    def paraphrase(self, sentences):
        return [[(s + " ?", -0.2), (s + " !", -0.7)] for s in sentences]


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_untouched_page_counts_are_the_runs(name, bitextforge_plugin, pair_files, tmp_path):
    bitextforge_plugin(Suffix, name="suffix")
    s, t = two_sentence_rows(pair_files) if name == "split" else (DE, EN)
    out = tmp_path / "run"
    text = (f"name: {name}\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\n"
            f"progress: false\nbatch_size: 16\nsteps:\n{RECIPES[name]}")
    res = run_recipe(parse_recipe(text, f"{name}.yaml"), progress=False)
    made = [st for st in res.manifest["steps"] if st["kind"] in ("paraphrase", "split")]
    assert all(st["rows_out"] > st["rows_in"] for st in made)  # the steps did make rows
    assert_counts_are_the_runs(out, res.manifest)
