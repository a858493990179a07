"""Timings for the ERG plugin (Nichols et al. sections 4.1 and 5.2) on this machine.

Run:  nice -n 10 .venv/bin/python benchmarks/bench_erg.py
1. nichols-split over the 50,000 Tanaka pairs of $BITEXTFORGE_SHARED_DATA/small_parallel_enja;
2. erg.v1's own overhead per sentence (pydelphin's ACEParser/ACEGenerator, MRS decoding and the
   well-formedness check, ranking, labels) against tests/fixtures/erg/fake_ace.py, the stand-in
   for the ACE binary: it answers instantly, so this is the cost around ACE, not ACE's parsing or
   generation time (ACE and the ERG cannot be installed here).
Each timing is the median of 3 runs.
"""

import json
import stat
import sys
import tempfile
from pathlib import Path

from _common import ROOT, median_time, shared_data

#: the stand-in for the ACE binary and its generation answers (the ERG plugin's test fixtures)
FIX = ROOT / "tests" / "fixtures" / "erg"


def bench_split():
    """Median seconds of nichols-split over the Tanaka pairs."""
    from bitextforge.plugins.erg.cli import run_split
    from bitextforge.plugins.erg.split import split_pair

    d = shared_data("small_parallel_enja")
    with tempfile.TemporaryDirectory() as tmp:
        return median_time(lambda: run_split(str(d / "train.ja"), str(d / "train.en"),
                                             f"{tmp}/o.ja", f"{tmp}/o.en",
                                             ["Mr.", "Ms.", "Mrs.", "Dr."], split_pair))[0]


def bench_overhead(repeat=40):
    """Median seconds per sentence of erg.v1 around the stand-in ACE."""
    from bitextforge.plugins.erg import ErgParaphraser
    from bitextforge.testing import ERG_GEN_ITEMS as GEN_ITEMS, erg_gold_items, erg_pred_key

    gold = erg_gold_items(shared_data("erg-gold-profiles", "mrs"), derivations=True)
    parse = {GEN_ITEMS[i]: {"mrs": gold[i][1], "derivation": gold[i][2]} for i in GEN_ITEMS}
    generate = {erg_pred_key(gold[i][1]): str(FIX / f"generate-mrs-{i}.txt") for i in GEN_ITEMS}
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "ace"
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FIX / "fake_ace.py"}" "$@"\n')
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
        table = Path(tmp) / "t.json"
        table.write_text(json.dumps({"parse": parse, "generate": generate,
                                     "gold": str(shared_data("erg-gold-profiles"))}))
        sentences = [GEN_ITEMS[i] for i in (11, 421, 451, 1011)] * repeat
        comp = ErgParaphraser(ErgParaphraser.Config(ace=str(exe), grammar=str(table)))
        comp.paraphrase(sentences[:4])  # start both processes outside the timing
        t = median_time(lambda: comp.paraphrase(sentences))[0]
        comp.close()
    return t / len(sentences)


if __name__ == "__main__":
    print(f"nichols-split, 50,000 Tanaka pairs: {bench_split():.2f} s (median of 3)")
    print(f"erg.v1 overhead around a stand-in ACE: {1000 * bench_overhead():.1f} ms per sentence "
          f"(median of 3 runs of 160 sentences)")
