"""Benchmark of the lexical plugin's scores (docs/benchmarks.md, "Lexical filtering"):

- sentence alignment recovery error (alignment_recovery.v1, both directions averaged) on the first
  1,000 lines of newstest2019 de-en and on FLORES-200 devtest de-en, for each measure;
- Pearson correlation with ``da_z_mean`` on the MLQE-PE en-de dev set (1,000 en->de machine
  translations), against the translating model's own log-probability.

Run from the repository root, after training tables (see docs/filters.md):

    .venv/bin/python tests/bench/bench_lexical.py --tables models/lexical-deen \
        --coverage stem:1 lowercase:1 stem:3 lowercase:3
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np

from bitextforge.plugins.bilingual.components import AlignmentRecoveryEvaluator
from bitextforge.plugins.lexical.components import LexicalCoverageFilter, LexicalTranslationFilter

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
DING = DATA / "deen-train-pool/ding-trans-de-en-1.9-6-lexicon/subentry_pairs.de-en.tsv.gz"
TESTS = {
    "newstest2019": (DATA / "wmt-newstest-deen/newstest2019-deen.de",
                     DATA / "wmt-newstest-deen/newstest2019-deen.en"),
    "flores": (DATA / "flores200-devtest/deu_Latn.devtest",
               DATA / "flores200-devtest/eng_Latn.devtest"),
}


def mlqe_dev():
    """English sources, German MT, da_z_mean and the NMT log-probability of the dev split."""
    rows = []
    with gzip.open(DATA / "mlqe-pe-ende/da_scores.en-de.train-dev.tsv.gz", "rt",
                   encoding="utf-8") as fh:
        head = fh.readline().rstrip("\n").split("\t")
        for line in fh:
            r = dict(zip(head, line.rstrip("\n").split("\t")))
            if r["split"] == "dev":
                rows.append(r)
    return ([r["en_source"] for r in rows], [r["de_mt"] for r in rows],
            np.array([float(r["da_z_mean"]) for r in rows]),
            np.array([float(r["nmt_model_logprob"]) for r in rows]))


def recovery(measure: str, options: dict, csls: bool) -> dict:
    """Error % on each test set."""
    out = {}
    for name, (s, t) in TESTS.items():
        ev = AlignmentRecoveryEvaluator(AlignmentRecoveryEvaluator.Config(
            measure=measure, lexical=options, lexical_csls=csls, src=str(s), tgt=str(t),
            limit=1000))
        n = ev.evaluate(None).numbers
        out[name] = round(100 * n["error"], 1)
    return out


def main(argv=None):
    """Print one JSON line per measure."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", nargs="*", default=[], help="Table directories to measure.")
    ap.add_argument("--coverage", nargs="*", default=[], help="normalise:max_words settings of "
                    "lexical_coverage.v1 to measure (e.g. stem:1).")
    ap.add_argument("--no-mlqe", action="store_true", help="Skip MLQE-PE.")
    a = ap.parse_args(argv)
    en, de, z, logprob = mlqe_dev()
    if not a.no_mlqe:
        print(json.dumps({"measure": "nmt_model_logprob",
                          "mlqe_pearson": round(float(np.corrcoef(logprob, z)[0, 1]), 4)}),
              flush=True)
    runs = []
    for spec in a.coverage:
        norm, mw = spec.split(":")
        opts = {"dictionary": str(DING), "normalise": norm, "max_words": int(mw)}
        runs.append(("lexical_coverage", opts, LexicalCoverageFilter, spec))
    for tdir in a.tables:
        for d in ("both", "src2tgt", "tgt2src"):
            runs.append(("lexical_translation", {"tables": tdir, "direction": d},
                         LexicalTranslationFilter, f"{tdir} {d}"))
    for measure, opts, cls, label in runs:
        t0 = time.perf_counter()
        res = {"measure": measure, "setting": label}
        for csls in (False, True):
            res["csls" if csls else "raw"] = recovery(measure, opts, csls)
        if not a.no_mlqe:
            f = cls(cls.Config(**opts, src_lang="en", tgt_lang="de"))
            s = np.array(f.score({"src": en, "tgt": de}))
            res["mlqe_pearson"] = round(float(np.corrcoef(s, z)[0, 1]), 4)
        res["seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    sys.exit(main())
