"""Memory and CPU of a run and every process it started (Ray's GCS, raylet and workers are the
driver's descendants), sampled every few seconds until the run ends:

    python benchmarks/studies/scale/watch_tree.py PID [--every 5] > tree.log
    python benchmarks/studies/scale/watch_tree.py --kill PID   # SIGKILL it and its descendants

Prints one line a sample (time, processes, summed PSS, the driver's RSS) and at the end the peak
summed PSS (proportional set size: pages shared between processes, such as Ray's object store,
are counted once in all), the driver's peak RSS (VmHWM) and the CPU-seconds (user + system) the
whole tree used, each process's last reading kept after it exits. /usr/bin/time reports only the
processes the driver waited for, which leaves Ray's workers out.
"""

from __future__ import annotations

import argparse
import os
import time

TICK = os.sysconf("SC_CLK_TCK")


def children() -> dict[int, int]:
    """Every process's parent."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
                out[int(d)] = int(rest[1])
            except (OSError, IndexError):
                pass
    return out


def tree(root: int) -> list[int]:
    """``root`` and its descendants."""
    parent = children()
    found, todo = [root], [root]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += kids
        todo += kids
    return found


def cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / TICK
    except (OSError, IndexError):
        return None


def pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pid", type=int)
    ap.add_argument("--every", type=float, default=5.0)
    ap.add_argument("--kill", action="store_true",
                    help="instead: SIGKILL the process and every descendant (a killed run)")
    a = ap.parse_args()
    if a.kill:
        import signal

        for p in tree(a.pid)[::-1]:  # descendants first, so none is adopted and missed
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return
    cpu: dict[int, float] = {}
    peak_pss = peak_rss = 0
    while os.path.exists(f"/proc/{a.pid}"):
        pids = tree(a.pid)
        for p in pids:
            c = cpu_seconds(p)
            if c is not None:
                cpu[p] = c
        pss = sum(pss_kb(p) for p in pids)
        rss = status_kb(a.pid, "VmHWM")
        peak_pss, peak_rss = max(peak_pss, pss), max(peak_rss, rss)
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} processes={len(pids)} "
              f"pss_mb={pss / 1024:.0f} driver_hwm_mb={rss / 1024:.0f} "
              f"cpu_s={sum(cpu.values()):.0f}", flush=True)
        time.sleep(a.every)
    print(f"peak summed PSS: {peak_pss / 1024:.0f} MB; driver peak RSS: {peak_rss / 1024:.0f} MB; "
          f"CPU-seconds of the tree: {sum(cpu.values()):.0f}", flush=True)


if __name__ == "__main__":
    main()
