"""MLQE-PE en-de (issue #33, item 4): which of the project's own scores should the supervised
regression of ``benchmarks/studies/mlqe-qe/recipes/qe.yaml`` stack, chosen by 5-fold cross-validation on the 7,000
train rows alone, with the dev split read once, for the chosen design, at the end?

The candidates add to the recipe's regression (``ours``) the encoder-based prediction of
``benchmarks/studies/mlqe-qe/recipes/embedding-qe.yaml`` (``embedding_qe``, TransQuest's siamese idea with a frozen
multilingual-e5-small; its train rows are scored by the fold model that left them out, so a
stacked regression sees on train the kind of score it meets on dev), and the back direction of
Junczys-Dowmunt's (2018) dual conditional cross-entropy: ``nmt_back``, log P(English source |
German MT) per token under models/general-de-en, and ``dual_xent``, the dual score of both
directions. The translating system's own log-probability is never a candidate (the issue's goal
is without it). The regression is ``score_correlation.v1``'s: standardised scores into RidgeCV,
a missing score imputed by its mean. Prints one JSON object: each candidate's CV Pearson, the
choice, and the chosen design's dev Pearson with the 95 % bootstrap interval of
``score_correlation.v1`` (and the recipe's ``ours`` on dev, the reference the issue reports).

    .venv/bin/bitextforge run benchmarks/studies/mlqe-qe/recipes/qe.yaml
    .venv/bin/bitextforge run benchmarks/studies/mlqe-qe/recipes/embedding-qe.yaml
    .venv/bin/python benchmarks/bench_mlqe_stack.py runs/mlqe-qe/corpus.tsv \\
        runs/mlqe-embedding-qe/corpus.tsv
"""

from __future__ import annotations

import argparse
import csv
import json
import sys

import numpy as np

from bitextforge.plugins.combine import ridge_regression
from bitextforge.plugins.evaluation.correlation import bootstrap_pearson

#: the recipe's combination ``ours`` (benchmarks/studies/mlqe-qe/recipes/qe.yaml)
OURS = ["nmt_logprob", "nmt_adapted", "kenlm_de", "ibm1_mt_given_src", "ibm1_src_given_mt",
        "coverage", "pair_classifier", "source_regressor", "source_length", "length_ratio"]
#: candidate designs, fixed before the first run (2026-11-27)
CANDIDATES = {
    "ours": OURS,
    "ours + nmt_back": OURS + ["nmt_back"],
    "ours + nmt_back + dual_xent": OURS + ["nmt_back", "dual_xent"],
    "ours + embedding_qe": OURS + ["embedding_qe"],
    "ours + embedding_qe + nmt_back + dual_xent": OURS + ["embedding_qe", "nmt_back",
                                                          "dual_xent"],
    "embedding_qe + nmt scores": ["embedding_qe", "nmt_logprob", "nmt_adapted", "nmt_back",
                                  "dual_xent"],
}


def read_columns(path: str, names: list[str]) -> dict[str, np.ndarray]:
    """The columns ``names`` of a run's corpus.tsv (a header line), as numbers (NaN where empty),
    keyed by name, plus ``id`` and ``split`` as they are."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows:
        raise SystemExit(f"{path}: no rows")
    missing = [n for n in names if n not in rows[0]]
    if missing:
        raise SystemExit(f"{path}: no column {missing[0]!r}; it has {', '.join(rows[0])}")
    out = {"id": np.array([int(r["id"]) for r in rows])}
    for n in names:
        if n == "split":
            out[n] = np.array([r[n].strip() for r in rows])
        else:
            out[n] = np.array([float(r[n]) if r[n] not in ("", "nan") else np.nan
                               for r in rows])
    return out


def cv_pearson(X: np.ndarray, y: np.ndarray, folds: int = 5, seed: int = 1234) -> float:
    """Pearson's r of out-of-fold ridge predictions (score_correlation.v1's folds and seed)."""
    from sklearn.model_selection import KFold, cross_val_predict

    cv = KFold(n_splits=folds, shuffle=True, random_state=seed)
    pred = cross_val_predict(ridge_regression(impute=True), X, y, cv=cv)
    return float(np.corrcoef(pred, y)[0, 1])


def main(argv: list[str] | None = None) -> int:
    """Print the JSON object."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scores", help="benchmarks/studies/mlqe-qe/recipes/qe.yaml's corpus.tsv")
    ap.add_argument("embedding", help="benchmarks/studies/mlqe-qe/recipes/embedding-qe.yaml's corpus.tsv")
    args = ap.parse_args(argv)
    ours_cols = sorted({c for v in CANDIDATES.values() for c in v} - {"embedding_qe"})
    a = read_columns(args.scores, ["split", "da_z_mean"] + ours_cols)
    b = read_columns(args.embedding, ["embedding_qe"])
    pos = {i: k for k, i in enumerate(b["id"])}
    if set(pos) != set(a["id"].tolist()):
        raise SystemExit(f"{args.embedding}: its row ids differ from {args.scores}'s")
    cols = {n: a[n] for n in ours_cols}
    cols["embedding_qe"] = b["embedding_qe"][[pos[i] for i in a["id"]]]
    # lower-is-better columns need no negating: a ridge on standardised columns predicts the
    # same either way
    y = a["da_z_mean"]
    train, dev = a["split"] == "train", a["split"] == "dev"

    def X(names, rows):
        M = np.column_stack([cols[n][rows] for n in names])
        return np.where(np.isfinite(M), M, np.nan)

    cv = {label: round(cv_pearson(X(names, train), y[train]), 4)
          for label, names in CANDIDATES.items()}
    chosen = max(cv, key=cv.get)
    out = {"cv_pearson_on_train": cv, "chosen": chosen, "dev_pearson": {}}
    for label in dict.fromkeys([chosen, "ours"]):   # dev read for these two only
        m = ridge_regression(impute=True).fit(X(CANDIDATES[label], train), y[train])
        p = m.predict(X(CANDIDATES[label], dev))
        lo, hi = bootstrap_pearson(p, y[dev], 1000, 1234)
        out["dev_pearson"][label] = {"pearson": round(float(np.corrcoef(p, y[dev])[0, 1]), 4),
                                     "interval": [round(lo, 3), round(hi, 3)]}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
