"""Core benchmark: 1,000,000 real lines (Multi30k de-en train repeated)
through length + length_ratio + dedupe, the example plugin's paraphraser and distributed.v1, timed
as whole processes against a hand-written single-pass loop doing the same work, plus peak RSS at
1M lines against the same recipe at 100k lines.

Run from the repository root:  make bench core ARGS='--runs 3'
(or .venv/bin/python benchmarks/bench_core.py --runs 3). It needs $BITEXTFORGE_SHARED_DATA/multi30k
and installs the example plugin into a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import BENCH, ROOT, multi30k_corpus, runs_text, timed

#: corpora and outputs; BENCH_CORE_WORK gives a benchmark of its own a directory of its own
WORK = Path(os.environ.get("BENCH_CORE_WORK", "/tmp/bitextforge-bench"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lines", type=int, default=1_000_000)
    args = ap.parse_args()
    big = multi30k_corpus(args.lines, WORK)
    small = multi30k_corpus(args.lines // 10, WORK)
    plug = Path(tempfile.mkdtemp(prefix="bench-plugin-"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(plug),
                    str(ROOT / "docs" / "example-plugin")], check=True)
    env = dict(os.environ, PYTHONPATH=str(plug))
    recipe = BENCH / "core_recipe.yaml"
    bfx = [sys.executable, "-m", "bitextforge.cli", "run", str(recipe), "-q"]

    def framework(src, tgt, out):
        return bfx + ["--set", f"input.src={src}", "--set", f"input.tgt={tgt}", "-o", str(out)]

    hand = [sys.executable, str(BENCH / "handloop.py")]
    f_times, h_times, ratios, f_rss = [], [], [], []
    for _ in range(args.runs):
        run = timed(framework(*big, WORK / "out-fw"), env)
        fw, fr = run.wall, run.rss_mb
        hw = timed(hand + [str(big[0]), str(big[1]), str(WORK / "out-hand")], env).wall
        f_times.append(fw)
        h_times.append(hw)
        ratios.append(fw / hw)
        f_rss.append(fr)
    same = all((WORK / "out-fw" / n).read_bytes() == (WORK / "out-hand" / n).read_bytes()
               for n in ("corpus.src", "corpus.tgt"))
    small_rss = timed(framework(*small, WORK / "out-small"), env).rss_mb
    rows_out = sum(1 for _ in open(WORK / "out-fw" / "corpus.src", encoding="utf-8"))
    print(f"lines: {args.lines}, rows out: {rows_out}, outputs identical to the hand loop: {same}")
    print(f"bitextforge wall s: {runs_text(f_times)}")
    print(f"hand loop wall s:   {runs_text(h_times)}")
    print(f"ratio bitextforge/hand, pair by pair: median {statistics.median(ratios):.2f} "
          f"(runs {[round(r, 2) for r in ratios]})")
    print(f"peak RSS MB: {args.lines} lines {statistics.median(f_rss):.0f}, "
          f"{args.lines // 10} lines {small_rss:.0f}, difference "
          f"{statistics.median(f_rss) - small_rss:.0f}")


if __name__ == "__main__":
    main()
