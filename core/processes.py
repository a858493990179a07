"""External tools run as child processes (KenLM's ``lmplz``, ...): they stop when bitextforge
stops, however it stops, and their scratch folders do not outlive a killed run.

A child started with :func:`die_with_parent` as its ``preexec_fn`` is sent SIGKILL by the kernel
when the bitextforge process ends, ``kill -9`` included (Linux's ``PR_SET_PDEATHSIG``; elsewhere
it is a no-op and only a clean stop ends the child). Without it, ``lmplz`` reads the end of its
closed input as the end of the text and goes on estimating a model nobody will read.

:func:`scratch_dir` makes a temporary folder named after the process that owns it
(``<prefix><pid>-XXXXXXXX``) and removes the folders of the same prefix whose owner is no longer
running: what a ``kill -9`` left behind is swept by the next run that needs one.

:func:`release_free_memory` hands the heap's free pages back to the system. A long-running
worker that scores millions of rows frees as much as it allocates, yet glibc keeps the freed
pages between live allocations: a classifier worker's RSS rose about 130 bytes a line over a
10M-line run with no growth in live Python objects; one trimmed every 50,000 rows stayed flat
over 250,000 (the rest of its growth over a whole 10M-line run was the language-ID memos, now
bounded: :class:`~bitextforge.cache.memo.TextScoreMemo`). The runners call it between batches
and shards.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import signal
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

#: prctl's option that asks for a signal when the parent dies (linux/prctl.h)
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """``preexec_fn`` for :class:`subprocess.Popen`: the child is killed when this process dies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # without prctl the child ends only when bitextforge stops cleanly


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None  # not glibc (macOS, musl): nothing to hand back this way


def release_free_memory() -> bool:
    """Return the free pages of the C heap to the system (glibc's ``malloc_trim(0)``); False
    where the C library has no such call. It costs a walk over the heap: milliseconds."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process holds that pid
    return True


def sweep_stale(prefix: str, where: str | os.PathLike | None = None) -> list[Path]:
    """Remove the folders ``<prefix><pid>-*`` in ``where`` (the temporary directory) whose owning
    process is gone; return what was removed."""
    root = Path(where or tempfile.gettempdir())
    removed = []
    for d in root.glob(f"{prefix}*-*"):
        pid = d.name[len(prefix):].split("-", 1)[0]
        if d.is_dir() and pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


@contextmanager
def scratch_dir(prefix: str, where: str | os.PathLike | None = None) -> Iterator[Path]:
    """A temporary folder ``<prefix><pid>-XXXXXXXX`` removed on leaving, after sweeping the ones
    killed runs left (:func:`sweep_stale`)."""
    sweep_stale(prefix, where)
    d = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=where))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
