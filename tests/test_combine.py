"""column.v1, combine.v1 and combine_model.v1: ranking by a column another tool wrote, by a
weighted sum, and by a logistic regression trained on human labels (ParaCrawl) or on synthetic
misaligned pairs (Multi30k), checked against scikit-learn and label_auc.v1."""

from __future__ import annotations

import json

import pytest

from bitextforge import BitextforgeError, ComponentError, RecipeError
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import ROOT, shared

V3 = ["url1", "url2", "src", "tgt", "hunalign", "zipporah", "bicleaner", "label", "comments"]


def tsv_input(tmp_path, rows, columns):
    path = tmp_path / "in.tsv"
    path.write_text("".join("\t".join(map(str, r)) + "\n" for r in rows), encoding="utf-8")
    return f"{{path: '{path}', format: tsv, columns: {columns}}}"


def test_column_ranks_by_an_input_column(tmp_path):
    rows = [("a b", "x y", 0.9), ("c d e", "z w v", 0.2), ("f", "u", 0.7), ("g h", "t s", ""),
            ("i j k l", "r q p o", 0.8)]
    recipe = f"""name: c
input: {tsv_input(tmp_path, rows, ["src", "tgt", "bicleaner"])}
output: {{dir: '{tmp_path / "out"}'}}
progress: false
steps:
  - filter: column.v1
    with: {{column: bicleaner}}
    keep: {{words: 7}}
"""
    res = run_recipe(parse_recipe(recipe, "r.yaml"))
    # best first: 0.9 (2 words), 0.8 (4), 0.7 (1) = 7 words; the empty score is never picked
    assert (tmp_path / "out" / "corpus.src").read_text().splitlines() == ["a b", "f", "i j k l"]
    cut = res.manifest["steps"][0]["effective_threshold"]
    assert cut["score"] == 0.7 and cut["words"] == 7 and cut["candidates"] == 4


def test_column_refuses_text_naming_the_row(tmp_path):
    rows = [("a", "x", "0.5"), ("b", "y", "high")]
    recipe = f"""name: c
input: {tsv_input(tmp_path, rows, ["src", "tgt", "score"])}
output: {{dir: '{tmp_path / "out"}'}}
progress: false
steps:
  - filter: column.v1
    with: {{column: score}}
    keep: {{min: 0.1}}
"""
    with pytest.raises(ComponentError, match=r"column.v1: column 'score' of the row with id 1 "
                                             r"holds a non-number 'high'"):
        run_recipe(parse_recipe(recipe, "r.yaml"))
    res = run_recipe(parse_recipe(recipe.replace("{column: score}",
                                                 "{column: score, non_numeric: nan}"), "r.yaml"))
    assert res.rows_out == 1
    with pytest.raises(ComponentError, match="column 'nope' does not exist"):
        run_recipe(parse_recipe(recipe.replace("{column: score}", "{column: nope}"), "r.yaml"))


def test_weighted_sum(tmp_path):
    rows = [("a b c", "x y z", 0.5, 2), ("a", "x y z w", 0.9, 1), ("a b", "x y", "", 3)]
    recipe = f"""name: c
input: {tsv_input(tmp_path, rows, ["src", "tgt", "p", "q"])}
output: {{dir: '{tmp_path / "out"}'}}
progress: false
steps:
  - filter: length_ratio.v1
    keep: {{max: 10}}
  - filter: combine.v1
    with: {{columns: [p, q, length_ratio], weights: [2, 0.5, -1], bias: 0.25}}
    keep: {{min: -100}}
"""
    run_recipe(parse_recipe(recipe, "r.yaml"))
    out = [ln.split("\t") for ln in (tmp_path / "out" / "corpus.tsv").read_text().splitlines()]
    head = out[0]
    got = [float(r[head.index("combine")]) for r in out[1:]]
    assert got == pytest.approx([0.25 + 2 * 0.5 + 0.5 * 2 - 1.0, 0.25 + 2 * 0.9 + 0.5 * 1 - 4.0])
    rej = (tmp_path / "out" / "rejected.tsv").read_text().splitlines()
    assert len(rej) == 2 and rej[1].split("\t")[-1] == "nan"  # a missing input: NaN, rejected


