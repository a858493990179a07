"""MLQE-PE en-de (WMT20 QE task 1): Pearson correlation with ``da_z_mean`` on the dev split of the
lexical scores, of the pair classifier, of the project's NMT scores (``nmt_logprob.v1`` with the
general en-de model, and the dual conditional cross-entropy with de-en as well), of German KenLM
perplexity, of label-free averages of standardised scores, and of a linear regression over them
and the translating model's own log-probability fitted on the train split only (7,000 rows;
scikit-learn ``RidgeCV`` on standardised features), for docs/benchmarks.md ("Lexical filtering").

    .venv/bin/python benchmarks/bench_lexical_mlqe.py --tables models/lexical-deen \
        --classifier models/pair-classifier-deen.joblib \
        --nmt models/general-en-de --nmt-reverse models/general-de-en \
        --kenlm models/general-lm/de.binary
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from _common import ding_lexicon, mlqe_split
from bitextforge.plugins.lexical.components import LexicalCoverageFilter, LexicalTranslationFilter
from bitextforge.plugins.lexical.pair_classifier import PairClassifierFilter


def main(argv=None):
    """Print one JSON object of Pearson correlations."""
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", help="Table directory (lexical_translation_model.v1).")
    ap.add_argument("--nmt", help="en->de model directory for nmt_logprob.v1 (optional).")
    ap.add_argument("--nmt-reverse", help="de->en model: adds the dual cross-entropy.")
    ap.add_argument("--kenlm", help="German KenLM model: perplexity of the MT (optional).")
    ap.add_argument("--classifier", help="Model of pair_classifier_model.v1 (optional).")
    ap.add_argument("--floor", type=float, default=1e-5, help="IBM-1 word probability floor.")
    a = ap.parse_args(argv)
    # the MLQE source is English, the translation German: the de-en models read it turned round
    scorers = {}
    if a.tables:
        scorers = {f"ibm1_{d}": (LexicalTranslationFilter(LexicalTranslationFilter.Config(
            tables=a.tables, direction=d, src_lang="en", tgt_lang="de", floor=a.floor)), False)
            for d in ("src2tgt", "tgt2src")}
    scorers["coverage"] = (LexicalCoverageFilter(LexicalCoverageFilter.Config(
        dictionary=str(ding_lexicon()), src_lang="en", tgt_lang="de")), False)
    if a.nmt:
        from bitextforge.plugins.nmt.filters import NmtLogprobFilter, dual_cross_entropy

        scorers["nmt_logprob"] = (NmtLogprobFilter(NmtLogprobFilter.Config(model=a.nmt)), False)
        if a.nmt_reverse:  # log P(source | MT); the dual score is derived below, not rescored
            scorers["nmt_logprob_reverse"] = (NmtLogprobFilter(NmtLogprobFilter.Config(
                model=a.nmt_reverse, reads="tgt")), False)
    if a.kenlm:  # lower perplexity = more fluent: negated so that higher is better everywhere
        from bitextforge.plugins.quality.lm import KenlmPerplexityFilter

        scorers["kenlm_neg_log_ppl"] = (_NegLog(KenlmPerplexityFilter(KenlmPerplexityFilter.Config(
            model=a.kenlm, column="tgt", lang="de"))), False)
    if a.classifier:  # its feature filters read de-en pairs: give it German as src
        scorers["pair_classifier"] = (PairClassifierFilter(PairClassifierFilter.Config(
            model=a.classifier)), True)
    feats, z, out = {}, {}, {}
    for name in ("train", "dev"):
        en, de, zz, lp = mlqe_split(name)
        cols = {"nmt_model_logprob": lp}
        for k, (f, swap) in scorers.items():
            batch = {"src": de, "tgt": en} if swap else {"src": en, "tgt": de}
            cols[k] = np.array(f.score(batch))
        if "nmt_logprob_reverse" in cols:
            cols["nmt_dual_xent"] = np.array(dual_cross_entropy(
                cols["nmt_logprob"], cols.pop("nmt_logprob_reverse")))
        feats[name], z[name] = cols, zz
    for k, v in feats["dev"].items():
        out[f"dev_pearson.{k}"] = round(float(np.corrcoef(v, z["dev"])[0, 1]), 4)
    # Label-free combinations: each score standardised on the dev rows themselves, then averaged.
    own = [k for k in feats["dev"] if k != "nmt_model_logprob"]
    for combo in _combos(own):
        avg = np.mean([_std(feats["dev"][k]) for k in combo], axis=0)
        out["dev_pearson.mean_z(" + "+".join(combo) + ")"] = round(
            float(np.corrcoef(avg, z["dev"])[0, 1]), 4)
    keys = list(feats["train"])
    for cols in (keys, own):
        model = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13)))
        model.fit(np.column_stack([feats["train"][k] for k in cols]), z["train"])
        pred = model.predict(np.column_stack([feats["dev"][k] for k in cols]))
        r = float(np.corrcoef(pred, z["dev"])[0, 1])
        out["dev_pearson.ridge(" + "+".join(cols) + ")"] = round(r, 4)
    print(json.dumps(out, indent=1))


class _NegLog:
    """A perplexity filter as a fluency score: minus the log of its perplexity (higher = more
    fluent, on the scale of a log-probability per word)."""

    def __init__(self, flt):
        self.flt = flt

    def score(self, batch):
        """``-log(perplexity)`` per row."""
        return [-float(np.log(v)) for v in self.flt.score(batch)]


def _std(v):
    return (v - v.mean()) / (v.std() or 1.0)


def _combos(keys):
    """Every pair and triple of the given score names."""
    from itertools import combinations

    return [c for n in (2, 3) for c in combinations(keys, n)]


if __name__ == "__main__":
    sys.exit(main())
