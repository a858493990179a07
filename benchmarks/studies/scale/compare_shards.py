"""Compare the finished shard folders of two runs of one recipe, file by file: the corpus
parts, ``rejected.tsv``, ``cleaned.tsv``, and the rows and scores waiting for a top/words
selection (``selection.pkl`` by bytes, ``selection.npz`` by its arrays, since the zip records
times). Used to show that a run killed and resumed at 10M lines wrote, for every shard both
runs finished, what an uninterrupted run of the same input prefix wrote.

Usage: python benchmarks/studies/scale/compare_shards.py A B [--shards N]
A and B are folders of shard folders (``00000``, ``00001``, ...), e.g. hard-linked copies of
the runs' ``.shards`` taken before the merge removed them. Exit status 0 when every compared
shard is identical.
"""

from __future__ import annotations

import argparse
import filecmp
import sys
from pathlib import Path

import numpy as np

FILES = ("corpus.src", "corpus.tgt", "corpus.tsv", "corpus.weights", "rejected.tsv",
         "cleaned.tsv", "selection.pkl")


def main() -> int:
    """Compare the shards both folders finished; print one line per difference and a total."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--shards", type=int, default=None, help="only the first N shards")
    args = ap.parse_args()
    done = sorted({d.name for d in args.a.iterdir() if (d / "DONE").exists()}
                  & {d.name for d in args.b.iterdir() if (d / "DONE").exists()})
    if args.shards is not None:
        done = done[:args.shards]
    bad = files = 0
    for name in done:
        for f in FILES:
            fa, fb = args.a / name / f, args.b / name / f
            if not fa.exists() and not fb.exists():
                continue
            files += 1
            if not (fa.exists() and fb.exists() and filecmp.cmp(fa, fb, shallow=False)):
                print(f"differs: {name}/{f}")
                bad += 1
        npa, npb = args.a / name / "selection.npz", args.b / name / "selection.npz"
        if npa.exists() or npb.exists():
            files += 1
            with np.load(npa) as x, np.load(npb) as y:
                if sorted(x.files) != sorted(y.files) or any(
                        not np.array_equal(x[k], y[k]) for k in x.files):
                    print(f"differs: {name}/selection.npz")
                    bad += 1
    print(f"{len(done)} shards, {files} files compared, {bad} differ")
    return 1 if bad or not done else 0


if __name__ == "__main__":
    sys.exit(main())
