"""The decisions ``bitextforge serve`` has made, shared by the requests that ask for them.

Re-deciding a run is pure NumPy over stored scores: the same bounds always give the same answer.
:class:`Decisions` keeps the latest answers in a least-recently-used table keyed by the bounds'
canonical JSON, and when several requests ask for bounds that are being decided right now, one
thread decides and the others wait for its answer instead of deciding again (a page that many
people watch, or one user dragging a bound, sends the same bounds many times). It is called from
worker threads (the endpoints run decisions off the event loop), so every shared table is guarded
by one lock, held only to look up and store, never while deciding. At most :func:`deciders`
decisions run at once (each allocates a few arrays of the run's length, tens of MB at millions of
rows, and more threads than cores only share the same cores); other distinct bounds wait their
turn.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Callable

from ..recipe.load import KeepSpec
from .data import Decision, RunData

#: memory the cached decisions may take together; each holds a few bytes per row and step
CACHE_BYTES = 256 * 1024 * 1024
#: never fewer (the last few positions of a bound being dragged) nor more
MIN_ENTRIES, MAX_ENTRIES = 4, 256


def deciders() -> int:
    """How many decisions may run at once: the cores this process may use, at least 2."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(2, cores)


def canonical(keeps: dict[int, KeepSpec]) -> str:
    """The bounds as one JSON text: equal bounds give equal text, whatever order or spelling
    (``4`` or ``4.0``, a key given as null or left out) the request used."""
    return json.dumps({str(k): v.model_dump() for k, v in sorted(keeps.items())},
                      sort_keys=True)


class Entry:
    """One decision and the page's JSON text for it (rendered once per histogram axis)."""

    def __init__(self, decision: Decision):
        """Hold ``decision``; its summaries are made when first asked for."""
        self.decision = decision
        self._summaries: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def summary(self, data: RunData, axis: str) -> bytes:
        """``data.summary`` of the decision on ``axis`` as JSON text, made once."""
        with self._lock:
            done = self._summaries.get(axis)
        if done is None:
            done = json.dumps(data.summary(self.decision, axis=axis), ensure_ascii=False,
                              allow_nan=False, separators=(",", ":")).encode("utf-8")
            with self._lock:
                done = self._summaries.setdefault(axis, done)
        return done


class Decisions:
    """A thread-safe, bounded table of decisions by bounds, with identical requests coalesced."""

    def __init__(self, data: RunData,
                 decide: Callable[[dict[int, KeepSpec]], Decision] | None = None):
        """Decide over ``data`` (with ``decide``, default ``data.decide``); the table holds as many
        decisions as fit :data:`CACHE_BYTES` at this run's size."""
        self.data = data
        self._decide = decide or data.decide
        n_filters = sum(1 for st in data.steps if st.decides)
        per_entry = max(1, data.n * (4 + 1 + n_filters))  # rejected_at, unscored, entered
        self.capacity = max(MIN_ENTRIES, min(MAX_ENTRIES, CACHE_BYTES // per_entry))
        self._done: OrderedDict[str, Entry] = OrderedDict()
        self._running: dict[str, Future] = {}
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(deciders())
        #: how many decisions were made (not found in the table nor waited for): for tests
        self.made = 0

    def get(self, keeps: dict[int, KeepSpec]) -> Entry:
        """The entry for ``keeps``: from the table, from the thread deciding it now, or decided
        here (blocking: call it from a worker thread, not the event loop)."""
        key = canonical(keeps)
        with self._lock:
            entry = self._done.get(key)
            if entry is not None:
                self._done.move_to_end(key)
                return entry
            running = self._running.get(key)
            if running is None:
                mine: Future = Future()
                self._running[key] = mine
        if running is not None:
            return running.result()  # the deciding thread's answer, or its exception
        try:
            with self._slots:
                entry = Entry(self._decide(keeps))
        except BaseException as exc:
            with self._lock:
                del self._running[key]
            mine.set_exception(exc)
            raise
        with self._lock:
            self.made += 1
            self._done[key] = entry
            while len(self._done) > self.capacity:
                self._done.popitem(last=False)
            del self._running[key]
        mine.set_result(entry)
        return entry
