"""Write the pairs of two line-aligned files from line N on (0-based) as one TSV, the part of a
corpus that ``train-nmt --train-limit N`` did not read.

benchmarks/studies/paracrawl-filter/recipes/filter.yaml's ``machine_translated`` negatives replace targets by a translation
model's output; the sources it translates must be sentences that model never trained on, or it
would reproduce the reference and the "negative" would be a clean pair. So the model trains on
Multi30k's first 14,500 pairs (``train_limit: 14500``) and the pair classifier on the rest::

    .venv/bin/python scripts/pairs_from.py 14500 ../shared/data/multi30k/train.en.gz \\
        ../shared/data/multi30k/train.fr.gz models/multi30k-from14500.en-fr.tsv.gz

Lines are counted as ``train-nmt`` counts them (every line of the files, before pairs with an
empty side are left out); pairs with an empty side, or a side holding a tab, are left out here
too, since a TSV cannot hold them.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

from bitextforge.io.corpus import read_lines


def pairs_from(start: int, src: list[str], tgt: list[str]) -> list[tuple[str, str]]:
    """The pairs of ``src`` / ``tgt`` from index ``start`` on whose sides are non-empty and hold
    no tab."""
    if len(src) != len(tgt):
        raise ValueError(f"the files have {len(src)} and {len(tgt)} lines; they must be "
                         f"line-aligned")
    return [(s, t) for s, t in zip(src[start:], tgt[start:])
            if s.strip() and t.strip() and "\t" not in s + t]


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, write the TSV under a temporary name and rename it."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("start", type=int, help="first line to write (0-based), e.g. 14500")
    ap.add_argument("src", help="source file (.gz ok)")
    ap.add_argument("tgt", help="target file, line-aligned (.gz ok)")
    ap.add_argument("out", help="TSV to write (.gz compresses)")
    args = ap.parse_args(argv)
    if args.start < 0:
        ap.error("start must be 0 or more")
    try:
        pairs = pairs_from(args.start, list(read_lines(args.src)), list(read_lines(args.tgt)))
    except ValueError as e:
        print(f"pairs_from.py: error: {args.src}, {args.tgt}: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    opener = gzip.open if out.suffix == ".gz" else open
    with opener(tmp, "wt", encoding="utf-8") as fh:
        fh.writelines(f"{s}\t{t}\n" for s, t in pairs)
    tmp.replace(out)
    print(f"wrote {len(pairs):,} pairs (lines {args.start:,} on) to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
