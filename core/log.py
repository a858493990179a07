"""The one channel for messages and progress of the framework, its components and trainers.

Messages go to stderr as ``bitextforge: <who>: <message>`` lines (stdout stays for results a
command prints); progress is a tqdm bar on stderr. Components and trainers reach both through
:meth:`bitextforge.components.Component.log` and :meth:`~bitextforge.components.Component.progress`.
``BITEXTFORGE_QUIET=1`` silences messages and bars (results and errors still print).
"""

from __future__ import annotations

import os
import sys
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def quiet() -> bool:
    """True when ``BITEXTFORGE_QUIET`` asks for silence."""
    return os.environ.get("BITEXTFORGE_QUIET", "") not in ("", "0")


def say(who: str, message: str) -> None:
    """Print one message line for ``who`` (a component name, ``prepare[0] nmt_model.v1``, ...)."""
    if quiet():
        return
    for line in str(message).splitlines() or [""]:
        print(f"bitextforge: {who}: {line}" if who else f"bitextforge: {line}", file=sys.stderr,
              flush=True)


def progress(items: Iterable[T], desc: str = "bitextforge", total: int | None = None,
             unit: str = " items", minimum: int = 0, show: bool | None = None,
             weight=None) -> Iterator[T]:
    """``items`` behind a tqdm bar named ``desc`` on stderr, advanced by ``weight(item)`` (1 when
    not given) per item. ``show``: None draws the bar only when stderr is a terminal (logs and
    captured output stay clean), True always, False never; no bar either when output is quiet or
    there are fewer than ``minimum`` items (a short list finishes before a bar is worth drawing)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    if show is False or quiet() or (total is not None and total < minimum):
        yield from items
        return
    from tqdm import tqdm

    with tqdm(total=total, unit=unit, unit_scale=True, desc=desc, file=sys.stderr,
              disable=None if show is None else False, mininterval=0.5,
              leave=show is not None, dynamic_ncols=True) as bar:
        for item in items:
            yield item
            bar.update(weight(item) if weight is not None else 1)
