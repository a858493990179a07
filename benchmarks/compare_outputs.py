"""Compare the run outputs of two trees byte for byte: every directory under BEFORE that holds a
``manifest.json`` (a finished run) is matched with the same relative directory under AFTER, and
its corpus files (``corpus.*``), ``rejected.tsv`` and score files must be identical. Manifests,
timings and reports are not compared (they hold times and paths).

Used to show that a refactoring changed no output: run the test suite with
``--basetemp=BEFORE`` on the old code and ``--basetemp=AFTER`` on the new one (pytest names each
test's directory after the test), and the benchmark recipe into two directories.

Usage: python benchmarks/compare_outputs.py BEFORE AFTER
Exit status 0 when every common run is identical, 1 otherwise.
"""

from __future__ import annotations

import argparse
import filecmp
import sys
from pathlib import Path

COMPARED = ("corpus.src", "corpus.tgt", "corpus.tsv", "corpus.jsonl", "corpus.weights",
            "rejected.tsv")


def runs(root: Path) -> set[Path]:
    """Relative directories under ``root`` holding a finished run."""
    return {m.parent.relative_to(root) for m in root.rglob("manifest.json")}


def compare(before: Path, after: Path) -> tuple[int, int, list[str]]:
    """``(runs compared, files compared, problems)``."""
    problems: list[str] = []
    common = sorted(runs(before) & runs(after))
    files = 0
    for rel in common:
        a, b = before / rel, after / rel
        names = {p.name for p in a.iterdir() if p.name in COMPARED or p.suffix == ".scores"}
        names |= {p.name for p in b.iterdir() if p.name in COMPARED or p.suffix == ".scores"}
        for name in sorted(names):
            fa, fb = a / name, b / name
            if not fa.exists() or not fb.exists():
                problems.append(f"{rel}/{name}: only in {'after' if fb.exists() else 'before'}")
                continue
            files += 1
            if not filecmp.cmp(fa, fb, shallow=False):
                problems.append(f"{rel}/{name}: differs")
    for rel in sorted(runs(before) - runs(after)):
        problems.append(f"{rel}: run only in before")
    return len(common), files, problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    args = ap.parse_args()
    n, files, problems = compare(args.before, args.after)
    for p in problems:
        print(p)
    print(f"{n} runs, {files} files compared, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
