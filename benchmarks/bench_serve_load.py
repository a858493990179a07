"""Load benchmark of ``bitextforge serve``: many clients asking its decide API at once.

A run of the quick-start recipe on Multi30k's training set (29,000 pairs, from
$BITEXTFORGE_SHARED_DATA/multi30k; or ``--run DIR``, any finished run) is served as a user serves
it, and ``--clients`` clients (asyncio, one keep-alive connection each) ask ``/api/decide`` for
``--seconds`` seconds, each request's bounds drawn from ``--settings`` settings of two filters'
bounds (users moving sliders among the same positions; ``--settings 0``: fresh bounds on every
request, so almost nothing can come from the server's table of decisions). Every answer is checked
against the answer one client alone got for the same bounds before the load (all but the timing
field ``ms``), so speed cannot come from a wrong answer; with fresh bounds, a seeded sample of 300
answers is checked against the run re-decided in this process. Prints p50 / p99 / max latency,
requests per second, wrong or failed answers, the server's RSS before and after, and the machine
(``lscpu`` model and flags).

Run from the repository root:
    .venv/bin/python benchmarks/bench_serve_load.py [--clients 100] [--seconds 30] [--settings 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, fail, machine_line, shared_data

WORK = Path("/tmp/bitextforge-bench-serve-load")
#: bounds moved: the quick start's length_ratio max (steps[3]) and language_id min (steps[4])
RATIO, LANGID = "3", "4"


def make_run() -> Path:
    """The quick start over Multi30k's training set, run once into WORK."""
    out = WORK / "multi30k-run"
    if (out / "manifest.json").exists():
        return out
    m30k = shared_data("multi30k")
    cmd = [sys.executable, "-m", "bitextforge.cli", "run", str(ROOT / "recipes/quickstart.yaml"),
           "--set", f"input.src={m30k / 'train.de.gz'}", "--set",
           f"input.tgt={m30k / 'train.en.gz'}", "--set", "evaluate=[]", "-o", str(out), "-q",
           "--force"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT)
    print(f"run: {time.perf_counter() - t0:.0f} s ({' '.join(cmd[2:])})", flush=True)
    return out


def rss_mb(pid: int) -> float:
    """A process's resident memory now, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used, in seconds."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def lscpu() -> str:
    """``lscpu``'s model name and flags, as lscpu prints them."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "lscpu: not available"
    keep = [ln for ln in text.splitlines() if ln.startswith(("Model name:", "Flags:", "CPU(s):"))]
    return "\n".join(keep)


def bounds(rng: random.Random, steps: int = 40) -> dict:
    """One setting of the two filters' bounds, on a grid of ``steps`` positions each."""
    return {RATIO: {"max": round(1.2 + 2.0 * rng.randrange(steps) / steps, 4)},
            LANGID: {"min": round(-2.0 + 2.0 * rng.randrange(steps) / steps, 4)}}


def answer(body: dict) -> str:
    """An answer as compared: everything but the time the server took."""
    return json.dumps({k: v for k, v in body.items() if k != "ms"}, sort_keys=True)


