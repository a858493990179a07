"""The ParaCrawl tables of docs/benchmarks.md ("Lexical filtering") from the eight runs of
recipes/paracrawl-filter.yaml: each file's ROC-AUC of the classifier and of the shipped bicleaner
score for V (valid) against the rest, the paired bootstrap interval of their difference (rows
resampled, both scores on the same resample), and ROC-AUC of V against one verdict at a time.

    .venv/bin/python benchmarks/paracrawl_auc_table.py          # reads runs/paracrawl-filter-*
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from _common import paired_bootstrap

RELEASES = ("v3", "v6", "v6-2", "v7")
VERDICTS = ("A", "L", "T", "MT", "E", "F")


def _read(run: Path):
    csv.field_size_limit(1 << 30)
    with open(run / "corpus.tsv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    lab = np.array([r["label"] for r in rows])
    ours = np.array([float(r["paracrawl_classifier"]) for r in rows])
    bic = np.array([float(r["bicleaner"]) for r in rows])
    return lab, ours, bic


def main(root: str = "runs") -> int:
    """Print both tables."""
    print("| release | pair | rows | bicleaner | classifier | difference [95 %] | P(diff <= 0) |")
    print("|---|---|---|---|---|---|---|")
    runs = {}
    for rel in RELEASES:
        for lang in ("fr", "cs"):
            run = Path(root) / f"paracrawl-filter-{rel}-en-{lang}"
            if not (run / "corpus.tsv").is_file():
                print(f"{run}/corpus.tsv: missing; run recipes/paracrawl-filter.yaml first",
                      file=sys.stderr)
                return 2
            lab, ours, bic = runs[rel, lang] = _read(run)
            y = lab == "V"
            a, b = roc_auc_score(y, ours), roc_auc_score(y, bic)
            d = paired_bootstrap(y, ours, bic)
            print(f"| {rel} | en-{lang} | {len(y)} | {b:.3f} | {a:.3f} | {a - b:+.3f} "
                  f"[{np.percentile(d, 2.5):+.3f}, {np.percentile(d, 97.5):+.3f}] | "
                  f"{(d <= 0).mean():.3f} |")
    print("\n| file | score | " + " | ".join(VERDICTS) + " |")
    print("|---|---|" + "---|" * len(VERDICTS))
    for (rel, lang), (lab, ours, bic) in runs.items():
        for name, s in (("bicleaner", bic), ("classifier", ours)):
            cells = []
            for k in VERDICTS:
                m = (lab == "V") | (lab == k)
                cells.append(f"{roc_auc_score(lab[m] == 'V', s[m]):.2f} ({(lab == k).sum()})"
                             if (lab == k).any() else "-")
            print(f"| {rel} en-{lang} | {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
