"""Core benchmark of two versions of the code, interleaved: the benchmark recipe
(benchmarks/core_recipe.yaml) run by the OLD code, by this checkout, and the hand-written loop, in
turn, N times, so all three see the same machine load. Used to show that a refactoring did not slow
the framework down; it also checks that both versions wrote the same corpus.

OLD is a directory holding an importable ``bitextforge`` package of the old code (e.g. ``core/``
of an exported commit copied to OLD/bitextforge, with ``plugins/`` as OLD/bitextforge/plugins), or
the Python of a venv in which the old checkout is installed (e.g. /tmp/old/.venv/bin/python): the
old runs then use that interpreter.
Run bench_core.py first: it writes the 1M-line corpus and installs the example plugin.

Usage: python benchmarks/bench_core_ab.py OLD PLUGIN_DIR [--runs 5] [--lines 1000000]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import sys
from pathlib import Path

from _common import BENCH, machine_line, timed
from bench_core import WORK  # bench_core.py writes the corpus there


def timed_run(cmd: list[str], pythonpath: list[str], cpu: list[float]) -> float:
    """Wall seconds of one whole command; its user + system CPU seconds are appended to ``cpu``
    (on a loaded machine they move less than wall time)."""
    run = timed(cmd, dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath)))
    cpu.append(round(run.cpu, 2))
    return round(run.wall, 2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("plugin", type=Path, help="directory the example plugin is installed in")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lines", type=int, default=1_000_000)
    args = ap.parse_args()
    src, tgt = WORK / f"train{args.lines}.de", WORK / f"train{args.lines}.en"
    recipe = BENCH / "core_recipe.yaml"

    old_python = args.old.is_file()

    def framework(out: str, python: str = sys.executable) -> list[str]:
        return [python, "-m", "bitextforge.cli", "run", str(recipe), "-q", "--set",
                f"input.src={src}", "--set", f"input.tgt={tgt}", "-o", str(WORK / out)]

    times: dict[str, list[float]] = {"old": [], "new": [], "hand": []}
    cpu: dict[str, list[float]] = {"old": [], "new": [], "hand": []}
    for _ in range(args.runs):
        if old_python:
            times["old"].append(timed_run(framework("ab-old", str(args.old)),
                                          [str(args.plugin)], cpu["old"]))
        else:
            times["old"].append(timed_run(framework("ab-old"), [str(args.plugin), str(args.old)],
                                          cpu["old"]))
        times["new"].append(timed_run(framework("ab-new"), [str(args.plugin)], cpu["new"]))
        times["hand"].append(timed_run([sys.executable, str(BENCH / "handloop.py"),
                                        str(src), str(tgt), str(WORK / "ab-hand")],
                                       [str(args.plugin)], cpu["hand"]))
    print(machine_line())
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:4} wall s: median {med[k]:.2f} (runs {v}); CPU s: median "
              f"{statistics.median(cpu[k]):.2f} (runs {cpu[k]})")
    print(f"ratio to the hand loop: old {med['old'] / med['hand']:.2f}, new "
          f"{med['new'] / med['hand']:.2f}; new/old run by run "
          f"{[round(n / o, 2) for n, o in zip(times['new'], times['old'])]}")
    print(f"new/old CPU run by run {[round(n / o, 2) for n, o in zip(cpu['new'], cpu['old'])]}")
    same = all(filecmp.cmp(WORK / "ab-old" / n, WORK / "ab-new" / n, shallow=False)
               for n in ("corpus.src", "corpus.tgt"))
    print(f"old and new outputs identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
