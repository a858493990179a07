"""bitextforge's cleaners against bifixer where they overlap (issue #34, item 3): the mixed de-en
rows of bench_hardrules through

- **bifixer 0.8.12** with only the fixes bitextforge also makes: characters (mojibake, ftfy),
  normalization (punctuation, spaces) and HTML; its empty/long/orthography/detokenization/
  duplicate/segmentation steps off;
- **bitextforge** ``fix_mojibake.v1``, ``html.v1``, ``unicode.v1``, ``moses_punctuation.v1``
  (de, en), in one recipe.

Counts the rows each changed, the rows both changed the same way, and groups the differences by
what differs (bitextforge's text -> bifixer's), with examples. Both commands are timed as whole
commands (/usr/bin/time -v), one process each, as both run by default.

Set-up (a venv of its own: bifixer brings ftfy, nltk and pytest, which the OpusFilter and
bicleaner-hardrules venv of bench_hardrules should not change):
    python3 -m venv /work/bifixvenv && /work/bifixvenv/bin/pip install bifixer==0.8.12
Run from the repository root:
    BITEXTFORGE_SHARED_DATA=/work/shared/data .venv/bin/python benchmarks/bench_bifixer.py \\
        --lines 100000
"""

from __future__ import annotations

import argparse
import collections
import difflib
import json
import os
import sys
from pathlib import Path

import bench_hardrules as bh  # the mixed input (a sibling script: its folder is on sys.path)
import bench_opusfilter as bo  # the timer

BIFIXER = Path(os.environ.get("BIFIXER_VENV", "/work/bifixvenv")) / "bin" / "bifixer"
BIFIXER_FLAGS = ["--scol", "1", "--tcol", "2", "--ignore_empty", "--ignore_long",
                 "--ignore_orthography", "--ignore_detokenization", "--ignore_duplicates",
                 "--ignore_segmentation", "-q"]


def recipe(s: Path, t: Path, out: Path) -> Path:
    """The four cleaners that overlap bifixer's fixes, nothing else."""
    path = bh.WORK / "bf-clean.yaml"
    path.write_text(f"""name: bench-bifixer
input: {{src: '{s}', tgt: '{t}'}}
steps:
  - clean: fix_mojibake.v1
  - clean: html.v1
  - clean: unicode.v1
  - clean: moses_punctuation.v1
    with: {{src_lang: de, tgt_lang: en}}
output: {{dir: '{out}', formats: [plain], report: false}}
progress: false
""", encoding="utf-8")
    return path


def _edits(a: str, b: str) -> str:
    """The first two differing pieces of a and b, as 'a-piece'->'b-piece'."""
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return " | ".join(f"{a[i1:i2]!r}->{b[j1:j2]!r}" for op, i1, i2, j1, j2 in ops
                      if op != "equal")[:120]


def compare(s: Path, t: Path, bif: Path, out: Path) -> dict:
    """Rows changed by each, the same by both, and the differences by kind with examples."""
    src = s.read_text(encoding="utf-8").split("\n")
    tgt = t.read_text(encoding="utf-8").split("\n")
    ours_s = (out / "corpus.src").read_text(encoding="utf-8").split("\n")
    ours_t = (out / "corpus.tgt").read_text(encoding="utf-8").split("\n")
    counts: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    examples: dict = {}
    with open(bif, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            theirs = line.rstrip("\n").split("\t")
            if len(theirs) != 2:  # a tab inside a sentence: bifixer reads it as a column
                counts["not comparable (tab inside a side)"] += 1
                continue
            orig, ours = [src[i], tgt[i]], [ours_s[i], ours_t[i]]
            if theirs == orig and ours == orig:
                continue
            key = ("changed by both, the same" if theirs == ours else
                   "changed by both, differently") if theirs != orig and ours != orig else \
                ("changed by bifixer only" if theirs != orig else "changed by bitextforge only")
            counts[key] += 1
            for side in (0, 1):
                if theirs[side] != ours[side]:
                    kind = _edits(ours[side], theirs[side])
                    kinds[kind] += 1
                    examples.setdefault(kind, {"row": i, "side": ("src", "tgt")[side],
                                               "input": orig[side], "bitextforge": ours[side],
                                               "bifixer": theirs[side]})
    return {"rows": i + 1, "counts": dict(counts),
            "differences (bitextforge -> bifixer), most frequent": [
                {"count": n, "edit": k, "example": examples[k]} for k, n in kinds.most_common(15)]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    bh.WORK.mkdir(parents=True, exist_ok=True)
    s, t, tsv = bh.inputs(args.lines)
    out, bif = bh.WORK / "bf-clean", bh.WORK / "bifixer.out"
    timing = {"bifixer": bo.timed([str(BIFIXER), *BIFIXER_FLAGS, str(tsv), str(bif), "de", "en"]),
              "bitextforge": bo.timed([str(bh.BITEXTFORGE), "run", "--force",
                                       str(recipe(s, t, out))])}
    r = {name: {"wall_s": round(t.wall, 2), "cpu_s": round(t.cpu, 2),
                "max_rss_mb": round(t.rss_mb, 1)} for name, t in timing.items()}
    r["load_after"] = os.getloadavg()
    r["comparison"] = compare(s, t, bif, out)
    print(json.dumps(r, indent=2, ensure_ascii=False))
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
