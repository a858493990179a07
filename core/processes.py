"""Child processes: external tools (KenLM's ``lmplz``, ...) that stop when bitextforge stops,
however it stops, with scratch folders that do not outlive a killed run; and the worker pools
that train models side by side.

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

:func:`worker_pool` gives the processes that train models side by side, and :func:`stop_pool`
stops them at once. A spawned worker imports torch and transformers again before it trains
(about 7 s of CPU each); the pool's workers are forked instead from a server that imported them
once for the whole process, on Linux, and they still start with none of the parent's threads,
which is why spawn was chosen over a plain fork. Elsewhere they are spawned: macOS may not fork
a process that has loaded its system frameworks, as torch does.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import signal
import sys
import tempfile
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

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


#: the modules every fork server start imports: the union of what the pools asked for before it
#: started (it starts once per process, with the first pool)
_PRELOAD: set[str] = set()


class WorkerPool(ProcessPoolExecutor):
    """A :class:`~concurrent.futures.ProcessPoolExecutor` whose calls run with the environment
    and working directory the parent has when it submits them: a forked worker would otherwise
    have the fork server's, taken when the server started."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Run ``fn(*args, **kwargs)`` in a worker, with this process's current environment and
        working directory."""
        return super().submit(_call_in, dict(os.environ), os.getcwd(), fn, args, kwargs)


def _call_in(env: dict[str, str], cwd: str, fn: Callable[..., Any], args: tuple,
             kwargs: dict) -> Any:
    if os.environ != env:
        os.environ.clear()
        os.environ.update(env)
    if os.getcwd() != cwd:
        os.chdir(cwd)
    return fn(*args, **kwargs)


def worker_pool(workers: int, preload: Iterable[str] = ()) -> WorkerPool:
    """A pool of ``workers`` processes, on Linux forked from a server that has imported
    ``preload`` (module names; one that fails to import is left to the workers), elsewhere
    spawned. Stop it early with :func:`stop_pool`."""
    import multiprocessing

    if sys.platform.startswith("linux"):
        ctx = multiprocessing.get_context("forkserver")
        _PRELOAD.update(preload)
        ctx.set_forkserver_preload(sorted(_PRELOAD))  # no effect once the server runs
    else:
        ctx = multiprocessing.get_context("spawn")
    return WorkerPool(max_workers=workers, mp_context=ctx)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop a pool's work now and shut it down. On a failure, Ctrl-C or SIGTERM a pool's own
    shutdown would wait for every running job (a training may take half an hour): Python
    3.14's ``terminate_workers``, before it the pool's processes terminated one by one."""
    stop = getattr(pool, "terminate_workers", None)
    if stop is not None:
        stop()
    else:
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()
    pool.shutdown(wait=True, cancel_futures=True)
