"""Where the test suite's CPU goes: a pytest plugin that writes, for every test, the CPU seconds
of the test's process and of the child processes it waited for, and its wall time; and a report
of those records by file and by test.

    PYTHONPATH=benchmarks/studies/core-speed SUITE_CPU_OUT=/tmp/suite-cpu \\
        make test PYTEST_ARGS='-p suite_cpu'
    .venv/bin/python benchmarks/studies/core-speed/suite_cpu.py /tmp/suite-cpu

Processes a test did not wait for (a Ray cluster's workers, a run killed on purpose) are not
counted; setup and teardown of a test's fixtures are.
"""

from __future__ import annotations

import collections
import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Time one test: setup, call and teardown."""
    own0, kids0 = _cpu()
    t0 = time.monotonic()
    yield
    own1, kids1 = _cpu()
    out = Path(os.environ.get("SUITE_CPU_OUT", "suite-cpu"))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{os.getpid()}.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": item.nodeid, "self": own1 - own0, "children": kids1 - kids0,
                             "wall": time.monotonic() - t0}) + "\n")


def report(folder: Path, top: int = 30) -> str:
    """CPU seconds by file and the ``top`` tests, from the records in ``folder``."""
    rows = [json.loads(line) for f in sorted(folder.glob("*.jsonl")) for line in open(f)]
    cpu = lambda r: r["self"] + r["children"]
    by_file = collections.Counter()
    for r in rows:
        by_file[r["id"].split("::")[0]] += cpu(r)
    lines = [f"{len(rows)} tests, {sum(map(cpu, rows)):.0f} CPU-s "
             f"({sum(r['children'] for r in rows):.0f} in waited-for children)", "", "by file:"]
    lines += [f"{v:7.1f}  {k}" for k, v in by_file.most_common(top)]
    lines += ["", "by test:"]
    lines += [f"{cpu(r):7.1f}  {r['id']}" for r in sorted(rows, key=cpu, reverse=True)[:top]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1])))
