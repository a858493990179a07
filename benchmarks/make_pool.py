"""Write a de-en training pool of crawl size (20M pairs by default) from the shared de-en pool, for
measuring what the WMT-style filter's trainers (eflomal tables, KenLM models, pair classifier)
need at that size (docs/scale.md, "Training at crawl size").

The shared pool is the 8 ``src<TAB>tgt`` files the recipe recipes/wmt-filter-deen.yaml trains its
tables on (``deen-train-pool/*/train.de-en.tsv.gz`` and LibreOffice's ``help.train.de-en.tsv.gz``: 278,199
pairs). The first pass writes them as
they are; every later pass writes each pair again with one light change drawn from a generator
seeded by the pass: a number that occurs on both sides replaced on both by another, both sides
lowercased, both sides' first letter upper-cased, the final punctuation of both sides dropped or a
full stop added, or one word (not the first) dropped from one side. So the vocabulary and the
sentence lengths stay those of the pool, while most repeated pairs differ from their source, as a
crawl's near-duplicates do. Pairs are written in a shuffled order per pass (seeded), so any prefix
mixes the sets.

    nice -n 19 .venv/bin/python benchmarks/make_pool.py \\
        --out /work/scale-data/pool20M.de-en.tsv            # 20M pairs

Memory: the shared pool (about 0.3 GB). Time: about 3 min per 5M pairs on a loaded core; the
20M file is about 2.8 GB. Writes one line of counts to stderr.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import shared_data  # noqa: E402

NUMBER = re.compile(r"\d+")
FINAL = ".!?"


def read_pool() -> list[tuple[str, str]]:
    """The pairs of the shared de-en pool's 8 TSV files, in file order."""
    root = shared_data("deen-train-pool")
    files = sorted(glob.glob(str(root / "*" / "train.de-en.tsv.gz")))
    files.append(str(root / "libreoffice-7.4-help-ui-deen" / "help.train.de-en.tsv.gz"))
    if not files:
        raise SystemExit(f"make_pool: no *.de-en.tsv.gz under {root}")
    pairs = []
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                f = line.rstrip("\n").split("\t")
                if len(f) >= 2 and f[0].strip() and f[1].strip():
                    pairs.append((f[0], f[1]))
    return pairs


def perturb(de: str, en: str, rng: random.Random) -> tuple[str, str]:
    """The pair with one light change (see the module's docstring)."""
    kind = rng.randrange(5)
    if kind == 0:
        nums = set(NUMBER.findall(de)) & set(NUMBER.findall(en))
        if nums:
            old = rng.choice(sorted(nums))
            new = str(rng.randrange(1, 3000))
            pat = re.compile(rf"(?<!\d){old}(?!\d)")
            return pat.sub(new, de), pat.sub(new, en)
        kind = 1 + rng.randrange(4)  # no shared number: another change
    if kind == 1:
        return de.lower(), en.lower()
    if kind == 2:
        return de[:1].upper() + de[1:], en[:1].upper() + en[1:]
    if kind == 3:
        if de[-1:] in FINAL and en[-1:] in FINAL:
            return de[:-1].rstrip(), en[:-1].rstrip()
        return de.rstrip(".") + ".", en.rstrip(".") + "."
    side = rng.randrange(2)
    words = (de, en)[side].split(" ")
    if len(words) > 2:
        del words[1 + rng.randrange(len(words) - 1)]
    out = " ".join(words)
    return (out, en) if side == 0 else (de, out)


def main(argv: list[str] | None = None) -> int:
    """Write the pool."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output TSV (de<TAB>en)")
    ap.add_argument("--pairs", type=int, default=20_000_000, help="pairs to write")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    pool = read_pool()
    written = passes = 0
    with open(args.out, "w", encoding="utf-8", newline="\n") as out:
        while written < args.pairs:
            rng = random.Random(args.seed * 100_003 + passes)
            order = list(range(len(pool)))
            rng.shuffle(order)
            buf = []
            for i in order[:args.pairs - written]:
                de, en = pool[i]
                if passes:
                    de, en = perturb(de, en, rng)
                buf.append(f"{de}\t{en}\n")
            out.writelines(buf)
            written += len(buf)
            passes += 1
    print(f"make_pool: {written:,} pairs from a pool of {len(pool):,} ({passes} passes) in "
          f"{time.perf_counter() - t0:.0f} s -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
