"""Progress bars for long commands (test-set translation, evaluators, training), on stderr and
only when stderr is a terminal, so logs and captured output stay clean."""

from __future__ import annotations

import sys
from typing import Iterable, TypeVar

T = TypeVar("T")


def progress(items: Iterable[T], desc: str, total: int | None = None, unit: str = " items",
             minimum: int = 0) -> Iterable[T]:
    """``items`` with a tqdm bar named ``desc`` when stderr is a terminal and there are at least
    ``minimum`` of them (a short list finishes before a bar is worth drawing)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    if total is not None and total < minimum:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, total=total, unit=unit, unit_scale=True, file=sys.stderr,
                disable=None, mininterval=0.5, leave=False, dynamic_ncols=True)
