"""Tables of 64-bit keys held in NumPy arrays, and the scores of texts already scored in this
run, for components whose score of a text depends on that text alone (language identification,
for one).

Corpora repeat sentences: crawled bitext repeats boilerplate, caption sets describe the same
picture alike, paraphrasers return the input unchanged, and deduplication usually comes last.
A scorer that costs tens of microseconds a text answers a repeat with a lookup instead. The
table (:class:`Int64Table`, also the set of keys ``dedupe.v1`` has seen) is an open-addressing
hash table, 16 bytes a slot and at most half full, looked up and filled a whole batch at a time.
:class:`TextScoreMemo` keys texts by Python's 64-bit string hash, so two different texts would
share a score only if their hashes collided (odds about n² / 2⁶⁵ for n distinct texts, below
one in ten million for a million texts). It lives in one process and is never saved: a score
cache across runs is :mod:`bitextforge.cache.scores`'s job. It holds at most
:attr:`TextScoreMemo.MAX_TEXTS` texts and starts afresh when full, so a worker that scores a
crawl keeps a bounded table: unbounded, each memo grew by 32-64 bytes a distinct text, and the
classifier workers of a 10M-line run by about 50 MB per million lines.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np


class Int64Table:
    """A set of non-zero 64-bit keys, each with a float value, in NumPy arrays: open addressing
    with linear probing, at most half full (16 bytes a slot), looked up and filled a batch of
    keys at a time."""

    def __init__(self, initial_bits: int = 16):
        """Start with ``2 ** initial_bits`` slots; the table doubles whenever it is half full."""
        self._alloc(1 << initial_bits)
        self.count = 0

    def _alloc(self, size: int) -> None:
        self.mask = size - 1
        self.keys = np.zeros(size, dtype=np.int64)  # 0 marks an empty slot
        self.values = np.zeros(size, dtype=np.float64)

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(values, found)`` for int64 ``keys`` (none of them 0); values are 0 where not found."""
        values = np.zeros(len(keys), dtype=np.float64)
        found = np.zeros(len(keys), dtype=bool)
        pending = np.arange(len(keys))
        slot = keys & self.mask
        while len(pending):  # linear probing, one probe of every unresolved key per round
            key = self.keys[slot]
            match = key == keys[pending]
            if match.any():
                at = pending[match]
                values[at] = self.values[slot[match]]
                found[at] = True
            go_on = ~match & (key != 0)
            pending = pending[go_on]
            slot = (slot[go_on] + 1) & self.mask
        return values, found

    def insert(self, keys: np.ndarray, values: np.ndarray | None = None) -> None:
        """Add distinct non-zero keys that are not in the table yet (with ``values``, or 0)."""
        if values is None:
            values = np.zeros(len(keys), dtype=np.float64)
        if 2 * (self.count + len(keys)) > len(self.keys):
            old = self.keys != 0
            old_keys, old_values = self.keys[old], self.values[old]
            size = len(self.keys)
            while 2 * (self.count + len(keys)) > size:
                size *= 2
            self._alloc(size)
            self._place(old_keys, old_values)
        self._place(keys, values)
        self.count += len(keys)

    def stored(self) -> np.ndarray:
        """Every key in the table."""
        return self.keys[self.keys != 0]

    def _place(self, keys: np.ndarray, values: np.ndarray) -> None:
        pending = np.arange(len(keys))
        slot = keys & self.mask
        while len(pending):
            free = self.keys[slot] == 0
            # of the keys probing one free slot, the first takes it; the rest probe on
            taken, first = np.unique(slot[free], return_index=True)
            winners = pending[free][first]
            self.keys[taken] = keys[winners]
            self.values[taken] = values[winners]
            placed = np.zeros(len(pending), dtype=bool)
            placed[np.flatnonzero(free)[first]] = True
            pending = pending[~placed]
            slot = (slot[~placed] + 1) & self.mask


class TextScoreMemo:
    """Float scores by text, remembered for the run, up to :attr:`MAX_TEXTS` texts at a time."""

    #: distinct texts remembered at most (a table of 2 ** 21 slots, 32 MB); when a batch's new
    #: texts would pass it the memo forgets everything and starts again. A crawl's repeats
    #: (boilerplate, navigation lines) come back within far fewer lines, and forgetting changes
    #: no score, only what is computed again
    MAX_TEXTS = 1 << 20

    def __init__(self, initial_bits: int = 16, max_texts: int | None = None):
        """Start with room for ``2 ** (initial_bits - 1)`` texts; the table grows as needed, up
        to ``max_texts`` texts (default :attr:`MAX_TEXTS`)."""
        self.initial_bits = initial_bits
        self.max_texts = self.MAX_TEXTS if max_texts is None else max_texts
        self.table = Int64Table(initial_bits)
        #: texts answered without computing (repeats, in this batch or earlier), and computed
        self.hits = 0
        self.computed = 0
        #: times the memo was full and started again
        self.restarts = 0

    @property
    def count(self) -> int:
        """Distinct texts remembered."""
        return self.table.count

    def scores(self, texts: Sequence[str], compute: Callable[[list[str]], Sequence[float]]
               ) -> np.ndarray:
        """The score of every text: remembered ones looked up, each distinct new text computed
        once with ``compute(list_of_texts)`` and remembered."""
        n = len(texts)
        h = np.fromiter(map(hash, texts), dtype=np.int64, count=n)
        h[h == 0] = 1
        out, found = self.table.lookup(h)
        miss = np.flatnonzero(~found)
        self.hits += n
        if len(miss):
            new, first, back = np.unique(h[miss], return_index=True, return_inverse=True)
            rows = miss[first].tolist()
            got = np.asarray(compute([texts[i] for i in rows]), dtype=np.float64)
            if got.shape != (len(rows),):
                raise ValueError(f"expected {len(rows)} scores, got {got.shape}")
            self.computed += len(rows)
            self.hits -= len(rows)
            out[miss] = got[back.reshape(-1)]
            if self.table.count + len(new) > self.max_texts:
                self.table = Int64Table(self.initial_bits)
                self.restarts += 1
            self.table.insert(new, got)
        return out
