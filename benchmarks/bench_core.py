"""Core benchmark: 1,000,000 real lines (Multi30k de-en train repeated)
through length + length_ratio + dedupe, the example plugin's paraphraser and distributed.v1, timed
as whole processes against a hand-written single-pass loop doing the same work, plus peak RSS at
1M lines against the same recipe at 100k lines.

Run from the repository root:  .venv/bin/python tests/bench/bench_core.py [--runs 3]
It needs ../shared/data/multi30k (or $BITEXTFORGE_SHARED_DATA/multi30k) and installs the example
plugin into a temporary directory.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("BITEXTFORGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
DATA = SHARED / "multi30k"
#: corpora and outputs; BENCH_CORE_WORK gives a benchmark of its own a directory of its own
WORK = Path(os.environ.get("BENCH_CORE_WORK", "/tmp/bitextforge-bench"))


def make_corpus(lines: int, work: Path = WORK) -> tuple[Path, Path]:
    """Write ``lines`` lines of Multi30k train (de, en), repeated, into ``work``."""
    de = gzip.open(DATA / "train.de.gz", "rt", encoding="utf-8").read().splitlines()
    en = gzip.open(DATA / "train.en.gz", "rt", encoding="utf-8").read().splitlines()
    work.mkdir(parents=True, exist_ok=True)
    s, t = work / f"train{lines}.de", work / f"train{lines}.en"
    if not s.exists():
        with open(s, "w", encoding="utf-8") as fs, open(t, "w", encoding="utf-8") as ft:
            for i in range(lines):
                fs.write(de[i % len(de)] + "\n")
                ft.write(en[i % len(en)] + "\n")
    return s, t


def timed(cmd: list[str], env: dict) -> tuple[float, int]:
    """Wall seconds and peak RSS (kB) of one whole command, from GNU time."""
    res = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], env=env, capture_output=True,
                         text=True)
    if res.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{res.stderr}")
    wall, rss = res.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lines", type=int, default=1_000_000)
    args = ap.parse_args()
    if not DATA.exists():
        sys.exit(f"needs {DATA}")
    if not Path("/usr/bin/time").exists():
        sys.exit("needs GNU time (/usr/bin/time; Debian package 'time')")
    plug = Path(tempfile.mkdtemp(prefix="bench-plugin-"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(plug), str(ROOT / "docs" / "example-plugin")], check=True)
    env = dict(os.environ, PYTHONPATH=str(plug))
    big = make_corpus(args.lines)
    small = make_corpus(args.lines // 10)
    recipe = ROOT / "tests" / "bench" / "core_recipe.yaml"
    bfx = [sys.executable, "-m", "bitextforge.cli", "run", str(recipe), "-q"]

    def framework(src, tgt, out):
        return bfx + ["--set", f"input.src={src}", "--set", f"input.tgt={tgt}", "-o", str(out)]

    hand = [sys.executable, str(ROOT / "tests" / "bench" / "handloop.py")]
    f_times, h_times, ratios, f_rss = [], [], [], []
    for _ in range(args.runs):
        fw, fr = timed(framework(*big, WORK / "out-fw"), env)
        hw, _ = timed(hand + [str(big[0]), str(big[1]), str(WORK / "out-hand")], env)
        f_times.append(fw)
        h_times.append(hw)
        ratios.append(fw / hw)
        f_rss.append(fr)
    same = all((WORK / "out-fw" / n).read_bytes() == (WORK / "out-hand" / n).read_bytes()
               for n in ("corpus.src", "corpus.tgt"))
    _, small_rss = timed(framework(*small, WORK / "out-small"), env)
    rows_out = sum(1 for _ in open(WORK / "out-fw" / "corpus.src", encoding="utf-8"))
    print(f"lines: {args.lines}, rows out: {rows_out}, outputs identical to the hand loop: {same}")
    print(f"bitextforge wall s: median {statistics.median(f_times):.2f} (runs {f_times})")
    print(f"hand loop wall s:   median {statistics.median(h_times):.2f} (runs {h_times})")
    print(f"ratio bitextforge/hand, pair by pair: median {statistics.median(ratios):.2f} "
          f"(runs {[round(r, 2) for r in ratios]})")
    print(f"peak RSS MB: {args.lines} lines {statistics.median(f_rss) / 1024:.0f}, "
          f"{args.lines // 10} lines {small_rss / 1024:.0f}, difference "
          f"{(statistics.median(f_rss) - small_rss) / 1024:.0f}")


if __name__ == "__main__":
    main()
