"""The local runner: one process, batches streamed through the steps as chained generators.

Memory does not grow with corpus size: a batch passes through every streaming step before the
next is read. A ``keep: {top, words}`` step needs every score first; it spills the batches that
reach it to a temporary file, selects, and streams them on (see ``FilterExec.apply_global``).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ..corpus import Batch
from ..steps import FilterExec


def build_stream(source: Iterable[Batch], executors: list, recipe=None) -> Iterator[Batch]:
    """Chain ``executors`` over ``source``; empty batches are dropped between steps."""
    stream: Iterator[Batch] = iter(source)
    for ex in executors:
        if isinstance(ex, FilterExec) and ex.keep.is_global:
            stream = ex.apply_global(stream)
        else:
            stream = _mapped(ex, stream)
    return stream


def _mapped(ex, stream: Iterator[Batch]) -> Iterator[Batch]:
    for batch in stream:
        out = ex(batch)
        if out["id"]:
            yield out
