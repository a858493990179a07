"""Benchmark of the lexical plugin's scores (docs/benchmarks.md, "Lexical filtering"):

- sentence alignment recovery error (alignment_recovery.v1, both directions averaged) on the first
  1,000 lines of newstest2019 de-en and on FLORES-200 devtest de-en, for each measure;
- Pearson correlation with ``da_z_mean`` on the MLQE-PE en-de dev set (1,000 en->de machine
  translations), against the translating model's own log-probability.

Run from the repository root, after training tables (see docs/filters.md):

    .venv/bin/python benchmarks/bench_lexical.py --tables models/lexical-deen \
        --coverage stem:1 lowercase:1 stem:3 lowercase:3
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from _common import ding_lexicon, mlqe_split, shared_data
from bitextforge.plugins.bilingual.components import AlignmentRecoveryEvaluator
from bitextforge.plugins.lexical.components import LexicalCoverageFilter, LexicalTranslationFilter


def test_sets() -> dict[str, tuple]:
    """The two alignment-recovery test sets: newstest2019 de-en and FLORES-200 devtest de-en."""
    return {"newstest2019": (shared_data("wmt-newstest-deen", "newstest2019-deen.de"),
                             shared_data("wmt-newstest-deen", "newstest2019-deen.en")),
            "flores": (shared_data("flores200-devtest", "deu_Latn.devtest"),
                       shared_data("flores200-devtest", "eng_Latn.devtest"))}


def recovery(measure: str, options: dict, csls: bool) -> dict:
    """Error % on each test set."""
    out = {}
    for name, (s, t) in test_sets().items():
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
    en, de, z, logprob = mlqe_split("dev")
    if not a.no_mlqe:
        print(json.dumps({"measure": "nmt_model_logprob",
                          "mlqe_pearson": round(float(np.corrcoef(logprob, z)[0, 1]), 4)}),
              flush=True)
    runs = []
    for spec in a.coverage:
        norm, mw = spec.split(":")
        opts = {"dictionary": str(ding_lexicon()), "normalise": norm, "max_words": int(mw)}
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