class Connection:
    """One keep-alive HTTP/1.1 connection on asyncio streams: GET and read one answer. Far less
    CPU per request than httpx, so that on a machine of two cores the clients measure the
    server rather than themselves (with httpx, 100 clients took 5x the server's CPU)."""

    def __init__(self, host: str, port: int):
        """Address the server at ``host``:``port``; connected on the first request."""
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, target: str) -> tuple[int, bytes]:
        """``(status, body)`` of ``GET target``."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(f"GET {target} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n\r\n"
                          .encode("ascii"))
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next(int(ln.split(":", 1)[1]) for ln in lines[1:]
                      if ln.lower().startswith("content-length:"))
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        """Close the connection."""
        if self.writer is not None:
            self.writer.close()


async def load(url: str, settings: list[dict], expected: list[str], clients: int,
               seconds: float, max_requests: int, fresh: bool) -> dict:
    """``clients`` clients asking until ``seconds`` pass or ``max_requests`` are sent."""
    import urllib.parse

    latencies: list[float] = []
    wrong: list[str] = []
    fresh_answers: list[tuple[dict, str]] = []
    failed: list[str] = []
    sent = 0
    deadline = time.perf_counter() + seconds
    where = urllib.parse.urlsplit(url)

    async def client(k: int) -> None:
        nonlocal sent
        rng = random.Random(k)
        conn = Connection(where.hostname, where.port)
        try:
            while time.perf_counter() < deadline and sent < max_requests:
                sent += 1
                i = rng.randrange(len(settings))
                keep = bounds(rng, 2000) if fresh else settings[i]
                target = "/api/decide?" + urllib.parse.urlencode({"keep": json.dumps(keep)})
                t0 = time.perf_counter()
                try:
                    status, body = await asyncio.wait_for(conn.get(target), 300)
                except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
                    failed.append(type(exc).__name__)
                    conn.close()
                    conn = Connection(where.hostname, where.port)
                    continue
                latencies.append(time.perf_counter() - t0)
                if status != 200:
                    failed.append(f"HTTP {status}")
                elif fresh:
                    fresh_answers.append((keep, answer(json.loads(body))))  # checked after
                elif answer(json.loads(body)) != expected[i]:
                    wrong.append(json.dumps(keep))
        finally:
            conn.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(client(k) for k in range(clients)))
    wall = time.perf_counter() - t0
    return {"latencies": latencies, "wrong": wrong, "failed": failed, "wall": wall,
            "fresh": fresh_answers}


def main() -> None:
    """Serve the run, get every setting's answer alone, then load the server and compare."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="a finished run directory (default: the quick "
                    "start over Multi30k train, made once in " + str(WORK) + ")")
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--settings", type=int, default=20, help="distinct bounds the clients draw "
                    "from; 0: fresh bounds on every request (checked after the load)")
    ap.add_argument("--max-requests", type=int, default=200_000,
                    help="stop after this many requests even before --seconds")
    args = ap.parse_args()
    if not 1 <= args.clients <= 1000 or not 0 < args.seconds <= 600:
        raise fail("--clients must be 1 to 1000 and --seconds 0 to 600")
    try:
        import httpx
    except ImportError:
        raise fail("needs httpx (the test extra: pip install -e '.[test]')") from None
    print(machine_line())
    print(lscpu())
    run = args.run or make_run()
    proc = subprocess.Popen([sys.executable, "-m", "bitextforge.cli", "serve", str(run),
                             "--port", "0", "--no-save"], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)
    try:
        line = proc.stdout.readline()
        if " at http" not in line:
            raise fail(f"serve did not start: {line.strip()!r}")
        url = line.split(" at ", 1)[1].split()[0]
        print(line.strip())
        rss0 = rss_mb(proc.pid)
        rng = random.Random(0)
        settings = [bounds(rng) for _ in range(max(1, args.settings))]
        alone = []
        with httpx.Client(timeout=300) as http:
            t0 = time.perf_counter()
            for keep in settings:
                r = http.get(f"{url}api/decide", params={"keep": json.dumps(keep)})
                r.raise_for_status()
                alone.append(answer(r.json()))
            one = (time.perf_counter() - t0) / len(settings)
        print(f"one client alone: {one * 1000:.0f} ms per request ({len(settings)} settings, "
              f"first asks)")
        import os

        cpu0, mine0, t0 = cpu_seconds(proc.pid), time.process_time(), time.perf_counter()
        res = asyncio.run(load(url, settings, alone, args.clients, args.seconds,
                               args.max_requests, fresh=args.settings == 0))
        wall = time.perf_counter() - t0
        cpu1, mine1 = cpu_seconds(proc.pid), time.process_time()
        rss1 = rss_mb(proc.pid)
        wrong = res["wrong"]
        if args.settings == 0:
            # the server's table may hold these bounds now: re-decide them here instead
            from bitextforge.api import KeepSpec
            from bitextforge.serve.data import load_run

            data = load_run(run)
            sample = random.Random(1).sample(res["fresh"], min(300, len(res["fresh"])))
            for keep, got in sample:
                dec = data.decide({int(k): KeepSpec(**v) for k, v in keep.items()})
                if answer(json.loads(json.dumps(data.summary(dec)))) != got:
                    wrong.append(json.dumps(keep))
            print(f"fresh answers checked against this process's own decision: {len(sample)} "
                  f"of {len(res['fresh']):,}")
        lat = sorted(res["latencies"])
        if not lat:
            raise fail("no request was answered")

        def q(p: float) -> float:
            return lat[min(len(lat) - 1, int(p * len(lat)))]

        print(f"load: {args.clients} clients x {args.seconds:g} s, "
              f"{'fresh bounds per request' if args.settings == 0 else f'{args.settings} settings'}"
              f": {len(lat):,} answers in {res['wall']:.1f} s ({len(lat) / res['wall']:.0f}/s); "
              f"latency p50 {q(0.50):.3f} s, p99 {q(0.99):.3f} s, max {lat[-1]:.3f} s, mean "
              f"{statistics.fmean(lat):.3f} s")
        print(f"wrong answers: {len(wrong)}; failed requests: {len(res['failed'])}"
              f"{' (' + ', '.join(sorted(set(res['failed']))[:3]) + ')' if res['failed'] else ''}")
        print(f"server RSS: {rss0:.0f} MB after loading, {rss1:.0f} MB after the load")
        print(f"CPU during the load: server {cpu1 - cpu0:.1f} s, these clients "
              f"{mine1 - mine0:.1f} s, in {wall:.1f} s on {os.cpu_count()} cores (load average "
              f"{os.getloadavg()[0]:.1f})")
        if wrong or res["failed"]:
            sys.exit(1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
