"""The ParaCrawl table of benchmarks/studies/cleaning/history.md ("Does cleaning help?"): each score's ROC-AUC for
the human verdict V (valid) against the rest, on the whole file, without and with the cleaning
defaults of recipes/defaults/en-fr.yaml in front.

Without: the run of benchmarks/studies/paracrawl-filter/recipes/auc.yaml, every pair scored on its raw text. With: the run
of benchmarks/studies/cleaning/recipes/paracrawl-auc.yaml, where the defaults reject some pairs and the others are
scored on their cleaned text. The rejected pairs rank below every kept pair, tied among
themselves, so the whole file's ROC-AUC follows from label_auc.v1's AUC over the kept pairs
(``A_k``) and the counts of positives and negatives kept (``P_k``, ``N_k``) and rejected (``P_r``,
``N_r``): a kept positive beats every rejected negative, a rejected positive loses to every kept
negative, and a tie counts half,

    AUC = (P_k N_k A_k + P_k N_r + P_r N_r / 2) / ((P_k + P_r)(N_k + N_r)).

The same holds for combined(logreg), whose out-of-fold predictions are not stored: it is fitted
on the kept pairs. The rules alone (kept above rejected, no score) are the same formula with
``A_k = 1/2``. For the single scores, whose values are in the runs' TSV files, the 95 % interval
of the difference comes from a paired bootstrap over the file's pairs (1,000 resamples, both
rankings on the same resample).

    .venv/bin/python benchmarks/clean_auc_table.py          # reads runs/clean-auc-{raw,clean}-*
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from _common import paired_bootstrap
from bitextforge.plugins.evaluation.label_auc import _rank_ready

RELEASES = ("v3", "v6", "v6-2", "v7")
SHOWN = ("bicleaner", "zipporah", "langid_heliport", "unigram_overlap", "combined(logreg)")
LOWER_IS_BETTER = {"unigram_overlap"}  # as benchmarks/studies/paracrawl-filter/recipes/auc.yaml evaluates it


def whole_file_auc(auc_kept: float, pk: int, nk: int, pr: int, nr: int) -> float:
    """ROC-AUC over kept and rejected rows, the rejected tied below every kept row."""
    return (pk * nk * auc_kept + pk * nr + 0.5 * pr * nr) / ((pk + pr) * (nk + nr))


def _rows(path: Path) -> list[dict]:
    csv.field_size_limit(1 << 30)
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


def _numbers(run: Path) -> dict:
    return json.loads((run / "reports" / "label_auc.v1.json").read_text())["numbers"]


def main(root: str = "runs", pair: str = "en-fr") -> int:
    """Print the table and, per file, what the defaults rejected."""
    head = ["release", "rows", "V", "rejected (V among them)", "rules alone"]
    head += [f"{s} without / with" for s in SHOWN]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    notes = []
    for rel in RELEASES:
        raw, clean = (Path(root) / f"clean-auc-{arm}-{rel}-{pair}" for arm in ("raw", "clean"))
        if not (raw / "manifest.json").is_file() or not (clean / "manifest.json").is_file():
            print(f"{raw} or {clean}: missing; run the commands in benchmarks/studies/cleaning/history.md",
                  file=sys.stderr)
            return 2
        kept, rejected = _rows(clean / "corpus.tsv"), _rows(clean / "rejected.tsv")
        raw_rows = {r["id"]: r for r in _rows(raw / "corpus.tsv")}
        ids = [r["id"] for r in kept + rejected]
        y = np.array([raw_rows[i]["label"] == "V" for i in ids])
        pk = sum(r["label"] == "V" for r in kept)
        pr = sum(r["label"] == "V" for r in rejected)
        nk, nr = len(kept) - pk, len(rejected) - pr
        before, after = _numbers(raw), _numbers(clean)
        assert after["rows"] == len(kept) and before["rows"] == len(kept) + len(rejected)
        cells = [rel, f"{len(kept) + len(rejected):,}", f"{pk + pr:,}", f"{nr + pr} ({pr})",
                 f"{whole_file_auc(0.5, pk, nk, pr, nr):.3f}"]
        for s in SHOWN:
            if f"{s}.roc_auc" not in before:
                cells.append("–")
                continue
            b = before[f"{s}.roc_auc"]
            a = whole_file_auc(after[f"{s}.roc_auc"], pk, nk, pr, nr)
            cell = f"{b:.3f} / {a:.3f} ({a - b:+.3f}"
            if s in kept[0]:
                low = s in LOWER_IS_BETTER
                without = _rank_ready([float(raw_rows[i][s]) for i in ids], low)
                # the rejected pairs tied below every kept one
                with_ = _rank_ready([float(r[s]) for r in kept] + [np.nan] * len(rejected), low)
                assert abs(roc_auc_score(y, with_) - a) < 1e-9
                lo, hi = np.percentile(paired_bootstrap(y, with_, without), [2.5, 97.5])
                cell += f" [{lo:+.3f}, {hi:+.3f}]"
            cells.append(cell + ")")
        print("| " + " | ".join(cells) + " |")
        why = Counter(r["rejected_by"].split(":", 1)[1] for r in rejected)
        why_v = Counter(r["rejected_by"].split(":", 1)[1] for r in rejected if r["label"] == "V")
        notes.append(f"{rel}: " + ", ".join(f"{k} {n} ({why_v[k]} V)"
                                            for k, n in why.most_common()))
    print()
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
