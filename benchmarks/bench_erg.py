"""Timings for the ERG plugin (Nichols et al. sections 4.1 and 5.2) on this machine.

Run:  nice -n 10 .venv/bin/python tests/bench/bench_erg.py
1. nichols-split over the 50,000 Tanaka pairs of ../shared/data/small_parallel_enja;
2. erg.v1's own overhead per sentence (pydelphin's ACEParser/ACEGenerator, MRS decoding and the
   well-formedness check, ranking, labels) against tests/fixtures/erg/fake_ace.py, the stand-in
   for the ACE binary: it answers instantly, so this is the cost around ACE, not ACE's parsing or
   generation time (ACE and the ERG cannot be installed here).
Each timing is the median of 3 runs.
"""

import json
import statistics
import stat
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
SHARED = ROOT.parent / "shared" / "data"


def median_time(fn, runs=3):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_split():
    from bitextforge.plugins.erg.cli import run_split
    from bitextforge.plugins.erg.split import split_pair

    d = SHARED / "small_parallel_enja"
    with tempfile.TemporaryDirectory() as tmp:
        return median_time(lambda: run_split(str(d / "train.ja"), str(d / "train.en"),
                                             f"{tmp}/o.ja", f"{tmp}/o.en",
                                             ["Mr.", "Ms.", "Mrs.", "Dr."], split_pair))


def bench_overhead(repeat=40):
    from test_erg_paraphraser import FIX, GEN_ITEMS, gold_items, pred_key

    from bitextforge.plugins.erg import ErgParaphraser

    gold = gold_items(derivations=True)
    parse = {GEN_ITEMS[i]: {"mrs": gold[i][1], "derivation": gold[i][2]} for i in GEN_ITEMS}
    generate = {pred_key(gold[i][1]): str(FIX / f"generate-mrs-{i}.txt") for i in GEN_ITEMS}
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "ace"
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FIX / "fake_ace.py"}" "$@"\n')
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
        table = Path(tmp) / "t.json"
        table.write_text(json.dumps({"parse": parse, "generate": generate,
                                     "gold": str(SHARED / "erg-gold-profiles")}))
        sentences = [GEN_ITEMS[i] for i in (11, 421, 451, 1011)] * repeat
        comp = ErgParaphraser(ErgParaphraser.Config(ace=str(exe), grammar=str(table)))
        comp.paraphrase(sentences[:4])  # start both processes outside the timing
        t = median_time(lambda: comp.paraphrase(sentences))
        comp.close()
    return t / len(sentences)


if __name__ == "__main__":
    print(f"nichols-split, 50,000 Tanaka pairs: {bench_split():.2f} s (median of 3)")
    print(f"erg.v1 overhead around a stand-in ACE: {1000 * bench_overhead():.1f} ms per sentence "
          f"(median of 3 runs of 160 sentences)")
