"""Filter decisions: the one place that says which rows a filter step's ``keep`` accepts.

A filter step scores rows and then decides: rows outside its scope (``apply_to``) pass with an
empty score; ``min``/``max`` bound the others (inclusive, NaN fails); ``top``/``words`` then select
the best of the survivors over the whole corpus (``order`` highest or lowest, ties kept in stream
order, words counted on ``words_side``). The run's executors (:mod:`bitextforge.pipeline.executors`),
``bitextforge score`` (:mod:`bitextforge.pipeline.scoring`) and ``bitextforge serve``
(:mod:`bitextforge.serve.data`) all decide with these functions, so the three agree by
construction.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..recipe.step_models import KeepSpec
from ..text_facts import token_counts


def within_bounds(keep: KeepSpec, scores):
    """Which scores pass ``keep``'s min/max (inclusive; NaN fails).

    ``scores`` is either a list, where ``None`` marks a row outside the step's scope (it passes), as
    the streaming runner sees a batch; or a float NumPy array, compared as a whole (the caller
    decides which rows are in scope).
    """
    lo = -math.inf if keep.min is None else keep.min
    hi = math.inf if keep.max is None else keep.max
    if hasattr(scores, "dtype"):
        with np.errstate(invalid="ignore"):
            return (scores >= lo) & (scores <= hi)
    return [s is None or (lo <= s <= hi) for s in scores]


def scope_rows(apply_to: str, variant: list[int], origin: list[str] | None = None,
               origins: list[str] | None = None) -> list[int] | None:
    """Positions of the rows a step with ``apply_to`` (and ``origins``: the inputs whose rows
    it decides, e.g. only the back-translated ones) decides, given each row's ``variant`` and
    ``origin`` (None: every row, so the caller can skip selecting them)."""
    if apply_to == "all" and origins is None:
        return None
    want = set(origins) if origins is not None else None
    want_orig = apply_to == "originals"
    return [i for i, v in enumerate(variant)
            if (apply_to == "all" or (v == 0) == want_orig)
            and (want is None or origin[i] in want)]  # type: ignore[index]


def in_scope(apply_to: str, variant: np.ndarray, origin=None,
             origins: list[str] | None = None) -> np.ndarray:
    """:func:`scope_rows` as a boolean mask over a NumPy array of variants (and a sequence of
    origins)."""
    if apply_to == "originals":
        mask = variant == 0
    elif apply_to == "paraphrases":
        mask = variant != 0
    else:
        mask = np.ones(len(variant), dtype=bool)
    if origins is not None:
        want = set(origins)
        mask &= np.fromiter((o in want for o in origin), dtype=bool, count=len(variant))
    return mask


def count_words(src: list[str], tgt: list[str], side: str) -> np.ndarray:
    """Whitespace tokens per row on ``side`` (``src``, ``tgt`` or ``both``), what ``keep.words``
    counts, as an int64 array (:func:`bitextforge.text_facts.token_counts`, shared with the steps that
    count the same columns)."""
    if side == "both":
        return token_counts(src) + token_counts(tgt)
    return token_counts(src if side == "src" else tgt)


def select_global(keep: KeepSpec, scores: np.ndarray, words=None) -> np.ndarray:
    """The ``top``/``words`` selection over every score of a step, as a boolean NumPy mask.

    ``scores`` (float64, in stream order) marks rows outside the step's scope with ``+inf``: they
    are always kept. NaN is never selected; ties keep stream order. ``words`` holds each row's
    word count on ``keep.words_side`` when ``keep.words`` is set.
    """
    s = scores
    n = len(s)
    selected = np.zeros(n, dtype=bool)
    fixed = np.isinf(s) & (s > 0)  # out of scope: always kept
    selected[fixed] = True
    cand = np.flatnonzero(~fixed & ~np.isnan(s))
    key = -s[cand] if keep.order == "highest" else s[cand]
    order = cand[np.argsort(key, kind="stable")]
    if keep.top is not None:
        count = int(keep.top * len(cand) + 0.5) if keep.top < 1 else int(keep.top)
        order = order[:count]
    if keep.words is not None:
        w = np.asarray(words, dtype=np.int64)[order]
        order = order[np.cumsum(w) <= keep.words]
    selected[order] = True
    return selected


def selection_cut(keep: KeepSpec, scores: np.ndarray, words, selected: np.ndarray
                  ) -> dict[str, Any]:
    """Where a top/words selection cut (the manifest's ``effective_threshold``): the decision,
    the candidates and rows selected, the score of the last row kept and, for ``words``, the
    words kept. Arguments as :func:`select_global` took them, and what it returned."""
    cand = ~(np.isinf(scores) & (scores > 0)) & ~np.isnan(scores)
    chosen = selected & cand
    decision = ", ".join(([f"top {keep.top:g}"] if keep.top is not None else []) +
                         ([f"words {keep.words}"] if keep.words is not None else []))
    picked = scores[chosen]
    cut: dict[str, Any] = {"decision": decision, "order": keep.order,
                           "candidates": int(cand.sum()), "selected": int(chosen.sum()),
                           "score": (float(picked.min() if keep.order == "highest"
                                           else picked.max()) if len(picked) else None)}
    if keep.words is not None:
        cut["words"] = int(np.asarray(words, dtype=np.int64)[chosen].sum())
    return cut


def decide_rows(keep: KeepSpec, scores: np.ndarray, scoped: np.ndarray, alive: np.ndarray,
                words: np.ndarray | None = None) -> tuple[np.ndarray, dict[str, Any] | None]:
    """One filter step over whole columns: which of the ``alive`` rows (those that reach the
    step) it keeps, and the cut of a top/words selection (None for min/max only).

    Rows outside ``scoped`` pass; the others must lie within min/max, then ``top``/``words``
    selects among the alive survivors, rows outside the scope entering as ``+inf`` (always kept),
    as the runner's spill pass does. ``words`` is every row's word count when ``keep.words`` is
    set. The result is False for every row not alive.
    """
    ok = alive & (~scoped | within_bounds(keep, scores))
    if not keep.is_global:
        return ok, None
    pool = np.flatnonzero(ok)
    sub = np.where(scoped[pool], scores[pool], np.inf)
    w = np.asarray(words, dtype=np.int64)[pool] if keep.words is not None else None
    sel = select_global(keep, sub, w)
    ok = np.zeros(len(ok), dtype=bool)
    ok[pool[sel]] = True
    return ok, selection_cut(keep, sub, w, sel)


class StreamingSelection:
    """The ``top``/``words`` selection of :func:`select_global`, fed in stream order a chunk at
    a time, holding only the rows that can still be selected.

    A row ranked below the best ``top`` rows seen so far, or past the ``words`` budget of the
    rows ranked above it, stays out whatever comes later (every later row can only push it
    further down), so the candidates are cut back to those whenever they double. Memory is
    24 bytes a candidate still in the running: bounded by ``top`` (a count) and by the rows
    that fit in ``words``, not by the corpus; only ``top`` as a fraction without ``words``
    keeps every candidate, its count being known at the end. Rows marked ``+inf``
    (out of scope) are always kept and not held: :meth:`mask` recognises them again.
    """

    #: candidates held before the first cut (the cut costs a sort of what is held)
    MIN_HOLD = 1 << 16

    def __init__(self, keep: KeepSpec):
        """Select as ``keep`` says."""
        self.keep = keep
        self.rows = 0          # rows fed, candidates or not
        self.candidates = 0    # rows neither +inf nor NaN
        self._pos = np.zeros(0, dtype=np.int64)
        self._key = np.zeros(0, dtype=np.float64)
        self._words = np.zeros(0, dtype=np.int64)
        self._cap = self.MIN_HOLD
        self._count = (int(keep.top) if keep.top is not None and keep.top >= 1 else None)
        self._selected: np.ndarray | None = None
        #: the key of the best row a cut left out for ``words``: it overflowed the budget with
        #: the rows ranked above it, so every row ranked after it (a later row with a key not
        #: below it) is out too, even where the rows held would leave room
        self._barrier: float | None = None

    def add(self, scores, words=None) -> None:
        """Feed the next rows' scores (float, ``+inf`` for rows always kept) and, with
        ``keep.words``, their word counts."""
        s = np.asarray(scores, dtype=np.float64)
        cand = np.flatnonzero(~(np.isinf(s) & (s > 0)) & ~np.isnan(s))
        self.candidates += len(cand)
        if len(cand):
            key = -s[cand] if self.keep.order == "highest" else s[cand]
            if self._barrier is not None:
                inside = key < self._barrier
                cand, key = cand[inside], key[inside]
            w = (np.asarray(words, dtype=np.int64)[cand] if self.keep.words is not None
                 else np.zeros(len(cand), dtype=np.int64))
            self._pos = np.concatenate([self._pos, cand + self.rows])
            self._key = np.concatenate([self._key, key])
            self._words = np.concatenate([self._words, w])
        self.rows += len(s)
        if len(self._pos) > self._cap and (self._count is not None or self.keep.words is not None):
            self._cut()
            self._cap = max(self.MIN_HOLD, 2 * len(self._pos))

    def _cut(self, count: int | None = None) -> None:
        """Sort what is held (score, then stream order) and keep only what can still be
        selected: the best ``count`` rows, then the prefix within the words budget."""
        order = np.lexsort((self._pos, self._key))
        count = self._count if count is None else count
        if count is not None:
            order = order[:count]
        if self.keep.words is not None:
            fits = np.cumsum(self._words[order]) <= self.keep.words
            if not fits.all():
                first_out = float(self._key[order[np.argmin(fits)]])
                self._barrier = (first_out if self._barrier is None
                                 else min(self._barrier, first_out))
            order = order[fits]
        self._pos, self._key, self._words = self._pos[order], self._key[order], self._words[order]

    def finish(self) -> dict[str, Any]:
        """End the feed; return the cut (:func:`selection_cut`'s record)."""
        keep = self.keep
        count = None
        if keep.top is not None:
            count = (int(keep.top * self.candidates + 0.5) if keep.top < 1 else int(keep.top))
        self._cut(count)
        self._selected = np.sort(self._pos)
        decision = ", ".join(([f"top {keep.top:g}"] if keep.top is not None else []) +
                             ([f"words {keep.words}"] if keep.words is not None else []))
        last = None
        if len(self._key):
            last = float(self._key.max())
            last = -last if keep.order == "highest" else last
        cut: dict[str, Any] = {"decision": decision, "order": keep.order,
                               "candidates": int(self.candidates),
                               "selected": int(len(self._pos)), "score": last}
        if keep.words is not None:
            cut["words"] = int(self._words.sum())
        return cut

    def mask(self, start: int, scores) -> np.ndarray:
        """Which of the rows ``start`` to ``start + len(scores)`` of the stream are selected
        (after :meth:`finish`); ``scores`` are those rows' scores as fed."""
        s = np.asarray(scores, dtype=np.float64)
        out = np.isinf(s) & (s > 0)
        sel = self._selected
        lo, hi = np.searchsorted(sel, [start, start + len(s)])
        out[sel[lo:hi] - start] = True
        return out
