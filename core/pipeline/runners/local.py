"""The local runner: one process, batches streamed through the steps as chained generators.

Memory does not grow with corpus size: a batch passes through every streaming step before the
next is read. A ``keep: {top, words}`` step needs every score first; it spills the batches that
reach it to a temporary file, selects, and streams them on (see ``FilterExec.select``).

A step whose component ``releases_gil`` (its work runs in native code: heliport, torch) runs in a
thread of its own, and so do the reader and the steps before it, joined by bounded queues: while
that step waits for its model to load or scores a batch, the reader and the other steps go on.
Each thread handles the batches in input order, so the output is the same; ``runner.run`` is
drained per shard before any state is saved, so resuming is unaffected.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ...io.corpus import Batch
from .stream import Packet, ahead, drive, packets

#: rows a thread may run ahead of the next one (about 50 MB of typical text)
AHEAD_ROWS = 250_000


def run(source: Iterable[Batch], executors: list, recipe=None) -> Iterator[Packet]:
    """Chain ``executors`` over ``source``; yield packets in input order."""
    depth = max(2, AHEAD_ROWS // (recipe.batch_size if recipe is not None else 5000))
    stream: Iterator[Packet] = packets(source)
    threaded = False  # whether ``stream`` already comes out of a thread of its own
    for ex in executors:
        if ex.comp.releases_gil:
            if not threaded:
                stream = ahead(stream, depth, "bitextforge-upstream")
            stream = ahead(drive(ex, stream), depth, f"bitextforge-{ex.label}")
            threaded = True
        else:
            stream = drive(ex, stream)
            threaded = False
    return stream


def close() -> None:
    """Nothing is kept from one ``run`` to the next."""
