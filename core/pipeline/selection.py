"""A corpus-wide ``keep: {top, words}`` selection in a sharded, resumable run.

The steps up to the first such step run shard by shard as in any sharded run; that step's first
pass (score, then ``min``/``max``) runs on each shard too, as a streaming step
(:class:`~bitextforge.pipeline.judging.FirstPass`: in parallel on Ray), and the rows it leaves
wait in the shard's folder: their batches in ``selection.pkl``, their scores and word counts in
``selection.npz``. A killed run resumes after its last finished shard, as any other. Once every
shard is done, the selection reads the scores shard by shard into a
:class:`~bitextforge.pipeline.decide.StreamingSelection` (its memory bounded by what can still be
kept, not by the corpus), then streams the waiting batches through the selection and the steps
after it into the run's last part, ``final/``, which the merge appends after the shards. The
output is the one-pass run's: the same rows, rejected rows and changes, in the same order.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Iterator

import numpy as np

from ..io.corpus import batch_len
from .decide import StreamingSelection
from .judging import spilled_batches
from .runners.stream import Packet

ROWS = "selection.pkl"
SCORES = "selection.npz"


def first_pass(ex, stream: Iterator[Packet], shard_dir: Path) -> Iterator[Packet]:
    """Keep the rows the selection step ``ex``'s first pass left in one shard's packets (the
    runner ran it as :class:`~bitextforge.pipeline.judging.FirstPass`: scored, within min/max)
    in ``shard_dir``; each packet goes on without rows."""
    scores: list[np.ndarray] = []
    words: list[np.ndarray] = []
    with open(shard_dir / ROWS, "wb") as spill:
        for p in stream:
            if p.error is not None:
                raise p.error
            if p.batch is not None:
                s, w = ex.selection_values(p.batch)
                pickle.dump(p.batch, spill, protocol=pickle.HIGHEST_PROTOCOL)
                scores.append(np.asarray(s, dtype=np.float64))
                if w is not None:
                    words.append(np.asarray(w, dtype=np.int64))
                p.batch = None
            yield p
    np.savez(shard_dir / SCORES,
             scores=np.concatenate(scores) if scores else np.zeros(0),
             words=np.concatenate(words) if words else np.zeros(0, dtype=np.int64))


def second_pass(ex, shard_dirs: list[Path]) -> Iterator[Packet]:
    """Select over every shard's first pass, then yield the waiting batches, shard by shard,
    with the rows the selection left out rejected."""
    selection = StreamingSelection(ex.keep)
    for d in shard_dirs:
        with np.load(d / SCORES) as saved:
            selection.add(saved["scores"], saved["words"] if ex.keep.words is not None else None)
    pending = ex.finish_selection(selection)

    def waiting():
        for d in shard_dirs:
            with open(d / ROWS, "rb") as spill:
                yield from spilled_batches(spill)

    for res in ex.selected(waiting(), selection, pending):
        ex.record(res)
        yield Packet(res.kept if batch_len(res.kept) else None, list(res.rejected))
