"""A uniform random sample of a training corpus too large to hold in memory: the trainers'
``sample:`` option (``lexical_translation_model.v1``, ``kenlm_model.v1``) reads the corpus once,
as a stream, and keeps a seeded reservoir of N pairs or lines, so their memory follows N and not
the corpus (a crawl of tens of millions of pairs; eflomal needs about 10 GB at 20M pairs)."""

from __future__ import annotations

import math
import os
import random
from collections.abc import Iterable, Iterator, Sequence
from itertools import count, islice, zip_longest
from pathlib import Path
from typing import TypeVar

from ..errors import InputError
from .corpus import CorpusEntry, text_lines, tsv_file_pairs

T = TypeVar("T")


def reservoir(items: Iterable[T], n: int, seed: int = 1) -> tuple[list[T], int]:
    """A uniform random sample of ``n`` of ``items`` (all of them when there are fewer) in the
    order they came, and how many items were read: one pass over an iterable of any length,
    holding only ``n`` items. Li's Algorithm L (1994): after the first ``n`` it jumps over a
    geometrically distributed number of items between replacements, so the random draws grow
    with ``n log(total / n)``, not with the total. The same ``seed`` and input give the same
    sample."""
    if n < 1:
        raise ValueError(f"reservoir: sample size must be at least 1, not {n}")
    rng = random.Random(seed)
    # zip takes the count first: once the items end, the counter has gone one past their number
    counter = count()
    it = zip(counter, items)
    kept = list(islice(it, n))
    if len(kept) == n:
        # 1 - random() lies in (0, 1]: its log is finite
        w = math.exp(math.log(1.0 - rng.random()) / n)
        while True:
            skip = math.floor(math.log(1.0 - rng.random()) / math.log1p(-w)) if w < 1 else 0
            nxt = next(islice(it, skip, None), None)
            if nxt is None:
                break
            kept[rng.randrange(n)] = nxt
            w *= math.exp(math.log(1.0 - rng.random()) / n)
        kept.sort(key=lambda p: p[0])
    return [x for _, x in kept], next(counter) - 1


def iter_tsv_pairs(entries: Sequence[CorpusEntry]) -> Iterator[tuple[str, str]]:
    """The pairs of training corpora, streamed, as ``read_tsv_pairs`` reads them: a TSV file's
    blank lines pass over and a line with one field is an error naming file and line; a
    ``(src_file, tgt_file)`` pair of line-aligned files leaves out pairs with an empty side and
    fails, naming both files, when one ends before the other."""
    for entry in entries:
        if not isinstance(entry, str):
            yield from _iter_parallel(*entry)
            continue
        yield from tsv_file_pairs(entry)


def _iter_parallel(src: str | os.PathLike, tgt: str | os.PathLike) -> Iterator[tuple[str, str]]:
    for p in (src, tgt):
        if not Path(p).is_file():
            raise InputError(f"{p}: no such file; pass an existing text file (plain or .gz)")
    for n, (s, t) in enumerate(zip_longest(text_lines(src), text_lines(tgt)), 1):
        if s is None or t is None:
            shorter = src if s is None else tgt
            raise InputError(f"{shorter} ends at line {n - 1} but {src if s is not None else tgt} "
                             f"goes on; they must be line-aligned translations of each other")
        if s.strip() and t.strip():
            yield s, t


def sample_tsv_pairs(entries: Sequence[CorpusEntry], n: int,
                     seed: int = 1) -> tuple[list[str], list[str], int]:
    """A uniform random sample of ``n`` pairs of the corpora (in corpus order), read in one
    streaming pass: (sources, targets, pairs read)."""
    pairs, seen = reservoir(iter_tsv_pairs(entries), n, seed)
    return [s for s, _ in pairs], [t for _, t in pairs], seen
