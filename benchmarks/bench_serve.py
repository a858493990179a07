"""Benchmark of ``bitextforge serve`` at 1,000,000 rows: a real run of the de-en training pool
(every set of $BITEXTFORGE_SHARED_DATA/deen-train-pool, repeated to 1M pairs) through length,
length_ratio, language_id (heliport) and a ``top`` selection, then the server started as a user
starts it and its re-decision endpoint timed over HTTP while a threshold moves, with the server's
memory.

Run from the repository root:  .venv/bin/python benchmarks/bench_serve.py [--moves 21]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from _common import ROOT, cycled, shared_data, write_columns

WORK = Path("/tmp/bitextforge-bench-serve")
RECIPE = """name: serve-bench
input: {{src: {src}, tgt: {tgt}}}
steps:
  - filter: length.v1
    with: {{combine: shorter}}
    keep: {{min: 1}}
    as: shorter_len
  - filter: length.v1
    with: {{combine: longer}}
    keep: {{max: 60}}
    as: longer_len
  - filter: length_ratio.v1
    with: {{unit: chars}}
    keep: {{max: 2.0}}
  - filter: language_id.v1
    with: {{src_lang: de, tgt_lang: en}}
    keep: {{min: -0.5}}
  - filter: length_ratio.v1
    with: {{unit: tokens}}
    keep: {{top: 0.9, order: lowest}}
    as: token_ratio
output: {{dir: {out}}}
progress: false
"""


def make_corpus(rows: int) -> tuple[Path, Path]:
    """``rows`` de-en pairs from every training set of the pool, repeated."""
    s, t = WORK / f"pool{rows}.de", WORK / f"pool{rows}.en"
    if s.exists() and t.exists():
        return s, t
    pool = shared_data("deen-train-pool")
    pairs = []
    for f in sorted(pool.glob("*/train.de-en.tsv.gz")) + sorted(
            pool.glob("*/help.train.de-en.tsv.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 2:
                    pairs.append(parts)
    write_columns(cycled(pairs, rows), (s, t))
    return s, t


def rss_mb(pid: int) -> float:
    """The current RSS of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    """Run the recipe once (kept in WORK), start the server and move every bound."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--moves", type=int, default=21)
    args = ap.parse_args()
    s, t = make_corpus(args.rows)
    out = WORK / f"run{args.rows}"
    recipe = WORK / "serve-bench.yaml"
    recipe.write_text(RECIPE.format(src=s, tgt=t, out=out))
    bf = [sys.executable, "-m", "bitextforge.cli"]
    if not (out / "manifest.json").exists():
        t0 = time.perf_counter()
        subprocess.run([*bf, "run", str(recipe), "-q"], check=True, cwd=ROOT)
        print(f"run: {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    proc = subprocess.Popen([*bf, "serve", str(out), "--port", "0", "--no-save"],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        load = time.perf_counter() - t0
        url = line.split(" at ", 1)[1].split()[0]
        print(line.strip())
        print(f"start-up (load {args.rows:,} rows, bind): {load:.1f} s; RSS after load "
              f"{rss_mb(proc.pid):.0f} MB")

        def get(path: str, keep: dict, **extra) -> tuple[float, dict]:
            q = urllib.parse.urlencode({"keep": json.dumps(keep), **extra})
            t1 = time.perf_counter()
            with urllib.request.urlopen(f"{url}{path}?{q}", timeout=120) as resp:
                body = json.load(resp)
            return time.perf_counter() - t1, body

        get("api/decide", {})  # first request: histogram edges, word counts are cached after it
        for label, step, name, values in (
                ("length_ratio max (steps[2])", "2", "max", [1.3 + 0.05 * i for i in range(args.moves)]),
                ("language_id min (steps[3])", "3", "min", [-1.0 + 0.06 * i for i in range(args.moves)]),
                ("top fraction (steps[4])", "4", "top", [0.5 + 0.02 * i for i in range(args.moves)])):
            wall, server = [], []
            kept = []
            for v in values:
                keep = {step: {name: round(v, 4)}}
                if step == "4":
                    keep[step]["order"] = "lowest"
                secs, body = get("api/decide", keep)
                wall.append(secs)
                server.append(body["ms"] / 1000)
                kept.append(body["kept"])
            print(f"{label}: {args.moves} moves, HTTP round trip median "
                  f"{statistics.median(wall) * 1000:.0f} ms (min {min(wall) * 1000:.0f}, max "
                  f"{max(wall) * 1000:.0f}); re-decision alone median "
                  f"{statistics.median(server) * 1000:.0f} ms; kept {min(kept):,}-{max(kept):,}")
        secs, body = get("api/rows", {"2": {"max": 1.5}}, step=2, side="kept")
        print(f"one page of rows nearest the bound: {secs * 1000:.0f} ms")
        print(f"RSS after the moves: {rss_mb(proc.pid):.0f} MB")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
