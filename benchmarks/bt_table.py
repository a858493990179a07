"""The table of the low-resource back-translation experiment (recipes/bt-multi30k.yaml) from its
runs' train_and_test.v1 reports: BLEU and chrF per seed, the median, each seed's difference from
the bitext-only model of the same seed with its paired-bootstrap p-value, and the share of the gap
to the 29,000-real-pairs upper bound that the median closes.

Run from the repository root after the arms:  .venv/bin/python benchmarks/bt_table.py
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

ARMS = [("bitext only (5,000 pairs)", "bt-multi30k-bitext"),
        ("+ beam BT", "bt-multi30k-beam"),
        ("+ sampled BT (top-k 10)", "bt-multi30k-sampled"),
        ("+ tagged beam BT", "bt-multi30k-tagged"),
        ("+ beam BT, dual-xent filtered (worst 25 % out)", "bt-multi30k-filtered"),
        ("+ tagged beam BT, bitext x2", "bt-multi30k-tagged-up2"),
        ("29,000 real pairs (upper bound)", "bt-multi30k-real29k")]


def load(run: str) -> dict | None:
    """The train_and_test.v1 report and record of one run, or None when it has not run."""
    rep = Path("runs") / run / "reports" / "train_and_test.v1.json"
    rec = Path("runs") / run / "train_and_test" / "train_and_test.json"
    if not rep.is_file() or not rec.is_file():
        return None
    return {"numbers": json.loads(rep.read_text())["numbers"],
            "models": json.loads(rec.read_text())["models"]}


def main() -> None:
    """Print the markdown table."""
    data = {run: load(run) for _, run in ARMS}
    med = {run: statistics.median(m["bleu"] for m in d["models"])
           for run, d in data.items() if d}
    base, top = med.get("bt-multi30k-bitext"), med.get("bt-multi30k-real29k")
    print("| arm | rows | BLEU seeds 1 / 2 / 3 | median | chrF median | per seed vs bitext only "
          "(p) | gap closed |")
    print("|---|---|---|---|---|---|---|")
    for label, run in ARMS:
        d = data[run]
        if d is None:
            print(f"| {label} | | not run | | | | |")
            continue
        ms = sorted(d["models"], key=lambda m: m["seed"])
        bleu = " / ".join(f"{m['bleu']:.2f}" for m in ms)
        chrf = statistics.median(m["chrf"] for m in ms)
        n = d["numbers"]
        keys = [(f"seed{m['seed']}_bleu_delta", f"seed{m['seed']}_bleu_p_value") for m in ms]
        per = ", ".join(f"{n[d]:+.2f} ({n[p]:.3f})" for d, p in keys if d in n)
        gap = ""
        if base is not None and top is not None and run not in ("bt-multi30k-bitext",
                                                                  "bt-multi30k-real29k"):
            gap = f"{(med[run] - base) / (top - base):.0%}"
        print(f"| {label} | {int(n['train_rows']):,} | {bleu} | {med[run]:.2f} | {chrf:.2f} | "
              f"{per} | {gap} |")


if __name__ == "__main__":
    main()