@pytest.mark.parametrize("with_,needle", [
    ("{columns: [a], weights: [1], model: m.json}", "give weights"),
    ("{columns: [a]}", "give weights"),
    ("{columns: [a, b], weights: [1]}", "1 weights for 2 columns"),
])
def test_combine_config_errors(with_, needle):
    text = (f"name: c\ninput: {{src: a, tgt: b}}\noutput: o\nsteps:\n  - filter: combine.v1\n"
            f"    with: {with_}\n    keep: {{min: 0}}\n")
    with pytest.raises(RecipeError, match=needle):
        parse_recipe(text, "r.yaml")


def _labelled_tsv(tmp_path, pair: str):
    """A ParaCrawl v3 human-evaluation file with a header line, as combine_model.v1 reads."""
    src = shared("paracrawl-human-eval", "paracrawl-v3-validation-data", f"sorted.{pair}")
    out = tmp_path / f"{pair}.tsv"
    out.write_text("\t".join(V3) + "\n" + src.read_text(encoding="utf-8"), encoding="utf-8")
    return src, out


def test_trained_on_human_labels_matches_sklearn_and_label_auc(tmp_path):
    """Fit on en-fr v3's shipped scores: the JSON model predicts what the scikit-learn pipeline
    predicts, its cross-validated AUC is label_auc.v1's combined(logreg) figure (same folds),
    and applied to en-cs it ranks as well as bicleaner alone with a better top."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from bitextforge.plugins.combine import LogisticModel, read_scored_tsv

    _, fr = _labelled_tsv(tmp_path, "en-fr")
    cols = ["hunalign", "zipporah", "bicleaner"]
    model_path = tmp_path / "m" / "combine.json"
    train = f"""name: t
prepare:
  - train: combine_model.v1
    with: {{data: '{fr}', columns: {cols}, output: '{model_path}', seed: 1234}}
"""
    res = run_recipe(parse_recipe(train, "t.yaml"))
    info = res.manifest["prepare"][0]["info"]
    assert info["rows"] == 2000 and info["positives"] == 1060 and info["dropped_rows"] == 0
    X, y, _ = read_scored_tsv(str(fr), cols, "label", ["V"])
    ref = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, y)
    ours = LogisticModel.load(str(model_path)).predict(X)
    assert np.allclose(ours, ref.predict_proba(X)[:, 1], atol=1e-9)
    fr_src, _ = _labelled_tsv(tmp_path, "en-fr")
    auc = f"""name: auc
input: {{path: '{fr_src}', format: tsv, columns: {V3}}}
output: {{dir: '{tmp_path / "fr"}', formats: [tsv]}}
progress: false
evaluate:
  - evaluator: label_auc.v1
    with: {{scores: {cols}, combine: true}}
"""
    nums = run_recipe(parse_recipe(auc, "auc.yaml")).reports["label_auc.v1"]["numbers"]
    assert info["cv_roc_auc"] == pytest.approx(nums["combined(logreg).roc_auc"], abs=1e-4)

    cs_src, _ = _labelled_tsv(tmp_path, "en-cs")
    apply = f"""name: a
input: {{path: '{cs_src}', format: tsv, columns: {V3}}}
output: {{dir: '{tmp_path / "cs"}', formats: [tsv]}}
progress: false
steps:
  - filter: combine.v1
    with: {{model: '{model_path}'}}
    keep: {{min: 0}}
evaluate:
  - evaluator: label_auc.v1
    with: {{scores: [hunalign, zipporah, bicleaner, combine]}}
