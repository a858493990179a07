"""The runner of ``bitextforge score``: each batch through every scoring step in this process,
with nothing removed (``Executor.score_only``), one packet per batch in input order.

It is not a runner a recipe can choose; the driver (:mod:`bitextforge.pipeline.driver`) runs it as it
runs ``local`` or ``ray``.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ...io.corpus import Batch
from .stream import Packet


def run(source: Iterable[Batch], executors: list, recipe=None) -> Iterator[Packet]:
    """Score every batch of ``source`` with ``executors`` in order; yield one packet each."""
    for batch in source:
        for ex in executors:
            batch = ex.score_only(batch)
        yield Packet(batch)


def close() -> None:
    """Nothing is kept from one ``run`` to the next."""
