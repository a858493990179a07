"""The local runner: one process, batches streamed through the steps as chained generators.

Memory does not grow with corpus size: a batch passes through every streaming step before the
next is read. A ``keep: {top, words}`` step needs every score first; it spills the batches that
reach it to a temporary file, selects, and streams them on (see ``FilterExec.select``).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ..corpus import Batch
from .stream import Packet, drive, packets


def run(source: Iterable[Batch], executors: list, recipe=None) -> Iterator[Packet]:
    """Chain ``executors`` over ``source``; yield packets in input order."""
    stream: Iterator[Packet] = packets(source)
    for ex in executors:
        stream = drive(ex, stream)
    return stream
