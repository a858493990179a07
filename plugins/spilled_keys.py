"""A set of 64-bit keys whose memory stays under a bound however many keys it holds: the keys
``dedupe.v1`` has seen, with ``max_memory_mb``.

The newest keys sit in an in-memory hash table of fixed size (:class:`~bitextforge.cache.memo.
Int64Table`, 16 bytes a slot, at most half full). When it is full its keys are sorted and written
to a *run*, a file of sorted int64 keys (8 bytes a key on disk), and the table starts empty. Two
runs of similar size are merged into one (chunk by chunk, so a merge holds a bounded number of
keys), so a set of ``n`` keys has about ``log2(n / table keys)`` runs. A key is looked up in the
table, then in each run: an in-memory index holds every :data:`FENCE`-th key of a run (1/64 of a
byte a key), which names the one disk page where the key can be; that page is read through a
memory map, whose pages are released from the process after every lookup (they stay in the
kernel's page cache), so the resident memory is the table, the merge buffers and the indexes.

The answers are those of one in-memory set: a key is present iff it was added before.
"""

from __future__ import annotations

import mmap
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
#: keys looked up in a run at a time: the kernel maps up to 16 pages around each page read
#: (fault-around), so up to 32 pages a key are mapped meanwhile (16 MB)
_QUERIES = 128
#: the smallest bound accepted (the table and the merge buffers need a few MB)
MIN_MEMORY_MB = 8


class SpilledKeySet:
    """A set of non-zero int64 keys held in a fixed table of ``memory_mb`` / 2 MB, merge chunks
    of ``memory_mb`` / 8 MB and the runs' indexes (16 bytes per thousand keys), spilling sorted
    runs into a folder made in ``directory``."""

    def __init__(self, memory_mb: int, directory: str | None = None):
        """Size the table and the merge chunks from ``memory_mb`` (half each); the spill folder
        is made at the first spill."""
        budget = max(int(memory_mb), MIN_MEMORY_MB) << 20
        # the table: the largest power of two of 16-byte slots in half the budget, kept at most
        # half full so it never grows
        bits = (budget // 2 // 16).bit_length() - 1
        self.table = Int64Table(bits)
        self.capacity = (1 << bits) // 2
        # a merge holds two input chunks, their pages in the map, and their merged output (up
        # to both): six chunks, in an eighth of the budget (what the allocator keeps of freed
        # buffers comes on top)
        self.chunk = max(budget // 8 // 8 // 6, FENCE)
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
            found[left] = run.contains(keys[left])
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
        return np.concatenate([self.table.stored(), *(np.asarray(r.keys) for r in self.runs)])

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
                x, y = np.array(a.keys[i:i + c]), np.array(b.keys[j:j + c])
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
                a.release()
                b.release()
        for run in (a, b):
            run.close()
            if any(str(run.path) in s for s in self._saved):
                self._merged_away.add(str(run.path))
            else:
                _unlink(run.path)
        return _Run(path, a.n + b.n, np.concatenate(fences))


class _Run:
    """One file of sorted keys, memory-mapped, with every :data:`FENCE`-th key in memory."""

    def __init__(self, path: Path, n: int, fence: np.ndarray | None = None):
        """Map the ``n`` keys of ``path``; ``fence``: its every :data:`FENCE`-th key when the
        writer kept them, else read here a chunk at a time."""
        self.path = path
        self.n = n
        self._file = open(path, "rb")
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if n else None
        if self._map is not None:
            self._map.madvise(mmap.MADV_RANDOM)  # lookups jump: no read-ahead
        self.keys = (np.frombuffer(self._map, dtype=np.int64, count=n) if n
                     else np.zeros(0, dtype=np.int64))
        if fence is None:
            parts = [np.zeros(0, dtype=np.int64)]
            for at in range(0, n, _READ):  # _READ is a multiple of FENCE
                parts.append(self.keys[at:at + _READ:FENCE].copy())
                self.release()
            fence = np.concatenate(parts)
        self.fence = fence

    def contains(self, q: np.ndarray) -> np.ndarray:
        """Whether each key of ``q`` is in the run: its fence block found in memory, then a
        binary search within the block (one page) through the map, :data:`_QUERIES` keys at a
        time (each touches a page or two, given back after each slice)."""
        return np.concatenate([self._contains(q[at:at + _QUERIES])
                               for at in range(0, len(q), _QUERIES)] or [np.zeros(0, bool)])

    def _contains(self, q: np.ndarray) -> np.ndarray:
        block = np.searchsorted(self.fence, q, side="right") - 1
        lo = np.maximum(block, 0) * FENCE
        hi = np.minimum(lo + FENCE, self.n)
        lo[block < 0] = hi[block < 0] = 0
        # lower bound of q in keys[lo:hi], all keys at once
        while True:
            open_ = lo < hi
            if not open_.any():
                break
            mid = (lo + hi) // 2
            v = self.keys[np.minimum(mid, self.n - 1)]
            less = open_ & (v < q)
            lo = np.where(less, mid + 1, lo)
            hi = np.where(open_ & ~less, mid, hi)
        found = (block >= 0) & (lo < self.n)
        found[found] = self.keys[lo[found]] == q[found]
        self.release()
        return found

    def release(self) -> None:
        """Give the pages read so far back (they stay in the page cache): the process's
        resident memory does not grow with the run."""
        if self._map is not None:
            self._map.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        """Unmap and close the file."""
        self.keys = np.zeros(0, dtype=np.int64)
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # a view of the map is still alive; it goes with it
                pass
            self._map = None
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
