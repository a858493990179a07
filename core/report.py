"""The run report: a histogram of every filter step's scores with its thresholds marked and the
number of rows it rejected, as PNG images and one HTML page beside the output, so users choose
thresholds from the pictures.
"""

from __future__ import annotations

import html
import math
from pathlib import Path


def write_score_report(out_dir: Path, filters: list) -> str:
    """Write ``report.html`` and ``reports/<step>.png``; return a note when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no score histograms (pip install matplotlib)"
    from .corpus import write_atomic

    img_dir = out_dir / "reports"
    img_dir.mkdir(parents=True, exist_ok=True)
    parts = ["<!doctype html><meta charset='utf-8'><title>bitextforge run report</title>",
             "<h1>Filter scores</h1>"]
    for ex in filters:
        vals = [v for v in ex.sample.values if not math.isnan(v) and not math.isinf(v)]
        keep = ex.keep
        fname = f"step{ex.stats.index}_{ex.col}.png"
        fig, ax = plt.subplots(figsize=(6, 3.2), dpi=100)
        if vals:
            ax.hist(vals, bins=60, color="#4477aa")
        for bound, label in ((keep.min, "min"), (keep.max, "max")):
            if bound is not None:
                ax.axvline(bound, color="#cc3311", linestyle="--", label=f"{label} {bound:g}")
        if keep.min is not None or keep.max is not None:
            ax.legend(loc="upper right")
        ax.set_title(f"steps[{ex.stats.index}] {ex.comp.name} -> {ex.col}")
        ax.set_xlabel("score")
        ax.set_ylabel("rows (sample)")
        fig.tight_layout()
        tmp = img_dir / f".{fname}.tmp.png"
        fig.savefig(tmp)
        plt.close(fig)
        tmp.replace(img_dir / fname)
        decision = ", ".join(f"{k}={v}" for k, v in keep.model_dump(exclude_none=True).items())
        parts.append(
            f"<h2>steps[{ex.stats.index}] {html.escape(ex.comp.name)}</h2>"
            f"<p>decision: {html.escape(decision)}; rows in {ex.stats.rows_in}, rejected "
            f"{ex.rejected}; histogram of {len(vals)} sampled scores of {ex.sample.seen}</p>"
            f"<img src='reports/{fname}' alt='histogram of {html.escape(ex.col)}'>")
    write_atomic(out_dir / "report.html", "\n".join(parts) + "\n")
    return ""
