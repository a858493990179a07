"""Ray runner benchmark: throughput of a model-bound recipe (embedding_cosine.v1, the
packaged all-MiniLM-L6-v2 comparing src with tgt of real Multi30k de-en pairs) under the local
runner and under the Ray runner with 2 actors, side by side in one invocation (runs interleaved,
median of ``--runs``), each run a whole ``bitextforge run`` process.

``--shard-size N`` makes both runs sharded and resumable (``output.shard_size``): the Ray runner
keeps its actors, and their models, from shard to shard, so a shard costs about what the same
rows cost unsharded. ``--old DIR`` adds Ray runs of another version of the code, interleaved
with the others: DIR holds its importable ``bitextforge`` package (``core/`` of an exported commit
as DIR/bitextforge, with ``plugins/`` as DIR/bitextforge/plugins), put first on PYTHONPATH.

``--recipe rules`` times the rules-only recipe instead (dedupe, length, length ratio and
``hardrules.v1``, all cheap, the Ray steps at ``num_cpus: 0.5``) on distinct pairs of the shared
de-en training pool (``bench_wmt_throughput.pool_input``; up to about 150k), where Ray's fixed
and per-batch costs show. ``--per-shard N`` adds runs sharded at N rows to the one-pass runs of
each runner, and reports each runner's cost per extra shard: (sharded wall - one-pass wall) /
(shards - 1), medians of the runs.

Run from the repository root:
    nice -n 10 .venv/bin/python benchmarks/bench_ray.py --lines 400 --batch 50 --runs 3
    nice -n 5 .venv/bin/python benchmarks/bench_ray.py --recipe rules --lines 100000 \
        --batch 1000 --runs 3 --per-shard 10000
It needs $BITEXTFORGE_SHARED_DATA/multi30k (or deen-train-pool for ``rules``); results go to
docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, machine_line, shared_data

WORK = Path("/tmp/bitextforge-bench-ray")

RECIPE = """\
name: bench-ray
input: {{src: '{src}', tgt: '{tgt}'}}
output: {{dir: '{out}', formats: [tsv], report: false{shards}}}
progress: false
batch_size: {batch}
steps:
  - filter: embedding_cosine.v1
    with: {{columns: [src, tgt]}}
    keep: {{min: -1}}
    cache: false
    resources: {{num_cpus: 0.5, concurrency: 2}}
"""


RULES = """\
name: bench-ray-rules
input: {{path: '{src}', format: tsv, columns: [src, tgt]}}
output: {{dir: '{out}', formats: [tsv], report: false{shards}}}
progress: false
batch_size: {batch}
steps:
  - filter: dedupe.v1
  - filter: length.v1
    with: {{combine: shorter}}
    keep: {{min: 1}}
    as: shorter_len
    resources: {{num_cpus: 0.5, concurrency: 2}}
  - filter: length.v1
    with: {{combine: longer}}
    keep: {{max: 80}}
    as: longer_len
    resources: {{num_cpus: 0.5, concurrency: 2}}
  - filter: length_ratio.v1
    with: {{unit: chars}}
    keep: {{max: 2.5}}
    resources: {{num_cpus: 0.5, concurrency: 2}}
  - filter: hardrules.v1
    with: {{src_lang: de, tgt_lang: en}}
    resources: {{num_cpus: 0.5, concurrency: 2}}
"""


def make_input(lines: int) -> tuple[Path, Path]:
    """The first ``lines`` pairs of Multi30k train (de, en), as plain files under WORK."""
    WORK.mkdir(parents=True, exist_ok=True)
    s, t = WORK / f"m30k{lines}.de", WORK / f"m30k{lines}.en"
    for lang, path in (("de", s), ("en", t)):
        with gzip.open(shared_data("multi30k", f"train.{lang}.gz"), "rt", encoding="utf-8") as fh:
            rows = [next(fh) for _ in range(lines)]
        path.write_text("".join(rows), encoding="utf-8")
    return s, t


def run_once(recipe: Path, runner: str, out: Path,
             old: str | None = None) -> tuple[float, float, int]:
    """Wall seconds of the whole process, the manifest's run seconds, and rows written (``old``:
    the code of that package directory)."""
    shutil.rmtree(out, ignore_errors=True)  # a fresh directory: no shard of an earlier run resumes
    env = dict(os.environ)
    if old:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [old, env.get("PYTHONPATH")]))
    t0 = time.perf_counter()
    subprocess.run([str(ROOT / ".venv" / "bin" / "bitextforge"), "run", str(recipe), "-q",
                    "--runner", runner, "-o", str(out)], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    m = json.loads((out / "manifest.json").read_text())
    return wall, m["seconds"], m["output"]["rows"]


def main() -> int:
    """Interleave local and Ray runs; print medians and rows per second."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=250)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shard-size", type=int, default=None,
                    help="rows per shard (output.shard_size); default: one pass")
    ap.add_argument("--old", help="also Ray runs of the bitextforge package in this directory")
    ap.add_argument("--recipe", choices=["embedding", "rules"], default="embedding")
    ap.add_argument("--per-shard", type=int, default=None,
                    help="also runs sharded at this many rows; report the cost of a shard")
    a = ap.parse_args()
    recipes = {}
    for tag, size in (("", a.shard_size), ("sharded", a.per_shard)):
        if tag and not size:
            continue
        shards = f", shard_size: {size}" if size else ""
        recipe = WORK / f"bench_ray_{a.recipe}{tag}.yaml"
        if a.recipe == "rules":
            from bench_wmt_throughput import pool_input

            src = pool_input(a.lines, WORK / f"pool{a.lines}.de-en.tsv")
            recipe.write_text(RULES.format(src=src, out=WORK / "out", batch=a.batch,
                                           shards=shards))
        else:
            s, t = make_input(a.lines)
            recipe.write_text(RECIPE.format(src=s, tgt=t, out=WORK / "out", batch=a.batch,
                                            shards=shards))
        recipes[tag] = recipe
    labels = ["local", "ray", *(["ray (old code)"] if a.old else [])]
    res: dict[str, list] = {f"{label}{' sharded' if tag else ''}": []
                            for tag in recipes for label in labels}
    for i in range(a.runs):
        for label in res:
            runner = label.split()[0]
            recipe = recipes["sharded" if "sharded" in label else ""]
            out = WORK / f"out-{label.replace(' ', '-').replace('(', '').replace(')', '')}-{i}"
            res[label].append(run_once(recipe, runner, out, a.old if "old" in label else None))
            print(label, i, res[label][-1], flush=True)
    same = (WORK / "out-local-0" / "corpus.tsv").read_bytes() == \
        (WORK / "out-ray-0" / "corpus.tsv").read_bytes()
    print(f"\nrecipe={a.recipe} lines={a.lines} batch={a.batch} shard_size={a.shard_size} "
          f"per_shard={a.per_shard} runs={a.runs} identical_output={same}")
    print(machine_line())
    print("| runner | median wall s (process) | median run s (manifest) | rows/s (run) |")
    print("|---|---|---|---|")
    med = {}
    for runner, rows in res.items():
        wall = med[runner] = statistics.median(r[0] for r in rows)
        run = statistics.median(r[1] for r in rows)
        print(f"| {runner} | {wall:.1f} | {run:.1f} | {a.lines / run:.0f} |")
    if a.per_shard:
        n = -(-a.lines // a.per_shard)
        for label in labels:
            extra = (med[f"{label} sharded"] - med[label]) / max(n - 1, 1)
            print(f"{label}: {n} shards of {a.per_shard:,}: {extra:+.2f} s a shard beyond the "
                  f"first (median walls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
