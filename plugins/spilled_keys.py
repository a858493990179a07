"""A set of 64-bit keys whose memory stays under a bound however many keys it holds: the keys
``dedupe.v1`` has seen, with ``max_memory_mb``.

The newest keys sit in an in-memory hash table of fixed size (:class:`~bitextforge.cache.memo.
Int64Table`, 16 bytes a slot, at most half full). When it is full its keys are sorted and written
to a *run*, a file of sorted int64 keys (8 bytes a key on disk), and the table starts empty. Two
runs of similar size are merged into one (chunk by chunk, so a merge holds a bounded number of
keys), so a set of ``n`` keys has about ``log2(n / table keys)`` runs. A key is looked up in the
table, then in each run: an in-memory index holds every :data:`FENCE`-th key of a run (1/64 of a
byte a key), which names the one 4 KiB block of the run where the key can be; that block is read
(``pread``), a bounded number of blocks at a time, so the resident memory is the table, the merge
buffers, the blocks being searched and the indexes. The runs are read, never memory-mapped: a
mapped page counts in the process's resident memory, and the kernel maps the whole page-cache
folio around a faulting page (up to megabytes for a file written in large writes), so a mapped
lookup brought in far more than the page it read.

The answers are those of one in-memory set: a key is present iff it was added before.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections import deque
from pathlib import Path

import numpy as np

from bitextforge.api import Int64Table

#: one key in this many of a run is kept in memory: 512 keys are one 4 KiB page of the run
FENCE = 512
#: keys of a run read at a time when its index is rebuilt (8 MB)
_READ = 1 << 20
#: bytes of one block of :data:`FENCE` keys
_BLOCK = 8 * FENCE
#: bounds of the keys looked up in a run at a time: as many 4 KiB blocks as a sixteenth of
#: ``memory_mb`` holds (read, then joined: twice that while searched)
_MAX_STEP = 2048
_MIN_STEP = 128
#: the smallest bound accepted (the table and the merge buffers need a few MB)
MIN_MEMORY_MB = 8


class SpilledKeySet:
    """A set of non-zero int64 keys held in a fixed table of ``memory_mb`` / 2 MB, merge chunks
    of ``memory_mb`` / 8 MB, the blocks of one lookup step (``memory_mb`` / 16 MB, twice that
    while joined; 128 to 2,048 blocks of 4 KiB) and the runs' indexes (16 bytes per thousand
    keys), spilling sorted runs into a folder made in ``directory``."""

    def __init__(self, memory_mb: int, directory: str | None = None):
        """Size the table, the merge chunks and the lookup step from ``memory_mb``; the spill
        folder is made at the first spill."""
        budget = max(int(memory_mb), MIN_MEMORY_MB) << 20
        # the table: the largest power of two of 16-byte slots in half the budget, kept at most
        # half full so it never grows
        bits = (budget // 2 // 16).bit_length() - 1
        self.table = Int64Table(bits)
        self.capacity = (1 << bits) // 2
        # a merge holds two input chunks, their merged output (up to both) and the sort's
        # scratch: six chunks, in an eighth of the budget (what the allocator keeps of freed
        # buffers comes on top)
        self.chunk = max(budget // 8 // 8 // 6, FENCE)
        self.step = min(max(budget // 16 // _BLOCK, _MIN_STEP), _MAX_STEP)
        self.directory = directory
        self.dir: Path | None = None
        self.runs: list[_Run] = []
        #: keys in each run (kept after :meth:`close`, for the manifest)
        self.spilled: list[int] = []
        self._serial = 0
        #: run files named by the last two saved states: a resumed run may need either
        self._saved: deque[set[str]] = deque(maxlen=2)
        self._merged_away: set[str] = set()

    @property
    def count(self) -> int:
        """Keys in the set."""
        return self.table.count + sum(self.spilled)

    def lookup(self, keys: np.ndarray) -> tuple[None, np.ndarray]:
        """``(None, found)`` for int64 ``keys`` (none of them 0), as
        :meth:`Int64Table.lookup <bitextforge.cache.memo.Int64Table.lookup>` without values."""
        _, found = self.table.lookup(keys)
        for run in self.runs:
            left = np.flatnonzero(~found)
            if not len(left):
                break
            found[left] = run.contains(keys[left], self.step)
        return None, found

    def insert(self, keys: np.ndarray) -> None:
        """Add distinct non-zero keys that are not in the set yet."""
        keys = np.asarray(keys, dtype=np.int64)
        while len(keys):
            room = self.capacity - self.table.count
            if room == 0:
                self._spill()
                continue
            self.table.insert(keys[:room])
            keys = keys[room:]

    def stored(self) -> np.ndarray:
        """Every key (reads every run into memory: for tests and small sets only)."""
        return np.concatenate([self.table.stored(), *(r.read(0, r.n) for r in self.runs)])

    # ------------------------------------------------------------------ resume

    def get_state(self) -> dict:
        """The table's keys (at most ``capacity``) and the run files by name; the runs stay on
        disk until a later state no longer names them."""
        names = {str(r.path) for r in self.runs}
        self._saved.append(names)
        for path in list(self._merged_away):
            if not any(path in s for s in self._saved):
                _unlink(path)
                self._merged_away.discard(path)
        return {"table": self.table.stored().copy(),
                "runs": [(str(r.path), r.n) for r in self.runs]}

    def set_state(self, state: dict) -> None:
        """Continue from a saved state: its run files must still be where it saved them."""
        self.close()
        self.table = Int64Table(self.capacity.bit_length())
        self.table.insert(np.asarray(state["table"], dtype=np.int64))
        for path, n in state["runs"]:
            p = Path(path)
            if not p.is_file() or p.stat().st_size != 8 * n:
                raise FileNotFoundError(path)
        self.runs = [_Run(Path(path), n) for path, n in state["runs"]]
        self.spilled = [r.n for r in self.runs]
        if self.runs:
            self.dir = self.runs[0].path.parent
            self._serial = 1 + max(int(r.path.stem.split("-")[1]) for r in self.runs)
        self._saved.append({str(r.path) for r in self.runs})

    def close(self, keep_saved: bool | None = None) -> None:
        """Unmap the runs and remove the spill folder; ``keep_saved`` (by default: when an
        exception is being handled, i.e. the run failed and may be resumed) keeps the run files
        the saved states name."""
        if keep_saved is None:
            keep_saved = sys.exc_info()[0] is not None
        for run in self.runs:
            run.close()
        self.runs = []
        if self.dir is None:
            return
        if keep_saved and any(self._saved):
            keep = set().union(*self._saved)
            for f in self.dir.glob("run-*.keys"):
                if str(f) not in keep:
                    _unlink(f)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    # ------------------------------------------------------------------ spilling

    def _new_path(self) -> Path:
        if self.dir is None:
            if self.directory is not None:  # a spill_dir the user named need not exist yet
                Path(self.directory).mkdir(parents=True, exist_ok=True)
            self.dir = Path(tempfile.mkdtemp(prefix="bitextforge-dedupe-", dir=self.directory))
        self._serial += 1
        return self.dir / f"run-{self._serial:06d}.keys"

    def _spill(self) -> None:
        keys = self.table.stored()
        keys.sort()
        path = self._new_path()
        with open(path, "wb") as f:
            keys.tofile(f)
        self.runs.append(_Run(path, len(keys), keys[::FENCE].copy()))
        del keys
        _empty(self.table)
        # runs of similar size merge (a binary counter): about log2(n / capacity) runs
        while len(self.runs) >= 2 and self.runs[-2].n < 2 * self.runs[-1].n:
            newer = self.runs.pop()
            older = self.runs.pop()
            self.runs.append(self._merge(older, newer))
        self.spilled = [r.n for r in self.runs]

    def _merge(self, a: "_Run", b: "_Run") -> "_Run":
        path = self._new_path()
        c = self.chunk
        i = j = 0
        fences = []
        with open(path, "wb") as f:
            while i < a.n or j < b.n:
                x, y = a.read(i, c), b.read(j, c)
                # everything up to the smaller of the chunks' last keys is complete in both
                ends = [z[-1] for z, at, n in ((x, i, a.n), (y, j, b.n))
                        if len(z) and at + len(z) < n]
                if ends:
                    cut = min(ends)
                    x = x[:np.searchsorted(x, cut, side="right")]
                    y = y[:np.searchsorted(y, cut, side="right")]
                out = np.concatenate([x, y])
                out.sort(kind="stable")
                out.tofile(f)
                fences.append(out[(-(i + j)) % FENCE::FENCE].copy())
                i += len(x)
                j += len(y)
        for run in (a, b):
            run.close()
            if any(str(run.path) in s for s in self._saved):
                self._merged_away.add(str(run.path))
            else:
                _unlink(run.path)
        return _Run(path, a.n + b.n, np.concatenate(fences))


class _Run:
    """One file of sorted keys, read by ``pread``, with every :data:`FENCE`-th key in memory."""

    def __init__(self, path: Path, n: int, fence: np.ndarray | None = None):
        """Open the ``n`` keys of ``path``; ``fence``: its every :data:`FENCE`-th key when the
        writer kept them, else read here a chunk at a time."""
        self.path = path
        self.n = n
        # a file object, not a bare descriptor: a run dropped without close() is closed by the
        # garbage collector
        self._file = open(path, "rb", buffering=0)
        self._fd = self._file.fileno()
        if fence is None:
            parts = [np.zeros(0, dtype=np.int64)]
            for at in range(0, n, _READ):  # _READ is a multiple of FENCE
                parts.append(self.read(at, _READ)[::FENCE].copy())
            fence = np.concatenate(parts)
        self.fence = fence

    def read(self, start: int, count: int) -> np.ndarray:
        """Keys ``start`` to ``start + count`` (fewer at the end of the run), a new array."""
        count = max(min(count, self.n - start), 0)
        out = np.empty(count, dtype=np.int64)
        view = memoryview(out).cast("B")
        got = 0
        while got < len(view):
            n = os.preadv(self._fd, [view[got:]], start * 8 + got)
            if n == 0:
                raise EOFError(f"{self.path}: ends before key {start + got // 8}")
            got += n
        return out

    def contains(self, q: np.ndarray, step: int) -> np.ndarray:
        """Whether each key of ``q`` is in the run: its block found in the index and read, then
        a binary search within the block; ``step`` keys at a time."""
        return np.concatenate([self._contains(q[at:at + step])
                               for at in range(0, len(q), step)] or [np.zeros(0, bool)])

    def _contains(self, q: np.ndarray) -> np.ndarray:
        block = np.searchsorted(self.fence, q, side="right") - 1
        found = np.zeros(len(q), dtype=bool)
        inside = np.flatnonzero(block >= 0)  # a key below the run's first key is not in it
        if not len(inside):
            return found
        blocks, row = np.unique(block[inside], return_inverse=True)
        # a read per block into a new bytes object, joined: less system time than reading
        # into a preallocated array (measured); sorted, so only the last block can be short
        fd, pread = self._fd, os.pread
        flat = np.frombuffer(b"".join([pread(fd, _BLOCK, at) for at in
                                       (blocks * _BLOCK).tolist()]), dtype=np.int64)
        if len(flat) != len(blocks) * FENCE - max(0, (int(blocks[-1]) + 1) * FENCE - self.n):
            raise EOFError(f"{self.path}: shorter than its {self.n} keys")
        q = q[inside]
        # lower bound of each key within its block (the last block of the run may be short)
        lo = row * FENCE
        end = np.minimum(lo + FENCE, len(flat))
        hi = end.copy()
        while True:
            open_ = lo < hi
            if not open_.any():
                break
            mid = (lo + hi) // 2
            less = open_ & (flat[np.minimum(mid, len(flat) - 1)] < q)
            lo = np.where(less, mid + 1, lo)
            hi = np.where(open_ & ~less, mid, hi)
        hit = lo < end
        hit[hit] = flat[lo[hit]] == q[hit]
        found[inside] = hit
        return found

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def _empty(table: Int64Table) -> None:
    """Empty ``table`` in place: a new table's arrays, allocated and freed at every spill, would
    be taken from the heap once the allocator has raised its threshold for mapping large blocks,
    and its freed memory is not always given back (the peak grew by a table's size a spill)."""
    table.keys.fill(0)
    table.values.fill(0)
    table.count = 0


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


__all__ = ["SpilledKeySet", "FENCE", "MIN_MEMORY_MB"]