"""
    nums = run_recipe(parse_recipe(apply, "a.yaml")).reports["label_auc.v1"]["numbers"]
    assert nums["combine.roc_auc"] > max(nums["hunalign.roc_auc"], nums["zipporah.roc_auc"])
    assert nums["combine.roc_auc"] == pytest.approx(nums["bicleaner.roc_auc"], abs=0.02)
    assert nums["combine.precision@0.1"] > nums["bicleaner.precision@0.1"]


def test_trained_on_synthetic_misaligned_pairs(tmp_path):
    """Clean Multi30k en-fr pairs against the same sources with shifted targets, scored by the
    recipe's own filter steps (the combine step itself and other steps are not run)."""
    en = shared("multi30k", "train.en.gz")
    fr = shared("multi30k", "train.fr.gz")
    recipe = tmp_path / "r.yaml"
    model = tmp_path / "combine.json"
    recipe.write_text(f"""name: synthetic
prepare:
  - train: combine_model.v1
    with: {{clean_src: '{en}', clean_tgt: '{fr}', limit: 400, recipe: '{recipe}',
           columns: [ratio, chrf], output: '{model}'}}
input: {{src: '{en}', tgt: '{fr}', limit: 50}}
output: {{dir: '{tmp_path / "out"}'}}
progress: false
steps:
  - filter: dedupe.v1
  - filter: length_ratio.v1
    with: {{unit: chars}}
    keep: {{max: 3}}
    as: ratio
  - filter: sentence_chrf.v1
    with: {{columns: [tgt, src]}}
    keep: {{min: 0}}
    as: chrf
  - filter: combine.v1
    with: {{model: '{model}'}}
    keep: {{min: 0.5}}
""")
    from bitextforge.recipe.load import load_recipe

    res = run_recipe(load_recipe(recipe))
    info = res.manifest["prepare"][0]["info"]
    assert info["rows"] == 800 and info["positives"] == 400
    # misaligned pairs differ in length and in shared names and numbers: well separated
    assert info["cv_roc_auc"] > 0.75
    data = json.loads(model.read_text())
    assert data["columns"] == ["ratio", "chrf"] and data["trained_on"]["recipe"] == str(recipe)
    assert data["coef"][0] < 0  # a larger length ratio means misaligned
    # the clean pairs of the run itself are nearly all kept
    assert res.rows_out >= 40


def test_trainer_needs_one_kind_of_data(tmp_path):
    text = (f"name: t\nprepare:\n  - train: combine_model.v1\n    with: {{columns: [a], "
            f"output: '{tmp_path}/m.json'}}\n")
    with pytest.raises(RecipeError, match="give data"):
        parse_recipe(text, "t.yaml")
    text = text.replace("columns: [a]", f"columns: [a], data: '{tmp_path}/none.tsv'")
    with pytest.raises(BitextforgeError, match=r"prepare\[0\].with.data: .*none.tsv: no such"):
        run_recipe(parse_recipe(text, "t.yaml"))


def test_documented_recipe_parses():
    from bitextforge.recipe.load import load_recipe

    r = load_recipe(str(ROOT / "benchmarks/studies/paracrawl-filter/recipes/combine.yaml"))
    assert r.prepare[0].train == "combine_model.v1" and r.steps[-1].filter == "combine.v1"


