"""The hand-written baseline of the core benchmark: one pass over the paired files doing exactly
what benchmarks/core_recipe.yaml does (dedupe, two length bounds, length ratio, the example
plugin's contraction paraphraser, Nichols' distributed expansion with n=2), written as a plain loop.

Usage: python benchmarks/handloop.py SRC TGT OUT_DIR
"""

import re
import sys
import unicodedata
from pathlib import Path

from bitextforge_example import ContractionParaphraser

_SPACE = re.compile(r"\s+")


def norm(t: str) -> str:
    t = _SPACE.sub(" ", t).strip().lower()
    return t if t.isascii() else unicodedata.normalize("NFKC", t)


def main(src: str, tgt: str, out: str) -> None:
    para = ContractionParaphraser()
    seen = set()
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    n = 2
    with open(src, encoding="utf-8") as fs, open(tgt, encoding="utf-8") as ft, \
            open(out_dir / "corpus.src", "w", encoding="utf-8") as os_, \
            open(out_dir / "corpus.tgt", "w", encoding="utf-8") as ot:
        for s, t in zip(fs, ft):
            s, t = s.rstrip("\n"), t.rstrip("\n")
            key = hash((norm(s), norm(t)))
            if key in seen:
                continue
            seen.add(key)
            ls, lt = len(s.split()), len(t.split())
            if min(ls, lt) < 1 or max(ls, lt) > 50:
                continue
            if max(ls, lt) / min(ls, lt) > 2.0:
                continue
            group = [t]
            for cand, _ in para.paraphrase([t])[0]:
                if cand.lower() not in {g.lower() for g in group}:
                    group.append(cand)
            m = len(group) - 1
            picks = range(n + 1) if n <= m else [k % (m + 1) for k in range(n + 1)]
            for p in picks:
                os_.write(s + "\n")
                ot.write(group[p] + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
