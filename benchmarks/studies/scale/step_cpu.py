"""Run ``bitextforge`` with every step's ``seconds`` in the manifest counted as CPU time (user +
system) of the process and every process it started, instead of wall time, so per-step rates on
a busy machine measure work, not the share of a core the run got:

    python benchmarks/studies/scale/step_cpu.py run RECIPE --runner local --set ... -o DIR

The runner times a step with ``time.perf_counter()`` around each call; here that clock is the
CPU time of this process (all its threads: heliport's Rust pool, BLAS) plus its child processes,
live ones read from ``/proc`` (CTranslate2 decodes in worker processes) and finished ones from
``os.times()``. For that to be one step's CPU, no two steps may run at once: the local runner's
threads for steps that release the GIL (``runners/local.py``) are turned off, so every step runs
in the main thread in turn. Work left in the background (a model loading, about a second for
heliport) is counted in the steps that run meanwhile. /proc counts in clock ticks (10 ms).
Linux and the local runner only.
"""

import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
ME = os.getpid()


def _descendants_cpu() -> float:
    """CPU-seconds of the live processes below this one."""
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(rest[1])
        cpu[int(d)] = (int(rest[11]) + int(rest[12])) / TICK
    total = 0.0
    for pid in cpu:
        p = parent.get(pid)
        while p and p != ME:
            p = parent.get(p)
        if p == ME and pid != ME:
            total += cpu[pid]
    return total


def tree_cpu() -> float:
    """CPU-seconds of this process, its finished children and its live descendants."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system + _descendants_cpu()


time.perf_counter = tree_cpu  # before bitextforge binds anything

from bitextforge.cli.main import main  # noqa: E402
from bitextforge.pipeline.runners import local  # noqa: E402

local.ahead = lambda stream, depth, name: stream  # one step at a time, all in this thread

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
