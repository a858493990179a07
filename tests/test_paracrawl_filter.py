"""recipes/paracrawl-filter.yaml end to end on small slices of the shipped data: its prepare
trains en-fr and en-cs classifiers from Multi30k pairs read as two line-aligned files,
the classifiers carry the recipe's surface measures, and the ParaCrawl pairs are all scored and
evaluated beside bicleaner. The full-size figures are in docs/benchmarks.md."""

from __future__ import annotations

import json

import joblib
import pytest
from conftest import ROOT, shared

from bitextforge.recipe import load_recipe
from bitextforge.run import run_recipe


@pytest.mark.shared_data
def test_paracrawl_filter_recipe_trains_from_multi30k_and_scores(tmp_path):
    path = shared("paracrawl-human-eval", "paracrawl-v3-validation-data", "sorted.en-fr")
    m = tmp_path / "m"
    sets = [f"output.dir={tmp_path / 'run'}", f"input.path={path}", "input.limit=200",
            f"steps[1].with.model={m}/enfr.joblib"]
    for i, lang in ((0, "fr"), (1, "cs")):
        sets += [f"prepare[{i}].with.output={m}/en{lang}.joblib", f"prepare[{i}].with.limit=300"]
    recipe = load_recipe(str(ROOT / "recipes" / "paracrawl-filter.yaml"), sets)
    res = run_recipe(recipe)
    assert (res.rows_in, res.rows_out) == (200, 200)
    for lang in ("fr", "cs"):
        facts = json.loads((m / f"en{lang}.joblib.json").read_text())
        assert facts["clean_pairs"] == 300 and "appended" in facts["negatives"]
        assert "src_chars_log" not in facts["surface"] and "names_char_overlap" in facts["surface"]
        assert facts["features"][1]["with"]["tgt_lang"] == lang
        assert facts["held_out_roc_auc"] > 0.8
    assert joblib.load(m / "encs.joblib")["surface"] == facts["surface"]
    nums = res.reports["label_auc.v1"]["numbers"]
    for c in ("paracrawl_classifier", "bicleaner", "langid_heliport"):
        assert 0 <= nums[f"{c}.roc_auc"] <= 1 and nums[f"{c}.missing"] == 0
