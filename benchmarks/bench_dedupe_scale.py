"""dedupe.v1's memory at crawl size, simulated by hashes: the key sets dedupe.v1 keeps (the
in-memory table, and ``max_memory_mb``'s spilling set) fed batches of 64-bit keys as the filter
feeds them (look up the batch, then add its new distinct keys), to 1M, 10M and 100M lines.

A line's key is what dedupe.v1 computes from the text, an xxh3 hash; here line ``i`` of the
simulated crawl is new with probability ``1 - dup`` (its key: splitmix64 of a fresh counter) or a
repeat of an earlier line's key (splitmix64 of an earlier counter), so no text is needed and
every answer is checked: a new line must not be found, a repeat must be. Each mode and size
runs in a process of its own; the report is the process's peak resident memory (ru_maxrss) and
its growth over a bare process, per line and per distinct key, and the wall time; on Linux also
the peaks of its anonymous and its file-backed resident memory (RssAnon, RssFile of
/proc/self/status, sampled every 10 ms): file-backed pages are the interpreter's and its
libraries' (the spilling set reads its run files, it does not map them).

Run from the repository root:
    nice -n 10 .venv/bin/python benchmarks/bench_dedupe_scale.py --lines 1e6 1e7 1e8 --memory-mb 64

``--modes top`` measures a ``keep: {words: --budget}`` step's selection instead (its rows wait
on disk; it holds the scores and word counts of the rows that can still be kept).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from _common import ROOT, machine_line

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: distinct inputs give distinct, well-spread 64-bit keys."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _RssSampler(threading.Thread):
    """The peaks of RssAnon and RssFile (MB) in /proc/self/status, read every 10 ms until
    :meth:`stop`; both None where the file does not exist."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak: dict[str, float | None] = {"RssAnon": None, "RssFile": None}
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.01):
            try:
                with open("/proc/self/status", encoding="ascii") as f:
                    for line in f:
                        name, _, value = line.partition(":")
                        if name in self.peak:
                            mb = int(value.split()[0]) / 1024
                            self.peak[name] = max(self.peak[name] or 0.0, mb)
            except OSError:
                return

    def stop(self) -> dict:
        """End the sampling; the peaks, rounded."""
        self._done.set()
        self.join()
        names = {"RssAnon": "peak_rss_anon_mb", "RssFile": "peak_rss_file_mb"}
        return {names[k]: None if v is None else round(v, 1) for k, v in self.peak.items()}


def one(lines: int, mode: str, memory_mb: int, batch: int, dup: float, spill_dir: str) -> dict:
    """Feed ``lines`` simulated lines to one key set; return the measurements."""
    from bitextforge.api import Int64Table
    from bitextforge.plugins.spilled_keys import SpilledKeySet

    base = _peak_mb()
    keys = SpilledKeySet(memory_mb, spill_dir) if mode == "spill" else Int64Table()
    rng = np.random.default_rng(1)
    sampler = _RssSampler()
    sampler.start()
    fresh = 0  # lines so far that were new: their counters are 0..fresh-1
    t0 = time.time()
    done = 0
    while done < lines:
        n = min(batch, lines - done)
        repeat = rng.random(n) < dup
        repeat[:1] &= fresh > 0
        # a new line takes the next counter; a repeat an earlier line's (or this batch's) counter
        new_ids = fresh + np.cumsum(~repeat) - 1
        ids = np.where(repeat, 0, new_ids)
        upto = np.maximum(fresh + np.cumsum(~repeat) - (~repeat), 1)
        ids[repeat] = (rng.random(int(repeat.sum())) * upto[repeat]).astype(np.int64)
        h = splitmix64(ids).view(np.int64)
        h[h == 0] = 1
        _, found = keys.lookup(h)
        # a repeat of a counter first seen in this same batch is found by dedupe's in-batch
        # unique, not by the set: the set must answer as if it held every earlier batch
        before = ids < fresh
        if not np.array_equal(found, repeat & before):
            raise AssertionError(f"{mode}: wrong answer near line {done}")
        keys.insert(np.unique(h[~found]))
        fresh += int((~repeat).sum())
        done += n
    seconds = time.time() - t0
    count = keys.count
    peak = _peak_mb()
    split = sampler.stop()
    if mode == "spill":
        runs = len(keys.spilled)
        keys.close()
    else:
        runs = 0
    return {"lines": lines, "mode": mode, "memory_mb": memory_mb if mode == "spill" else None,
            "distinct": count, "runs": runs, "seconds": round(seconds, 1),
            "peak_rss_mb": round(peak, 1), "base_rss_mb": round(base, 1),
            "bytes_per_line": round((peak - base) * 2 ** 20 / lines, 1),
            "bytes_per_key": round((peak - base) * 2 ** 20 / count, 1), **split}


def one_top(lines: int, batch: int, budget: int) -> dict:
    """A ``keep: {words: budget}`` step's selection memory over ``lines`` rows, fed a batch at a
    time as a run feeds it (:class:`~bitextforge.pipeline.decide.StreamingSelection`; the rows
    themselves wait on disk): scores uniform, 2-59 words a row."""
    from bitextforge.api import KeepSpec
    from bitextforge.pipeline.decide import StreamingSelection

    base = _peak_mb()
    rng = np.random.default_rng(1)
    sel = StreamingSelection(KeepSpec(words=budget))
    t0 = time.time()
    for done in range(0, lines, batch):
        n = min(batch, lines - done)
        sel.add(rng.random(n), rng.integers(2, 60, size=n))
    cut = sel.finish()
    peak = _peak_mb()
    return {"lines": lines, "mode": f"words {budget:,}", "selected": cut["selected"],
            "seconds": round(time.time() - t0, 1), "peak_rss_mb": round(peak, 1),
            "base_rss_mb": round(base, 1),
            "bytes_per_line": round((peak - base) * 2 ** 20 / lines, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--modes", nargs="+", default=["memory", "spill"],
                    choices=["memory", "spill", "top"],
                    help="memory: dedupe's in-memory table; spill: max_memory_mb; top: a "
                         "keep: {words} step's selection")
    ap.add_argument("--memory-mb", type=int, default=64)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--budget", type=int, default=10_000_000,
                    help="top: the words budget of the selection")
    ap.add_argument("--dup", type=float, default=0.2, help="share of lines repeating an earlier one")
    ap.add_argument("--spill-dir", default=tempfile.gettempdir())
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        if a.modes[0] == "top":
            print(json.dumps(one_top(int(a.lines[0]), a.batch, a.budget)))
        else:
            print(json.dumps(one(int(a.lines[0]), a.modes[0], a.memory_mb, a.batch, a.dup,
                                 a.spill_dir)))
        return
    print(machine_line())
    for lines in a.lines:
        for mode in a.modes:
            r = subprocess.run([sys.executable, __file__, "--one", "--lines", str(lines),
                                "--modes", mode, "--memory-mb", str(a.memory_mb), "--budget",
                                str(a.budget), "--batch",
                                str(a.batch), "--dup", str(a.dup), "--spill-dir", a.spill_dir],
                               capture_output=True, text=True, cwd=ROOT)
            if r.returncode:
                print(f"{mode} {int(lines):,}: failed\n{r.stderr}", flush=True)
                continue
            print(r.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
