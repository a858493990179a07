"""score_correlation.v1: agreement of filter scores with human quality scores, checked against
SciPy on small hand-made data and against the MLQE-PE figure of the translating model's own
log-probability (Pearson 0.249 with da_z_mean on dev; docs/benchmarks.md)."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import kendalltau, pearsonr, spearmanr

from bitextforge import InputError
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import shared


def _write(tmp_path, rows, header="src\ttgt\thuman\ta\tb\tsplit"):
    p = tmp_path / "data.tsv"
    p.write_text(header + "\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows),
                 encoding="utf-8")
    return p


def _run(tmp_path, path, with_: str, columns: str = "[src, tgt, human, a, b, split]",
         out: str = "out"):
    recipe = f"""
name: corr
input: {{path: '{path}', format: tsv, header: true, columns: {columns}}}
output: {{dir: '{tmp_path / out}', formats: [tsv]}}
progress: false
evaluate:
  - evaluator: score_correlation.v1
    with: {with_}
"""
    return run_recipe(parse_recipe(recipe, "corr.yaml")).reports["score_correlation.v1"]


def _data(n=200, seed=3):
    """Human scores that depend on a (positively) and on b (negatively), with noise."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        human = 2 * a - b + rng.gauss(0, 1)
        rows.append((f"s{i}", f"t{i}", round(human, 6), round(a, 6), round(b, 6),
                     "train" if i % 2 else "dev"))
    return rows


def test_each_score_matches_scipy_and_lower_is_better_flips_the_sign(tmp_path):
    rows = _data()
    rep = _run(tmp_path, _write(tmp_path, rows),
               "{human: human, scores: [a, b], lower_is_better: [b], bootstrap: 200}")
    nums = rep["numbers"]
    h = [r[2] for r in rows]
    a = [r[3] for r in rows]
    b = [-r[4] for r in rows]
    assert nums["rows"] == len(rows)
    assert nums["a.pearson"] == pytest.approx(pearsonr(a, h)[0], abs=1e-9)
    assert nums["a.spearman"] == pytest.approx(spearmanr(a, h)[0], abs=1e-9)
    assert nums["a.kendall"] == pytest.approx(kendalltau(a, h)[0], abs=1e-9)
    # b lowers the human score: negated, it agrees
    assert nums["b.pearson"] == pytest.approx(pearsonr(b, h)[0], abs=1e-9) and nums["b.pearson"] > 0
    assert nums["a.pearson_low"] < nums["a.pearson"] < nums["a.pearson_high"]
    assert "Pearson" in rep["summary"] and "a " in rep["summary"]


def test_split_evaluates_dev_rows_and_fits_the_combination_on_train(tmp_path):
    rows = _data(400)
    rep = _run(tmp_path, _write(tmp_path, rows),
               "{human: human, split: split, combine: true, bootstrap: 0}")
    nums = rep["numbers"]
    dev = [r for r in rows if r[5] == "dev"]
    assert nums["rows"] == len(dev)
    assert nums["a.pearson"] == pytest.approx(pearsonr([r[3] for r in dev],
                                                       [r[2] for r in dev])[0], abs=1e-9)
    # the regression learns both scores from train: better on dev than either alone, with the
    # signs of the generating model (human = 2a - b + noise)
    best = max(nums["a.pearson"], abs(nums["b.pearson"]))
    assert nums["combined(ridge).pearson"] > best + 0.05
    assert nums["combined(ridge).coef.a"] > 0 > nums["combined(ridge).coef.b"]
    assert math.isnan(nums["a.pearson_low"])           # bootstrap: 0
    assert "ridge regressions fitted on the 200 rows with split = train" in rep["summary"]


def test_combination_without_split_uses_out_of_fold_predictions(tmp_path):
    rows = _data(300)
    rep = _run(tmp_path, _write(tmp_path, rows), "{human: human, combine: true, bootstrap: 0}")
    nums = rep["numbers"]
    assert nums["rows"] == 300
    assert nums["combined(ridge).pearson"] > max(nums["a.pearson"], abs(nums["b.pearson"]))
    assert "5-fold out-of-fold" in rep["summary"]


def test_a_human_score_that_is_not_a_number_is_one_clear_error(tmp_path):
    rows = _data(10)
    rows[4] = (*rows[4][:2], "n/a", *rows[4][3:])
    with pytest.raises(InputError, match=r"human score 'n/a' of the row with id 4 \(input line 5\)"):
        _run(tmp_path, _write(tmp_path, rows), "{human: human}")


def test_unknown_split_or_empty_evaluation_split_is_an_error(tmp_path):
    path = _write(tmp_path, _data(20))
    with pytest.raises(InputError, match="split column 'part' is not in the corpus"):
        _run(tmp_path, path, "{human: human, split: part}")
    # another directory: a run that failed after its merge keeps its shards for a resume of the
    # same recipe, and another recipe is refused there (core/pipeline/driver.py)
    with pytest.raises(InputError, match="0 rows have split = 'test'"):
        _run(tmp_path, path, "{human: human, split: split, evaluate_on: test}", out="out2")


def test_mlqe_translating_models_own_log_probability(tmp_path):
    """The label-free baseline of the WMT20 QE task: the system's log-probability, shipped in the
    file, correlates 0.249 with da_z_mean on the 1,000 dev rows."""
    path = shared("mlqe-pe-ende", "da_scores.en-de.train-dev.tsv.gz")
    rep = _run(tmp_path, path,
               "{human: da_z_mean, scores: [nmt_model_logprob], split: split, combine: true}",
               columns="[split, src, tgt, da_mean, da_z_mean, da_scores, nmt_model_logprob]")
    nums = rep["numbers"]
    assert nums["rows"] == 1000
    assert nums["nmt_model_logprob.pearson"] == pytest.approx(0.249, abs=5e-4)
    assert nums["nmt_model_logprob.pearson_low"] < 0.249 < nums["nmt_model_logprob.pearson_high"]
    # one score: the regression is a positive linear map of it, so r is the same
    assert nums["combined(ridge).pearson"] == pytest.approx(nums["nmt_model_logprob.pearson"],
                                                            abs=1e-9)


def test_named_combinations_over_subsets(tmp_path):
    """combinations: one regression per named subset; a subset of one score is that score again
    (a positive linear map), an unknown column is an error naming the combination."""
    rows = _data(400)
    path = _write(tmp_path, rows)
    nums = _run(tmp_path, path, "{human: human, split: split, bootstrap: 0, "
                                "combinations: {only_a: [a], both: [a, b]}}")["numbers"]
    assert nums["combined(only_a).pearson"] == pytest.approx(nums["a.pearson"], abs=1e-9)
    assert nums["combined(both).pearson"] > nums["combined(only_a).pearson"] + 0.05
    assert "combined(ridge).pearson" not in nums
    with pytest.raises(InputError, match=r"combinations.bad names \['c'\]"):
        _run(tmp_path, path, "{human: human, combinations: {bad: [a, c]}}")
