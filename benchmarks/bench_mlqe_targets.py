"""MLQE-PE en-de: does the supervised regression of ``benchmarks/studies/mlqe-qe/recipes/qe.yaml`` predict the human
direct assessments (``da_z_mean``) of the dev split better when it is fitted to the train split's
post-editing effort (HTER: TER of the machine translation against its human post-edit, Snover et
al. 2006, with sacrebleu) than to the train split's own direct assessments?

The WMT20 QE data (Specia et al. 2020; Fomicheva et al. 2022) give both labels for the 7,000
train rows; the dev split is evaluated on DA as the recipe does. Reads the scores the recipe wrote
(``runs/mlqe-qe/corpus.tsv``), so run the recipe first. Prints one JSON object: Pearson on dev of
ridge regressions (scikit-learn ``RidgeCV`` on standardised columns) fitted to each target, with
the 95 % bootstrap interval of ``score_correlation.v1``.

    .venv/bin/bitextforge run benchmarks/studies/mlqe-qe/recipes/qe.yaml
    .venv/bin/python benchmarks/bench_mlqe_targets.py runs/mlqe-qe/corpus.tsv
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import sys

import numpy as np

from _common import shared_data
from bitextforge.plugins.evaluation.correlation import bootstrap_pearson

OURS = ["nmt_logprob", "nmt_adapted", "kenlm_de", "ibm1_mt_given_src", "ibm1_src_given_mt",
        "coverage", "pair_classifier", "source_length", "length_ratio"]


def hter(mt: list[str]) -> np.ndarray:
    """TER (0-100) of each train translation against its post-edit (the post-edits are released
    tokenized: Moses-detokenized first, as the recipe's adaptation reads them)."""
    from sacrebleu.metrics import TER

    from bitextforge.plugins.nmt.train import detokenize

    with gzip.open(shared_data("mlqe-pe-ende", "pe.train.de-en.tsv.gz"), "rt",
                   encoding="utf-8") as fh:
        pe = detokenize([line.split("\t")[0] for line in fh.read().splitlines()], "de")
    if len(pe) != len(mt):
        raise SystemExit(f"{len(pe)} post-edits but {len(mt)} train rows")
    ter = TER()
    return np.array([ter.sentence_score(m, [p]).score for m, p in zip(mt, pe)])


def main(argv=None):
    """Print the comparison as JSON."""
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", help="corpus.tsv of a benchmarks/studies/mlqe-qe/recipes/qe.yaml run")
    ap.add_argument("--columns", nargs="+", default=OURS, help="score columns to regress on")
    a = ap.parse_args(argv)
    with open(a.corpus, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    train = [r for r in rows if r["split"] == "train"]
    dev = [r for r in rows if r["split"] == "dev"]
    # corpus.tsv keeps the input's order; the MT is src there (the recipe reads the pair turned
    # round), and the post-edit file follows the train rows line by line. Lower-is-better columns
    # need no negating: a ridge on standardised columns predicts the same either way.

    def matrix(part):
        return np.column_stack([[float(r[c]) for r in part] for c in a.columns])

    xt, xd = matrix(train), matrix(dev)
    y_dev = np.array([float(r["da_z_mean"]) for r in dev])
    da = np.array([float(r["da_z_mean"]) for r in train])
    effort = -hter([r["src"] for r in train])
    z = lambda v: (v - v.mean()) / v.std()  # noqa: E731
    out = {"train_rows": len(train), "dev_rows": len(dev), "columns": a.columns,
           "train_pearson(da_z_mean, -hter)": round(float(np.corrcoef(da, effort)[0, 1]), 4)}
    for name, target in (("da", da), ("hter", effort), ("da+hter", z(da) + z(effort))):
        model = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13)))
        model.fit(xt, target)
        pred = model.predict(xd)
        lo, hi = bootstrap_pearson(pred, y_dev, 1000, 1234)
        out[f"dev_pearson.fit_to_{name}"] = [round(float(np.corrcoef(pred, y_dev)[0, 1]), 4),
                                              round(lo, 4), round(hi, 4)]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())
