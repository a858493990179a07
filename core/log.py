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


def progress(items: Iterable[T], total: int | None = None, desc: str = "bitextforge",
             unit: str = " rows", show: bool = True, weight=None) -> Iterator[T]:
    """Pass ``items`` through, advancing a tqdm bar on stderr by ``weight(item)`` (1 when not
    given) per item; no bar when ``show`` is false or output is quiet."""
    if not show or quiet():
        yield from items
        return
    from tqdm import tqdm

    with tqdm(total=total, unit=unit, unit_scale=True, desc=desc, file=sys.stderr,
              dynamic_ncols=True, mininterval=0.5) as bar:
        for item in items:
            yield item
            bar.update(weight(item) if weight is not None else 1)
