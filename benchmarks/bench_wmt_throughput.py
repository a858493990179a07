"""Throughput of the WMT-style filtering recipe (issue 33's goal: at least 200 pairs/s on 2 cores,
as a whole command on 100k pairs), with pairs/s per step and per pair-classifier feature.

The input is ``--lines`` distinct de-en pairs of the shared training pool, taken from its sets in
turn (news commentary, newstest 2008-2013, Europarl, Tatoeba, the OPUS-100 sample, the WMT mixed
sample, IWSLT, LibreOffice help) so that short and long, clean and noisy lines are mixed as in a
crawl, with no pair repeated (a repeated line could be answered from a cache). The recipe's models
are made first by its ``prepare:`` (not timed; skipped when they exist). Then
``bitextforge run benchmarks/studies/wmt-filter-design/recipes/wmt-filter-deen.yaml`` runs ``--runs`` times on that input as a whole
command, each into a fresh output directory, with the word budget scaled to the input
(``--words``). The figures: the whole command's wall time (median of the runs) and pairs/s over
it, then from the last run's manifest each step's pairs/s over the rows it saw, and the pair
classifier's ``feature_cost`` (seconds and pairs/s of each feature).

    python benchmarks/bench_wmt_throughput.py                 # 100,000 pairs, 3 runs
    python benchmarks/bench_wmt_throughput.py --lines 20000 --runs 1
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, fail, machine_line, runs_text, shared_data, timed  # noqa: E402

#: the pool sets the input draws from in turn (file under deen-train-pool)
POOL = ("news-commentary-v11-deen-20k/train.de-en.tsv.gz",
        "wmt-newstest-2008-2013-deen/train.de-en.tsv.gz",
        "europarl-v7-deen-first20k/train.de-en.tsv.gz",
        "tatoeba-anki-deu-eng-2018-05/train.de-en.tsv.gz",
        "opus100-deen-sample-8k/train.de-en.tsv.gz",
        "wmt-mixed-sample-opennmt-10k/train.de-en.tsv.gz",
        "iwslt14-deen-ted-lc-tok-valid-test/train.de-en.tsv.gz",
        "libreoffice-7.4-help-ui-deen/help.train.de-en.tsv.gz")
RECIPE = ROOT / "benchmarks/studies/wmt-filter-design/recipes/wmt-filter-deen.yaml"


def pool_input(lines: int, path: Path) -> Path:
    """``path``: ``lines`` distinct de<TAB>en pairs, one from each pool set in turn (a set that
    runs out drops out of the turn). Written once."""
    if path.exists():
        return path
    pool = shared_data("deen-train-pool")
    sets = []
    for name in POOL:
        with gzip.open(pool / name, "rt", encoding="utf-8") as fh:
            sets.append(iter([ln.rstrip("\n").split("\t")[:2] for ln in fh if "\t" in ln]))
    seen, out = set(), []
    while len(out) < lines and sets:
        for it in list(sets):
            for pair in it:
                key = tuple(pair)
                if key not in seen and all(pair):
                    seen.add(key)
                    out.append(pair)
                    break
            else:
                sets.remove(it)
            if len(out) == lines:
                break
    if len(out) < lines:
        raise fail(f"the pool holds only {len(out):,} distinct pairs; ask for --lines {len(out)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(f"{a}\t{b}\n" for a, b in out), encoding="utf-8")
    tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    """Prepare the models, time the whole command, print pairs/s overall, per step, per feature."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--words", type=int, default=None,
                    help="the kept word budget (default: the recipe's 60,000 per 8,297 pairs, "
                         "scaled to --lines)")
    ap.add_argument("--work", default="runs/bench-wmt-throughput")
    args = ap.parse_args(argv)
    work = ROOT / args.work
    bf = str(Path(sys.executable).with_name("bitextforge"))
    words = args.words or round(60_000 * args.lines / 8_297)
    inp = pool_input(args.lines, work / f"pool{args.lines}.de-en.tsv")
    print(machine_line(), flush=True)
    print(f"input: {inp} ({args.lines:,} distinct pairs); keep.words={words:,}", flush=True)
    prep = timed([bf, "prepare", str(RECIPE)])
    print(f"prepare (models made or found): {prep.wall:.1f} s", flush=True)
    walls, last = [], None
    for r in range(args.runs):
        out = work / f"run{r + 1}"
        shutil.rmtree(out, ignore_errors=True)
        t = timed([bf, "run", str(RECIPE), "-q", "--set", "prepare=[]",
                   "--set", f"input.path={inp}", "--set", f"steps[4].keep.words={words}",
                   "-o", str(out)])
        walls.append(t.wall)
        last = out
        print(f"run {r + 1}: {t.wall:.1f} s wall, {t.cpu:.1f} s CPU, peak RSS {t.rss_mb:.0f} MB, "
              f"{args.lines / t.wall:.0f} pairs/s", flush=True)
    med = statistics.median(walls)
    print(f"whole command: {runs_text(walls, 1)} s -> {args.lines / med:.0f} pairs/s "
          f"(goal 200)")
    manifest = json.loads((last / "manifest.json").read_text(encoding="utf-8"))
    print(f"last run's manifest: {manifest['seconds']:.1f} s inside the run")
    print("| step | rows in | seconds | pairs/s |\n|---|---|---|---|")
    for s in manifest["steps"]:
        rate = s["rows_in"] / s["seconds"] if s["seconds"] else float("inf")
        print(f"| steps[{s['index']}] {s['component']} | {s['rows_in']:,} | {s['seconds']:.1f} "
              f"| {rate:,.0f} |")
        cost = (s.get("info") or {}).get("feature_cost")
        for name, c in (cost or {}).items():
            print(f"|   feature {name} | {s['info']['pairs_scored']:,} | {c['seconds']:.1f} "
                  f"| {c['pairs_per_second'] or float('inf'):,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
