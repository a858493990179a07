"""Speed of the dual conditional cross-entropy's two directions (``nmt_logprob.v1`` with
models/general-de-en and models/general-en-de, recipes/models-deen.yaml) in CTranslate2 float32
against int8, interleaved, median of ``--runs``, on ``--pairs`` de-en pool pairs (News Commentary).
Issue #33: does int8 make the two features cheap enough for benchmarks/studies/wmt-filter-design/recipes/wmt-filter-deen.yaml (1,395
pairs/s without them; goal 200)? Prints pairs/s per compute type and the Pearson correlation of
each direction's int8 scores with float32.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_dual_xent_speed.py --pairs 2000 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from _common import machine_line, shared_data
from bitextforge.api import get_registry, read_tsv_pairs

DIRECTIONS = (("de->en", "models/general-de-en", "src"), ("en->de", "models/general-en-de", "tgt"))


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args(argv)
    s, t = read_tsv_pairs([str(shared_data("deen-train-pool", "news-commentary-v11-deen-20k",
                                           "train.de-en.tsv.gz"))])
    batch = {"src": list(s[-a.pairs:]), "tgt": list(t[-a.pairs:])}
    cls = get_registry().get("filter", "nmt_logprob.v1")
    filters = {(ct, d): cls(cls.Config(model=m, reads=r, compute_type=ct, threads=2,
                                       batch_size=64))
               for ct in ("float32", "int8") for d, m, r in DIRECTIONS}
    secs = {ct: [] for ct in ("float32", "int8")}
    scores = {}
    for f in filters.values():  # conversions and loading out of the timing
        f.score({"src": batch["src"][:8], "tgt": batch["tgt"][:8]})
    for _ in range(a.runs):
        for ct in secs:
            t0 = time.perf_counter()
            for d, _, _ in DIRECTIONS:
                scores[(ct, d)] = np.array(filters[(ct, d)].score(batch), dtype=float)
            secs[ct].append(time.perf_counter() - t0)
    print(machine_line())
    print("| compute type | median s, both directions | pairs/s |")
    print("|---|---|---|")
    for ct, v in secs.items():
        m = statistics.median(v)
        print(f"| {ct} | {m:.1f} | {a.pairs / m:.0f} |")
    for d, _, _ in DIRECTIONS:
        r = np.corrcoef(scores[("float32", d)], scores[("int8", d)])[0, 1]
        print(f"{d}: Pearson of int8 with float32 scores {r:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
