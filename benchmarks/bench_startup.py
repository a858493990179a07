"""Start-up benchmark, old code against new side by side: ``bitextforge --version``, ``--help`` and
a tiny run (200 rows through length.v1 + length_ratio.v1 + dedupe.v1), each a whole process, with
bytecode caching allowed and with ``PYTHONDONTWRITEBYTECODE=1`` (every source compiled in every
process, as in this project's environment). Rounds alternate old and new; the medians of wall and
user + system CPU seconds are printed with new / old pair by pair.

Bytecode goes to a cache directory of this benchmark's own (``PYTHONPYCACHEPREFIX``), so neither
checkout is written to; one warm-up run per version fills it before the timed rounds. Without
bytecode, the cache holds the installed libraries' bytecode (as pip leaves it next to them) but not
the two checkouts' (``PYTHONDONTWRITEBYTECODE`` only stops writing: a cache that exists is read).

Run from the repository root (about a minute on a quiet 2-core machine):
    .venv/bin/python benchmarks/bench_startup.py /work/old095/.venv/bin/bitextforge --runs 7
Only some cases or modes:
    .venv/bin/python benchmarks/bench_startup.py OLD_BIN --cases run --modes bytecode
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEW = ROOT / ".venv" / "bin" / "bitextforge"
WORK = Path(os.environ.get("BENCH_STARTUP_WORK", "/tmp/bench-startup"))

RECIPE = """\
name: startup
input: {{path: {input}, columns: [src, tgt]}}
progress: false
steps:
  - filter: length.v1
    keep: {{min: 1, max: 100}}
  - filter: length_ratio.v1
    keep: {{max: 3.0}}
  - filter: dedupe.v1
output:
  dir: {out}
  formats: [plain]
  report: false
"""


def write_inputs(work: Path) -> Path:
    """The 200-row input (every tenth row repeated, so dedupe has work) and its recipe."""
    work.mkdir(parents=True, exist_ok=True)
    rows = [f"Ein Hund läuft {i % 190} .\tA dog runs {i % 190} ." for i in range(200)]
    (work / "in.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return work / "in.tsv"


def command(binary: Path, case: str, tag: str) -> list[str]:
    """The command line of one case; a run writes into its own version's directory."""
    if case == "version":
        return [str(binary), "--version"]
    if case == "help":
        return [str(binary), "--help"]
    recipe = WORK / f"r-{tag}.yaml"
    if not recipe.exists():
        recipe.write_text(RECIPE.format(input=WORK / "in.tsv", out=WORK / f"out-{tag}"),
                          encoding="utf-8")
    return [str(binary), "run", "-q", str(recipe)]


def timed(cmd: list[str], env: dict[str, str], out: Path | None) -> tuple[float, float]:
    """(wall s, user + system CPU s) of one process; a failed command stops the benchmark."""
    if out is not None:
        shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode(errors='replace')}")
    proc.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    """Parse the arguments, run the rounds, print one table per mode."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path, help="the old checkout's bin/bitextforge")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cases", nargs="+", default=["version", "help", "run"],
                    choices=["version", "help", "run"])
    ap.add_argument("--modes", nargs="+", default=["bytecode", "nobytecode"],
                    choices=["bytecode", "nobytecode"])
    args = ap.parse_args()
    write_inputs(WORK)
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cache = WORK / "pycache"
    base["PYTHONPYCACHEPREFIX"] = str(cache)
    bins = {"old": args.old, "new": NEW}
    for tag in bins:  # every module any case imports, libraries included, in the cache
        for case in ("version", "help", "run"):
            timed(command(bins[tag], case, tag), base, WORK / f"out-{tag}")
    for mode in args.modes:
        env = dict(base)
        if mode == "nobytecode":
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            # the libraries' bytecode, without the two checkouts' sources
            nocache = WORK / "pycache-libs"
            shutil.rmtree(nocache, ignore_errors=True)
            shutil.copytree(cache, nocache)
            for binary in bins.values():
                checkout = Path(os.path.abspath(binary)).parents[2]
                shutil.rmtree(nocache / checkout.relative_to("/"), ignore_errors=True)
            env["PYTHONPYCACHEPREFIX"] = str(nocache)
        print(f"## {mode} (load {os.getloadavg()[0]:.2f})")
        print("| case | old wall s | new wall s | old CPU s | new CPU s | new / old wall, pair by pair |")
        print("|---|---|---|---|---|---|")
        for case in args.cases:
            res: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
            for _ in range(args.runs):
                for tag in ("old", "new"):
                    res[tag].append(timed(command(bins[tag], case, tag), env,
                                          WORK / f"out-{tag}"))
            med = {t: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
                   for t, r in res.items()}
            pairs = ", ".join(f"{n[0] / o[0]:.2f}" for o, n in zip(res["old"], res["new"]))
            print(f"| {case} | {med['old'][0]:.3f} | {med['new'][0]:.3f} | {med['old'][1]:.3f} | "
                  f"{med['new'][1]:.3f} | median {statistics.median(n[0] / o[0] for o, n in zip(res['old'], res['new'])):.2f} ({pairs}) |")
        if "run" in args.cases:
            same = all((WORK / "out-old" / f).read_bytes() == (WORK / "out-new" / f).read_bytes()
                       for f in ("corpus.src", "corpus.tgt"))
            print(f"run outputs identical old / new: {same}")
        print()


if __name__ == "__main__":
    main()
