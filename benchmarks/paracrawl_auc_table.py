"""The ParaCrawl tables of docs/benchmarks.md ("Lexical filtering") from the eight runs of
benchmarks/studies/paracrawl-filter/recipes/filter.yaml: each file's ROC-AUC of the classifier and of the shipped bicleaner
score for V (valid) against the rest, the paired bootstrap interval of their difference (rows
resampled, both scores on the same resample), and ROC-AUC of V against one verdict at a time.

    .venv/bin/python benchmarks/paracrawl_auc_table.py          # reads runs/paracrawl-filter-*
    .venv/bin/python benchmarks/paracrawl_auc_table.py runs/pc48-t --against runs/pc47-e11

``--against OTHER``: one classifier's runs against another's on the same files (paired
bootstrap of the AUC difference, rows resampled), and each one's AUC of V against F (free
translation) and against MT.
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


def verdict_auc(lab, s, k: str) -> float | None:
    """ROC-AUC of score ``s`` for V against verdict ``k`` alone (None when no row has ``k``)."""
    m = (lab == "V") | (lab == k)
    return float(roc_auc_score(lab[m] == "V", s[m])) if (lab == k).any() else None


def main(root: str = "runs") -> int:
    """Print both tables."""
    print("| release | pair | rows | bicleaner | classifier | difference [95 %] | P(diff <= 0) |")
    print("|---|---|---|---|---|---|---|")
    runs = {}
    for rel in RELEASES:
        for lang in ("fr", "cs"):
            run = Path(root) / f"paracrawl-filter-{rel}-en-{lang}"
            if not (run / "corpus.tsv").is_file():
                print(f"{run}/corpus.tsv: missing; run benchmarks/studies/paracrawl-filter/recipes/filter.yaml first",
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
                auc = verdict_auc(lab, s, k)
                cells.append("-" if auc is None else f"{auc:.2f} ({(lab == k).sum()})")
            print(f"| {rel} en-{lang} | {name} | " + " | ".join(cells) + " |")
    return 0


def against(root: str, other: str) -> int:
    """Print ``root``'s classifier against ``other``'s, file by file."""
    print(f"| file | {other} | {root} | difference [95 %] | V vs F: other / this | "
          "V vs MT: other / this |\n|---|---|---|---|---|---|")
    diffs = []
    for rel in RELEASES:
        for lang in ("fr", "cs"):
            name = f"paracrawl-filter-{rel}-en-{lang}"
            if not all((Path(r) / name / "corpus.tsv").is_file() for r in (root, other)):
                print(f"{name}: missing under {root} or {other}", file=sys.stderr)
                return 2
            lab, a, _ = _read(Path(root) / name)
            lab_b, b, _ = _read(Path(other) / name)
            if not np.array_equal(lab, lab_b):
                print(f"{name}: the two runs hold different rows", file=sys.stderr)
                return 2
            y = lab == "V"
            d = paired_bootstrap(y, a, b)
            diffs.append(roc_auc_score(y, a) - roc_auc_score(y, b))
            aucs = {(w, k): verdict_auc(lab, v, k) for w, v in (("a", a), ("b", b))
                    for k in ("F", "MT")}
            f = {wk: "-" if auc is None else f"{auc:.2f}" for wk, auc in aucs.items()}
            print(f"| {rel} en-{lang} | {roc_auc_score(y, b):.3f} | {roc_auc_score(y, a):.3f} | "
                  f"{diffs[-1]:+.3f} [{np.percentile(d, 2.5):+.3f}, {np.percentile(d, 97.5):+.3f}]"
                  f" | {f['b', 'F']} / {f['a', 'F']} | {f['b', 'MT']} / {f['a', 'MT']} |")
    print(f"mean difference over the eight files: {np.mean(diffs):+.4f}")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 3 and args[1] == "--against":
        sys.exit(against(args[0], args[2]))
    if len(args) > 1:
        print("usage: paracrawl_auc_table.py [ROOT] [--against OTHER_ROOT]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*args))
