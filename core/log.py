"""The one channel for messages and progress of the framework, its components and trainers.

Messages go to stderr as ``bitextforge: <who>: <message>`` lines (stdout stays for results a
command prints); progress is a tqdm bar on stderr when it is a terminal, and a plain line every
:data:`PLAIN_EVERY` seconds when it is not (a log file would otherwise fill with ``\\r`` bars).
Components and trainers reach both through :meth:`bitextforge.components.base.Component.log` and
:meth:`~bitextforge.components.base.Component.progress`.
``BITEXTFORGE_QUIET=1`` silences messages and bars (results and errors still print).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

#: seconds between the plain progress lines written when stderr is not a terminal
PLAIN_EVERY = 30.0


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
    not given) per item, when stderr is a terminal; where it is not (a log file, captured output)
    :func:`plain_progress` writes a line every :data:`PLAIN_EVERY` seconds instead, so a short
    loop stays silent there. ``show``: None or True shows progress, False never; none either when
    output is quiet or there are fewer than ``minimum`` items (a short list finishes before a bar
    is worth drawing)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    if show is False or quiet() or (total is not None and total < minimum):
        yield from items
        return
    if not _stderr_is_terminal():
        yield from plain_progress(items, desc, total, unit, weight)
        return
    from tqdm import tqdm

    with tqdm(total=total, unit=unit, unit_scale=True, desc=desc, file=sys.stderr, mininterval=0.5,
              leave=show is not None, dynamic_ncols=True) as bar:
        for item in items:
            yield item
            bar.update(weight(item) if weight is not None else 1)


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def plain_progress(items: Iterable[T], desc: str = "bitextforge", total: int | None = None,
                   unit: str = " items", weight=None) -> Iterator[T]:
    """``items``, with one :func:`say` line every :data:`PLAIN_EVERY` seconds (done, of the
    total, rate, elapsed) and one at the end when any was written: progress for a log file,
    where a bar's carriage returns would pile up. A loop shorter than the interval says nothing."""
    who = "" if desc == "bitextforge" else desc
    start = last = time.monotonic()
    done = 0
    spoke = False

    def line(now: float) -> str:
        of = f" of {total:,} ({100 * done / total:.0f}%)" if total else ""
        rate = done / (now - start) if now > start else 0.0
        return f"{done:,}{unit}{of}, {rate:,.0f}{unit}/s, {now - start:.0f} s"

    for item in items:
        yield item
        done += weight(item) if weight is not None else 1
        now = time.monotonic()
        if now - last >= PLAIN_EVERY:
            say(who, line(now))
            last, spoke = now, True
    if spoke:
        say(who, line(time.monotonic()) + " (done)")


@contextmanager
def phase(who: str, what: str, every: float | None = None) -> Iterator[None]:
    """Say ``what`` (``aligning 20,000 pairs with eflomal``) as the block starts, ``still <what>
    (N s)`` every ``every`` seconds (default :data:`PLAIN_EVERY`) while it runs, and ``<what>:
    N s`` when it ends: for a long library call (an aligner, a classifier's fit) that reports
    nothing itself, so a trainer is never silent for minutes. An error ends it without a line."""
    start = time.monotonic()
    say(who, what)
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(PLAIN_EVERY if every is None else every):
            say(who, f"still {what} ({time.monotonic() - start:.0f} s)")

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
    say(who, f"{what}: {time.monotonic() - start:.1f} s")
