"""Choose the design of benchmarks/studies/paracrawl-filter/recipes/filter.yaml without looking at ParaCrawl's labels: train
pair classifiers on Multi30k (image captions) with several feature sets and score a synthetic
validation set from another domain, FLORES-200 devtest (Wikipedia-style general text): the even
lines as clean pairs, the odd lines turned into noise by the classifier's negative kinds. The
feature set that transfers best from captions to FLORES is the one the recipe uses.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_paracrawl_design.py fr cs

The IBM-1 features need tables: the script trains models/lexical-enfr and models/lexical-encs
(lexical_translation_model.v1, eflomal on the 30,014 Multi30k train + val pairs, no dictionary)
when they are missing.

Features are scored once per language pair for the largest set (kept in
runs/paracrawl-design-LANG.npz); each variant fits the same histogram gradient boosting classifier
as pair_classifier_model.v1 on its columns. On a busy machine run it with OMP_NUM_THREADS=1:
scikit-learn's threads wait for each other.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from _common import (cached_features, design_data, multi30k_tables, negative_kinds,
                     print_variants, transfer_features)
from bitextforge.plugins.lexical.pair_classifier import ALL_SURFACE, SURFACE, FeatureFilter

KINDS = negative_kinds()
TRANSFER = transfer_features()
LID = ["language_id.v1", "language_id.v1#1"]
LEX = ["lexical_translation.v1", "lexical_translation.v1#3"]
VARIANTS = {
    "surface(10) + LID": list(SURFACE) + LID,
    "transfer(14) + LID": list(TRANSFER) + LID,
    "surface(10) + LID + IBM-1": list(SURFACE) + LID + LEX,
    "transfer(14) + LID + IBM-1": list(TRANSFER) + LID + LEX,
}


def run(lang: str, limit: int, kinds: tuple[str, ...]) -> None:
    """Print the validation table of en-``lang``."""
    from sklearn.metrics import roc_auc_score

    t0 = time.perf_counter()
    src, tgt, ns, nt, vs, vt, ws, wt, wk = design_data(lang, limit, kinds)
    tables = multi30k_tables(lang, f"models/lexical-en{lang}")
    specs = [FeatureFilter(filter="language_id.v1", with_={"src_lang": "en"}),
             FeatureFilter(filter="language_id.v1", with_={"tgt_lang": lang}),
             FeatureFilter(filter="lexical_translation.v1",
                           with_={"tables": tables, "src_lang": "en", "tgt_lang": lang,
                                  "direction": "src2tgt"}),
             FeatureFilter(filter="lexical_translation.v1",
                           with_={"tables": tables, "src_lang": "en", "tgt_lang": lang,
                                  "direction": "tgt2src"})]
    X, V, names = cached_features(Path(f"runs/paracrawl-design-{lang}.npz"), specs, ALL_SURFACE,
                                  (src + ns, tgt + nt), (vs + ws, vt + wt))
    y = np.r_[np.ones(len(src)), np.zeros(len(ns))]
    yv = np.r_[np.ones(len(vs)), np.zeros(len(ws))]
    print(f"\nen-{lang}: {len(src)} Multi30k pairs + {len(ns)} negatives; FLORES validation "
          f"{len(vs)} clean + {len(ws)} noisy ({time.perf_counter() - t0:.0f} s to score)")
    print_variants(VARIANTS, names, X, y, V, yv, wk, kinds)
    for c in LID + LEX:
        j = names.index(c)
        print(f"| {c} alone | {roc_auc_score(yv, V[:, j]):.3f} | |")


if __name__ == "__main__":
    for lang in sys.argv[1:] or ["fr", "cs"]:
        run(lang, 20000, KINDS)
