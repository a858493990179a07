"""What runners move between steps, and the two ways a step is driven in this process.

A :class:`Packet` is one reader batch on its way through the steps: the rows still kept (None once
a step emptied it), every row rejected on the way in the order the steps rejected them, every text
a clean step changed, and the
counters of steps that ran elsewhere (Ray workers), which the driver adds to its executors when
the packet arrives. Both runners yield packets in input order; the sink writes each packet's
rejected rows, its changes, then its kept rows, so every runner writes the same files.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Iterable, Iterator, TypeVar

from ...io.corpus import Batch, batch_len
from ..executors import Changed, Executor, Rejected, StepResult

T = TypeVar("T")


@dataclass
class Packet:
    """One batch in flight, with what happened to it so far."""

    batch: Batch | None
    rejected: list[Rejected] = field(default_factory=list)
    counters: list[tuple[int, StepResult]] = field(default_factory=list)
    error: BaseException | None = None  # a worker's BitextforgeError, raised by the driver
    changed: list[Changed] = field(default_factory=list)  # clean steps' changes, for cleaned.tsv
    #: ``(step index, devices)`` of a Ray worker's components, sent with the first packet each
    #: worker runs, so the manifest says where the step ran (not where the driver's copy did)
    devices: list[tuple[int, list[str]]] = field(default_factory=list)


def packets(source: Iterable[Batch]) -> Iterator[Packet]:
    """Wrap the reader's batches."""
    return (Packet(b) for b in source)


def stream_step(ex: Executor, stream: Iterator[Packet]) -> Iterator[Packet]:
    """Run a streaming step on each packet in this process; an emptied batch travels on as
    ``None`` so its rejected rows still reach the sink in order."""
    for p in stream:
        if p.error is not None:
            raise p.error
        if p.batch is None:
            yield p
            continue
        res = ex.run(p.batch)
        ex.record(res)
        p.rejected.extend(res.rejected)
        p.changed.extend(res.changed)
        p.batch = res.kept if batch_len(res.kept) else None
        yield p


def select_step(ex: Executor, stream: Iterator[Packet]) -> Iterator[Packet]:
    """Run a corpus-wide selection (``keep: {top, words}``) in this process.

    The first pass consumes every upstream packet; what those packets carry and this step's
    min/max rejections leave with the first selected batch, before any row of it is written,
    which is where a single pass through the steps would have written them.
    """
    held: list[Rejected] = []
    counters: list[tuple[int, StepResult]] = []
    changed: list[Changed] = []

    def feed() -> Iterator[Batch]:
        for p in stream:
            if p.error is not None:
                raise p.error
            held.extend(p.rejected)
            counters.extend(p.counters)
            changed.extend(p.changed)
            if p.batch is not None:
                yield p.batch

    for res in ex.select(feed()):  # type: ignore[attr-defined]
        ex.record(res)
        held.extend(res.rejected)
        if res.kept is None:  # the scoring pass
            continue
        out = Packet(res.kept if batch_len(res.kept) else None, held[:], counters[:],
                     changed=changed[:])
        held.clear()
        counters.clear()
        changed.clear()
        yield out
    if held or counters or changed:
        yield Packet(None, held[:], counters[:], changed=changed[:])


def drive(ex: Executor, stream: Iterator[Packet]) -> Iterator[Packet]:
    """Run one step in this process, streaming or selecting as the step needs."""
    return select_step(ex, stream) if ex.needs_all_rows else stream_step(ex, stream)


class _Failed:
    """An exception raised in a producer thread, carried to the consumer."""

    def __init__(self, exc: BaseException):
        self.exc = exc


_END = object()


def ahead(items: Iterator[T], depth: int, name: str = "bitextforge-ahead") -> Iterator[T]:
    """Iterate ``items`` in a thread of its own, at most ``depth`` items ahead of the consumer.

    Items arrive in order; an exception of the producer is raised in the consumer. When the
    consumer stops early, the producer stops at its next item. The point is overlap: while one
    thread waits in native code that releases the GIL (a model loading, a Rust or torch call),
    the others run Python.
    """
    q: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(_END)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer's thread
            put(_Failed(exc))
        finally:  # the upstream generators run their clean-up in this thread, not at exit
            close = getattr(items, "close", None)
            if close is not None:
                close()

    threading.Thread(target=produce, name=name, daemon=True).start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.exc
            yield item
    finally:
        stop.set()
