"""MLQE-PE en-de (WMT20 QE task 1): Pearson correlation with ``da_z_mean`` on the dev split of the
lexical scores, of the pair classifier, and of a linear regression over them and the translating
model's own log-probability fitted on the train split only (7,000 rows; scikit-learn
``RidgeCV`` on standardised features), for docs/benchmarks.md ("Lexical filtering").

    .venv/bin/python tests/bench/bench_lexical_mlqe.py --tables models/lexical-deen \
        --classifier models/pair-classifier-deen.joblib
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

from bitextforge.plugins.lexical.components import LexicalCoverageFilter, LexicalTranslationFilter
from bitextforge.plugins.lexical.pair_classifier import PairClassifierFilter

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
DING = DATA / "deen-train-pool/ding-trans-de-en-1.9-6-lexicon/subentry_pairs.de-en.tsv.gz"


def split(name: str):
    """English sources, German MT, da_z_mean and the NMT log-probability of one split."""
    with gzip.open(DATA / "mlqe-pe-ende/da_scores.en-de.train-dev.tsv.gz", "rt",
                   encoding="utf-8") as fh:
        head = fh.readline().rstrip("\n").split("\t")
        rows = [dict(zip(head, ln.rstrip("\n").split("\t"))) for ln in fh]
    rows = [r for r in rows if r["split"] == name]
    return ([r["en_source"] for r in rows], [r["de_mt"] for r in rows],
            np.array([float(r["da_z_mean"]) for r in rows]),
            np.array([float(r["nmt_model_logprob"]) for r in rows]))


def main(argv=None):
    """Print one JSON object of Pearson correlations."""
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", required=True,
                    help="Table directory (lexical_translation_model.v1).")
    ap.add_argument("--classifier", help="Model of pair_classifier_model.v1 (optional).")
    ap.add_argument("--floor", type=float, default=1e-5, help="IBM-1 word probability floor.")
    a = ap.parse_args(argv)
    # the MLQE source is English, the translation German: the de-en models read it turned round
    scorers = {f"ibm1_{d}": (LexicalTranslationFilter(LexicalTranslationFilter.Config(
        tables=a.tables, direction=d, src_lang="en", tgt_lang="de", floor=a.floor)), False)
        for d in ("src2tgt", "tgt2src")}
    scorers["coverage"] = (LexicalCoverageFilter(LexicalCoverageFilter.Config(
        dictionary=str(DING), src_lang="en", tgt_lang="de")), False)
    if a.classifier:  # its feature filters read de-en pairs: give it German as src
        scorers["pair_classifier"] = (PairClassifierFilter(PairClassifierFilter.Config(
            model=a.classifier)), True)
    feats, z, out = {}, {}, {}
    for name in ("train", "dev"):
        en, de, zz, lp = split(name)
        cols = {"nmt_model_logprob": lp}
        for k, (f, swap) in scorers.items():
            batch = {"src": de, "tgt": en} if swap else {"src": en, "tgt": de}
            cols[k] = np.array(f.score(batch))
        feats[name], z[name] = cols, zz
    for k, v in feats["dev"].items():
        out[f"dev_pearson.{k}"] = round(float(np.corrcoef(v, z["dev"])[0, 1]), 4)
    keys = list(feats["train"])
    lex = [k for k in keys if k != "nmt_model_logprob"]
    for cols in (keys, lex):
        model = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13)))
        model.fit(np.column_stack([feats["train"][k] for k in cols]), z["train"])
        pred = model.predict(np.column_stack([feats["dev"][k] for k in cols]))
        r = float(np.corrcoef(pred, z["dev"])[0, 1])
        out["dev_pearson.ridge(" + "+".join(cols) + ")"] = round(r, 4)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())
