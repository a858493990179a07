"""The table of the low-resource paraphrase-expansion experiment (benchmarks/studies/para-multi30k/recipes/para.yaml,
benchmarks/studies/para-multi30k/recipes/para-bt.yaml) from its runs' train_and_test.v1 reports: rows, BLEU and chrF per
seed and their medians, each seed's difference from the bitext-only model of the same seed with its
paired-bootstrap p-value, and for the arm with back-translation the same against the beam BT arm
(BLEU and chrF).

Run from the repository root after the arms (runs/bt-multi30k-bitext and runs/bt-multi30k-beam
must hold the back-translation experiment's finished runs):  .venv/bin/python benchmarks/para_table.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import train_and_test_run  # noqa: E402

#: (label, run directory, run directory whose report compares it with the beam BT arm)
ARMS = [("bitext only (5,000 pairs)", "bt-multi30k-bitext", None),
        ("+ round-trip paraphrases, d.2", "para-multi30k-d2", None),
        ("+ round-trip paraphrases, d.4", "para-multi30k-d4", None),
        ("+ round-trip paraphrases, v.4", "para-multi30k-v4", None),
        ("+ round-trip paraphrases, f.4", "para-multi30k-f4", None),
        ("+ beam BT", "bt-multi30k-beam", None),
        ("+ beam BT + paraphrases d.2", "para-bt-multi30k", "para-bt-multi30k-vs-beam")]


def per_seed(n: dict, seeds: list[int], metric: str) -> str:
    """'+d (p), ...' for each seed that was compared."""
    keys = [(f"seed{s}_{metric}_delta", f"seed{s}_{metric}_p_value") for s in seeds]
    return ", ".join(f"{n[d]:+.2f} ({n[p]:.3f})" for d, p in keys if d in n)


def main() -> None:
    """Print the markdown table."""
    print("| arm | rows | BLEU seeds 1 / 2 / 3 | median | chrF seeds 1 / 2 / 3 | median | "
          "BLEU per seed vs bitext only (p) | chrF per seed vs bitext only (p) | "
          "BLEU per seed vs + beam BT (p) | chrF per seed vs + beam BT (p) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, run, vs_beam in ARMS:
        d = train_and_test_run(run)
        if d is None or not d["models"]:
            print(f"| {label} | | not run | | | | | | | |")
            continue
        ms = sorted(d["models"], key=lambda m: m["seed"])
        seeds = [m["seed"] for m in ms]
        n = d["numbers"]
        bleu = " / ".join(f"{m['bleu']:.2f}" for m in ms)
        chrf = " / ".join(f"{m['chrf']:.2f}" for m in ms)
        beam = beam_chrf = ""
        if vs_beam:
            v = train_and_test_run(vs_beam)
            beam = per_seed(v["numbers"], seeds, "bleu") if v else "not run"
            beam_chrf = per_seed(v["numbers"], seeds, "chrf") if v else "not run"
        print(f"| {label} | {int(n['train_rows']):,} | {bleu} | "
              f"{statistics.median(m['bleu'] for m in ms):.2f} | {chrf} | "
              f"{statistics.median(m['chrf'] for m in ms):.2f} | {per_seed(n, seeds, 'bleu')} | "
              f"{per_seed(n, seeds, 'chrf')} | {beam} | {beam_chrf} |")


if __name__ == "__main__":
    main()
