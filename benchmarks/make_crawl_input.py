"""Build an N-line German-English input that looks like a crawl, for runs at crawl size.

The pairs come from the shared de-en training pool (``deen-train-pool/*/train.de-en.tsv.gz``:
Tatoeba, News Commentary, Europarl, WMT newstest, a WMT training mix, IWSLT14 TED, an OPUS-100
sample; the Ding dictionary and the LibreOffice UI strings have no ``train.de-en.tsv.gz`` and are
left out, as dictionary entries are not sentences). The sets are read round-robin, a line of each
in turn, so every stretch of the output mixes them. ``paracrawl-human-eval`` is en-fr / en-cs and
is not used.

Each output line is, with probability ``--dup-rate`` (default 0.3), an exact repeat of one of
the first ``--popular`` distinct pairs written, picked at Zipf-like frequencies (rank r with
weight 1/r^s, ranks assigned to the pairs in a seeded random order), as a crawl repeats
boilerplate; otherwise the next pool pair. The first pass over the pool writes the pairs as they
are (the pool's own repeats stay); later passes make each pair new with a small change derived
from its line number: a number that occurs on both sides replaced on both by another, a
reference token appended to both sides, or a list number put in front of both. Lengths and the
length ratio barely change, so the rules keep about what they keep on the pool.

The output is seeded and deterministic, and a prefix of a longer run with the same options
(the first 1M lines of ``--lines 10000000`` are ``--lines 1000000``'s). It is streamed: memory
is the popular pairs (``--popular`` of them) and the open pool files, whatever N is.

    .venv/bin/python benchmarks/make_crawl_input.py --lines 10000000 \
        --out /work/scale-data/crawl10M.de-en.tsv
    # plain files instead: --format plain --out /work/scale-data/crawl10M  (writes .de and .en)

Writes one line of counts to stderr (lines, repeats, passes over the pool). Time: about 20 s
per million lines on a loaded core (10M lines: 2 GB, 3 min).
"""
from __future__ import annotations

import argparse
import bisect
import glob
import gzip
import itertools
import os
import random
import re
import sys
from pathlib import Path

POOL = "deen-train-pool/*/train.de-en.tsv.gz"
_NUMBER = re.compile(r"\d+")


def shared_data() -> Path:
    """The shared data folder (``BITEXTFORGE_SHARED_DATA``, default /work/shared/data)."""
    return Path(os.environ.get("BITEXTFORGE_SHARED_DATA", "/work/shared/data"))


def read_pool(files: list[str]):
    """The pool's (de, en) pairs, a line of each file in turn until all are exhausted; pairs
    without two non-empty fields are skipped (they are not sentence pairs)."""
    streams = [gzip.open(f, "rt", encoding="utf-8") for f in files]
    try:
        live = list(streams)
        while live:
            still = []
            for s in live:
                line = s.readline()
                if not line:
                    continue
                still.append(s)
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 2 and parts[0].strip() and parts[1].strip():
                    yield parts[0], parts[1]
            live = still
    finally:
        for s in streams:
            s.close()


def perturb(src: str, tgt: str, line_id: int, rng: random.Random) -> tuple[str, str]:
    """The pair made new by a small change derived from ``line_id`` (unique to the line)."""
    kind = rng.random()
    if kind < 0.5:
        shared = set(_NUMBER.findall(src)) & set(_NUMBER.findall(tgt))
        if shared:
            # the same number on both sides becomes the same other number: still a translation
            old = min(shared)
            new = str(line_id)
            return (re.sub(rf"(?<!\d){old}(?!\d)", new, src),
                    re.sub(rf"(?<!\d){old}(?!\d)", new, tgt))
    if kind < 0.8:
        token = f" (ref {_base36(line_id)})"
        return src + token, tgt + token
    return f"{line_id}. {src}", f"{line_id}. {tgt}"


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def zipf_cdf(n: int, s: float) -> list[float]:
    """Cumulative weights of ranks 1..n under weight 1/r^s, normalised to end at 1."""
    acc, out = 0.0, []
    for r in range(1, n + 1):
        acc += 1.0 / r ** s
        out.append(acc)
    return [x / acc for x in out]


def generate(lines: int, files: list[str], seed: int, dup_rate: float, popular: int, s: float):
    """Yield ``lines`` (de, en) pairs with crawl-like repeats, then print their counts to
    stderr."""
    rng = random.Random(seed)
    cdf = zipf_cdf(popular, s)
    slots = list(range(popular))
    random.Random(seed + 1).shuffle(slots)  # which distinct pair gets which rank
    kept: list[tuple[str, str] | None] = [None] * popular
    filled = 0
    repeats = 0
    passes = 0
    pool = iter(())
    for i in range(lines):
        if filled == popular and rng.random() < dup_rate:
            rank = bisect.bisect_left(cdf, rng.random())
            pair = kept[slots[min(rank, popular - 1)]]
            repeats += 1
            yield pair
            continue
        pair = next(pool, None)
        if pair is None:
            passes += 1
            pool = read_pool(files)
            pair = next(pool, None)
            if pair is None:
                raise SystemExit(f"make_crawl_input: no pairs in {files}")
        if passes > 1:
            pair = perturb(pair[0], pair[1], i, rng)
        if filled < popular:
            kept[filled] = pair
            filled += 1
        yield pair
    print(f"make_crawl_input: {lines} lines, {repeats} exact repeats of {popular} popular pairs, "
          f"{passes} pass(es) over the pool", file=sys.stderr)


def main(argv=None) -> int:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, required=True, help="how many pairs to write")
    ap.add_argument("--out", required=True,
                    help="the TSV file (de<TAB>en), or with --format plain the stem of .de/.en")
    ap.add_argument("--format", choices=("tsv", "plain"), default="tsv")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dup-rate", type=float, default=0.3,
                    help="share of lines that repeat a popular pair exactly")
    ap.add_argument("--popular", type=int, default=20000,
                    help="how many distinct pairs the repeats are drawn from")
    ap.add_argument("--zipf", type=float, default=1.1, help="the exponent s of the ranks' 1/r^s")
    a = ap.parse_args(argv)
    if a.lines < 1 or not 0 <= a.dup_rate < 1 or a.popular < 1:
        ap.error("--lines and --popular must be >= 1 and --dup-rate in [0, 1)")
    files = sorted(glob.glob(str(shared_data() / POOL)))
    if not files:
        ap.error(f"no pool files match {shared_data() / POOL}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pairs = generate(a.lines, files, a.seed, a.dup_rate, a.popular, a.zipf)
    # write under a temporary name and rename at the end: a killed build leaves no short file
    # under the final name
    if a.format == "tsv":
        tmp = out.with_name(out.name + ".part")
        with open(tmp, "w", encoding="utf-8") as f:
            for chunk in iter(lambda: list(itertools.islice(pairs, 10000)), []):
                f.write("".join(f"{d}\t{e}\n" for d, e in chunk))
        tmp.replace(out)
    else:
        names = [out.with_name(out.name + ext) for ext in (".de", ".en")]
        tmps = [n.with_name(n.name + ".part") for n in names]
        with open(tmps[0], "w", encoding="utf-8") as fd, open(tmps[1], "w", encoding="utf-8") as fe:
            for chunk in iter(lambda: list(itertools.islice(pairs, 10000)), []):
                fd.write("".join(d + "\n" for d, _ in chunk))
                fe.write("".join(e + "\n" for _, e in chunk))
        for t, n in zip(tmps, names):
            t.replace(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