def _quality_tsv(tmp_path, n=300, seed=5):
    """Scored rows with a human quality score q = 2a - b + noise and a train/dev split."""
    import random

    rng = random.Random(seed)
    lines = ["src\ttgt\ta\tb\tq\tsplit"]
    for i in range(n):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        q = 2 * a - b + rng.gauss(0, 0.5)
        lines.append(f"s{i}\tt{i}\t{a:.6f}\t{b:.6f}\t{q:.6f}\t{'train' if i % 3 else 'dev'}")
    p = tmp_path / "scored.tsv"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_regression_on_a_quality_score_of_the_train_split(tmp_path):
    """task: regress fits RidgeCV on the train rows only; combine.v1 outputs its prediction,
    which equals scikit-learn's and agrees with the dev rows' quality scores."""
    import numpy as np
    from scipy.stats import pearsonr
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = _quality_tsv(tmp_path)
    model = tmp_path / "qe.json"
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"""name: qe
prepare:
  - train: combine_model.v1
    with: {{data: '{data}', columns: [a, b], label: q, task: regress, where: {{split: [train]}},
           output: '{model}'}}
input: {{path: '{data}', format: tsv, header: true, columns: [src, tgt, a, b, q, split]}}
output: {{dir: '{tmp_path / "out"}', formats: [tsv]}}
progress: false
steps:
  - filter: combine.v1
    with: {{model: '{model}'}}
    keep: {{min: -.inf}}
    as: qe
""")
    from bitextforge.recipe.load import load_recipe

    res = run_recipe(load_recipe(recipe))
    info = res.manifest["prepare"][0]["info"]
    assert info["rows"] == 200                       # the train rows only
    assert info["cv_pearson"] > 0.9                  # q is nearly linear in a and b
    saved = json.loads(model.read_text())
    assert saved["format"] == "bitextforge-combine-linear" and saved["coef"][0] > 0 > saved["coef"][1]
    rows = [ln.split("\t") for ln in data.read_text().splitlines()[1:]]
    X = np.array([[float(r[2]), float(r[3])] for r in rows])
    q = np.array([float(r[4]) for r in rows])
    train = np.array([r[5] == "train" for r in rows])
    ref = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13))).fit(X[train],
                                                                                     q[train])
    out = (tmp_path / "out" / "corpus.tsv").read_text().splitlines()
    head = out[0].split("\t")
    got = np.array([float(ln.split("\t")[head.index("qe")]) for ln in out[1:]])
    assert np.allclose(got, ref.predict(X), atol=1e-9)
    assert pearsonr(got[~train], q[~train])[0] > 0.9


def test_regression_needs_a_numeric_score_and_labelled_data(tmp_path):
    data = _quality_tsv(tmp_path, n=20)
    text = data.read_text().splitlines()
    text[3] = text[3].rsplit("\t", 2)[0] + "\thigh\ttrain"
    data.write_text("\n".join(text) + "\n")
    recipe = (f"name: t\nprepare:\n  - train: combine_model.v1\n    with: {{data: '{data}', "
              f"columns: [a, b], label: q, task: regress, output: '{tmp_path}/m.json'}}\n")
    with pytest.raises(BitextforgeError, match=r"scored.tsv, line 4: q 'high' is not a number"):
        run_recipe(parse_recipe(recipe, "t.yaml"))
    assert not (tmp_path / "m.json").exists()
    synthetic = (f"name: t\nprepare:\n  - train: combine_model.v1\n    with: {{clean_src: a, "
                 f"clean_tgt: b, recipe: r.yaml, columns: [a], task: regress, "
                 f"output: '{tmp_path}/m.json'}}\n")
    with pytest.raises(RecipeError, match="task: regress needs data"):
        parse_recipe(synthetic, "t.yaml")


def test_where_selects_the_training_rows_of_a_labelled_file(tmp_path):
    """where: {split: [train]} fits the classifier on those rows only (the count says so)."""
    data = _quality_tsv(tmp_path, n=60)
    lines = data.read_text().splitlines()
    # a label column: clean when the quality score is positive
    lines = [lines[0] + "\tlabel"] + [ln + ("\tV" if float(ln.split("\t")[4]) > 0 else "\tN")
                                      for ln in lines[1:]]
    data.write_text("\n".join(lines) + "\n")
    model = tmp_path / "m.json"
    recipe = (f"name: t\nprepare:\n  - train: combine_model.v1\n    with: {{data: '{data}', "
              f"columns: [a, b], where: {{split: [train]}}, folds: 3, output: '{model}'}}\n")
    res = run_recipe(parse_recipe(recipe, "t.yaml"))
    assert res.manifest["prepare"][0]["info"]["rows"] == 40      # 2 of every 3 rows are train
    saved = json.loads(model.read_text())
    assert saved["trained_on"]["where"] == {"split": ["train"]} and saved["coef"][0] > 0
