"""The executors of the steps that judge or change rows in place: a filter step scores and
decides (streaming for ``min``/``max``, two passes over a spill file for the corpus-wide
``top``/``words``), a weight step replaces each group by weighted rows (Nichols et al., section
4.2), a clean step changes text and returns each change it made (:class:`Changed`)."""

from __future__ import annotations

import math
import pickle
import tempfile
import time
from typing import Any, Iterable, Iterator

from ..components.base import Cleaner, Filter, Weighter
from ..io.corpus import Batch, batch_len, take_rows
from .decide import StreamingSelection, count_words, scope_rows, within_bounds
from ..errors import ComponentError
from ..recipe.step_models import CleanStep, FilterStep, KeepSpec
from .execution import Executor, as_scores, component_call, group_bounds
from .results import Changed, Rejected, StepResult


class FirstPass:
    """A top/words filter step's first pass as a streaming step, for a sharded run: each batch
    is scored and bounded by min/max wherever the runner runs streaming steps (a thread of its
    own, or Ray actors), and the rows within go on with their scores to the selection
    (:mod:`bitextforge.pipeline.selection`). Everything but :attr:`needs_all_rows` is the step's
    own."""

    needs_all_rows = False

    def __init__(self, ex: "FilterExec"):
        """Wrap the step's executor."""
        self.ex = ex

    def __getattr__(self, name: str):
        return getattr(self.ex, name)


def spilled_batches(fh) -> Iterator[Batch]:
    """The batches pickled one after another into the open file ``fh``, from where it stands to
    its end (the rows a top/words step's first pass left)."""
    while True:
        try:
            yield pickle.load(fh)
        except EOFError:
            return


class FilterExec(Executor):
    """Scores rows with a Filter and applies the step's ``keep`` decision."""

    kind = "filter"
    decides = True
    comp: Filter
    step: FilterStep

    def __init__(self, index: int, step: FilterStep, comp: Filter):
        """Bind the step's options to a built component."""
        super().__init__(index, step, comp)
        self.keep: KeepSpec = step.keep  # type: ignore[assignment]
        self.col = step.score_column()
        self.cache_hits = 0
        self.cache_misses = 0
        use_cache = comp.cache_scores if step.cache is None else step.cache
        self.cache = None
        # validation refused a step's cache: true here; a filter's own default gives way
        if use_cache and comp.uncacheable(comp.config) is None:
            from ..cache.scores import ScoreCache

            self.cache = ScoreCache(comp, self.col)

    @property
    def needs_all_rows(self) -> bool:
        """True for ``keep: {top, words}``."""
        return self.keep.is_global

    def close(self) -> None:
        """Close the score cache; its hit counts go to the manifest."""
        if self.cache is not None:
            self.stats.extra["score_cache"] = {"file": str(self.cache.path), "hits": self.cache_hits,
                                               "computed": self.cache_misses}
            self.cache.close()
            self.cache = None

    def columns(self) -> list[str]:
        """Columns this step adds."""
        return [self.col]

    def record(self, result: StepResult) -> None:
        """Add counters and cache lookups."""
        super().record(result)
        self.cache_hits += result.cache_hits
        self.cache_misses += result.cache_misses

    def _score(self, batch: Batch):
        with component_call(self.label, "score()", batch):
            if self.cache is not None:
                return self.cache.score(batch, self.comp.score)
            return self.comp.score(batch)

    def scores(self, batch: Batch) -> list:
        """Score a batch (only the rows in scope); out-of-scope rows get ``None``."""
        return self._scored(batch)[0]

    def _scored(self, batch: Batch) -> tuple[list, Any]:
        """The scores as :meth:`scores` returns them and, when every row is in scope, the same
        scores as a float NumPy array (None otherwise) for deciding without a loop over rows."""
        n = batch_len(batch)
        scope = scope_rows(self.step.apply_to, batch["variant"], batch["origin"],
                           self.step.origins)
        if scope is None:
            raw = self._score(batch) if n else []
            if len(raw) != n:
                raise ComponentError(f"{self.label}: score() returned {len(raw)} scores for "
                                     f"{n} rows")
            import numpy as np

            if getattr(getattr(raw, "dtype", None), "kind", None) in ("b", "i", "u", "f"):
                arr = raw.astype(float)
                return arr.tolist(), arr
            values = as_scores(raw, self.label)
            return values, np.array(values, dtype=float)
        sub = take_rows(batch, scope)
        raw = self._score(sub) if scope else []
        if len(raw) != len(scope):
            raise ComponentError(f"{self.label}: score() returned {len(raw)} scores for "
                                 f"{len(scope)} rows")
        out: list = [None] * n
        for i, s in zip(scope, as_scores(raw, self.label)):
            out[i] = s
        return out, None

    def score_only(self, batch: Batch) -> Batch:
        """The batch with its score column; nothing decided."""
        t0 = time.perf_counter()
        batch[self.col] = self.scores(batch)
        self.stats.seconds += time.perf_counter() - t0
        return batch

    def _split(self, batch: Batch, mask, why: str, res: StepResult) -> Batch:
        """Keep the rows ``mask`` (a list of bools or a boolean NumPy array) marks, and record
        the others in ``res`` as rejected."""
        if hasattr(mask, "dtype"):
            if mask.all():
                return batch
            import numpy as np

            keep = np.flatnonzero(mask).tolist()
            drop = np.flatnonzero(~mask).tolist()
        else:
            if all(mask):
                return batch
            keep = [i for i, m in enumerate(mask) if m]
            drop = [i for i, m in enumerate(mask) if not m]
        col = batch[self.col]
        res.rows_rejected += len(drop)
        reasons = None
        if self.comp.explains:
            reasons = [self.comp.reason(col[i]) for i in drop]
            for r in reasons:
                res.counts[f"rejected_by:{r}"] = res.counts.get(f"rejected_by:{r}", 0) + 1
        res.rejected.append(Rejected(take_rows(batch, drop), f"{self.label}{why}",
                                     [col[i] for i in drop], reasons))
        return take_rows(batch, keep)

    def _bounded(self, batch: Batch) -> StepResult:
        """Score one batch and apply min/max."""
        t0 = time.perf_counter()
        h0, m0 = (self.cache.hits, self.cache.misses) if self.cache is not None else (0, 0)
        res = StepResult(None, rows_in=batch_len(batch))
        scores, values = self._scored(batch)
        if self.cache is not None:
            res.cache_hits, res.cache_misses = self.cache.hits - h0, self.cache.misses - m0
        batch[self.col] = scores
        mask = within_bounds(self.keep, values if values is not None else scores)
        res.kept = self._split(batch, mask, "", res)
        res.seconds = time.perf_counter() - t0
        return res

    def run(self, batch: Batch) -> StepResult:
        """Streaming decision (min/max only). For a top/words step this is the streaming half of
        its first pass (:class:`FirstPass`): the rows within min/max go on with their scores,
        and the selection counts the rows it keeps."""
        res = self._bounded(batch)
        res.rows_out = 0 if self.keep.is_global else batch_len(res.kept)
        return res

    def select(self, stream: Iterable[Batch]) -> Iterator[StepResult]:
        """Two passes for top/words: score everything into a spill file, then select.

        The first pass yields one result per batch with ``kept=None`` (its min/max rejections and
        counters; the kept rows wait in the spill file); the second yields the selected batches.
        A sharded run does the same a shard at a time (:mod:`bitextforge.pipeline.selection`).
        """
        selection = StreamingSelection(self.keep)
        with tempfile.TemporaryFile(prefix="bitextforge-spill-") as spill:
            for batch in stream:
                res, kept, scores, words = self.first_pass(batch)
                pickle.dump(kept, spill, protocol=pickle.HIGHEST_PROTOCOL)
                selection.add(scores, words)
                yield res
            pending = self.finish_selection(selection)
            spill.seek(0)
            yield from self.selected(spilled_batches(spill), selection, pending)

    def selected(self, batches: Iterable[Batch], selection: StreamingSelection,
                 pending: float = 0.0) -> Iterator[StepResult]:
        """The second pass over every batch the first pass left, in the order they fed
        ``selection``; ``pending`` seconds (the selection's own) are added to the first result."""
        pos = 0
        for batch in batches:
            res = self.second_pass(batch, pos, selection)
            pos += batch_len(batch)
            res.seconds += pending
            pending = 0.0
            yield res

    def first_pass(self, batch: Batch) -> tuple[StepResult, Batch, Any, Any]:
        """A top/words step's first pass over one batch: score it and apply min/max. Returns the
        result (its min/max rejections and counters, ``kept=None``), the rows left for the
        selection with their scores, and those rows' scores (``+inf`` out of scope: always kept)
        and word counts (None without ``keep.words``), for a :class:`StreamingSelection`."""
        t0 = time.perf_counter()
        res = self._bounded(batch)
        kept = res.kept
        res.kept = None
        scores, words = self.selection_values(kept)
        res.seconds = time.perf_counter() - t0
        return res, kept, scores, words

    def selection_values(self, kept: Batch) -> tuple[list, Any]:
        """What a :class:`StreamingSelection` is fed for rows that passed min/max: their scores
        (``+inf`` out of scope: always kept) and word counts (None without ``keep.words``)."""
        scores = [math.inf if v is None else v for v in kept[self.col]]
        words = (count_words(kept["src"], kept["tgt"], self.keep.words_side)
                 if self.keep.words is not None else None)
        return scores, words

    def finish_selection(self, selection: StreamingSelection) -> float:
        """End the selection's feed; its cut goes to the manifest. Returns the seconds it took."""
        t0 = time.perf_counter()
        self.stats.threshold = selection.finish()
        return time.perf_counter() - t0

    def second_pass(self, batch: Batch, start: int, selection: StreamingSelection) -> StepResult:
        """The selected rows of one batch that the first pass left (rows ``start`` on of the
        selection's feed); the others are rejected as outside the top/words selection."""
        t0 = time.perf_counter()
        keep = self.keep
        why = f" (top {keep.top})" if keep.top is not None else f" (words {keep.words})"
        scores = [math.inf if v is None else v for v in batch[self.col]]
        res = StepResult(None)
        res.kept = self._split(batch, selection.mask(start, scores), why, res)
        res.rows_out = batch_len(res.kept)
        res.seconds = time.perf_counter() - t0
        return res


class WeightExec(Executor):
    """Replaces each group of rows by what a Weighter returns: replicated rows with weights."""

    kind = "weight"
    in_score = False  # weighting scores nothing
    replicates = True
    comp: Weighter

    def apply(self, batch: Batch) -> Batch:
        """Weight every group of one batch."""
        names = list(batch)
        cols = [batch[c] for c in names]
        idx: list[int] = []
        weights: list[float] = []
        weight = self.comp.weight
        V, O, W = batch["variant"], batch["origin"], batch["weight"]
        bounds = group_bounds(batch["id"])
        want = set(self.step.origins) if self.step.origins is not None else None
        self.count(groups=len(bounds), groups_without_paraphrase=sum(
            1 for start, end in bounds if not any(V[i] for i in range(start, end))))
        with component_call(f"steps[{self.stats.index}]:{self.comp.name}", "weight()", batch):
            for start, end in bounds:
                if want is not None and O[start] not in want:  # another origin: passes as it is
                    idx.extend(range(start, end))
                    weights.extend(W[start:end])
                    continue
                group = [dict(zip(names, row)) for row in zip(*(c[start:end] for c in cols))]
                for j, w in weight(group):
                    if not 0 <= j < end - start:
                        raise ComponentError(f"{self.comp.name}: weight() returned index {j} "
                                             f"for a group of {end - start} rows")
                    idx.append(start + j)
                    weights.append(float(w))
        out = take_rows(batch, idx)
        out["weight"] = weights
        return out


class CleanExec(Executor):
    """Replaces the text of one or both sides by what a Cleaner returns and reports each change.

    Rows are never added or removed. For every cleaned column the result carries a
    :class:`Changed` with the rows whose text changed; the counts ``changed`` (rows with any side
    changed), ``changed_src`` and ``changed_tgt`` reach the manifest and the summary. A ``pure``
    cleaner cleans each distinct text of a batch once and answers texts it cleaned recently
    (in this process) from memory: corpora repeat boilerplate.
    """

    kind = "clean"
    changes_text = True
    comp: Cleaner
    step: CleanStep
    #: texts remembered per column before the memory is emptied (about 100 MB of typical text)
    MEMO_TEXTS = 200_000

    def __init__(self, index: int, step: CleanStep, comp: Cleaner):
        """Bind the step's sides to a built Cleaner."""
        super().__init__(index, step, comp)
        self.sides = ["src", "tgt"] if step.side == "both" else [step.side]
        self.memo: dict[str, dict[str, str]] = {side: {} for side in self.sides}

    def _clean(self, texts: list[str], side: str, batch: Batch) -> list[str]:
        """The cleaned text of every row of one column."""
        if not self.comp.pure:
            with component_call(self.label, "clean()", batch):
                out = self.comp.clean(texts, side)
            return self._checked(out, len(texts))
        memo = self.memo[side]
        todo = [t for t in dict.fromkeys(texts) if t not in memo]
        if not todo:
            return [memo[t] for t in texts]
        with component_call(self.label, "clean()", batch):
            fresh = dict(zip(todo, self._checked(self.comp.clean(todo, side), len(todo))))
        out = [fresh[t] if t in fresh else memo[t] for t in texts]
        if len(memo) + len(fresh) > self.MEMO_TEXTS:  # bounded: forget rather than grow
            memo.clear()
        if len(fresh) <= self.MEMO_TEXTS:
            memo.update(fresh)
        return out

    def _checked(self, out, n: int) -> list[str]:
        out = list(out)
        if len(out) != n:
            raise ComponentError(f"{self.label}: clean() returned {len(out)} texts for {n}")
        for t in out:
            if not isinstance(t, str):
                raise ComponentError(f"{self.label}: clean() returned {type(t).__name__} "
                                     f"{t!r}; cleaned texts must be str")
        return out

    def run(self, batch: Batch) -> StepResult:
        """Clean one batch."""
        t0 = time.perf_counter()
        n = batch_len(batch)
        res = StepResult(None, rows_in=n, rows_out=n)
        out = dict(batch)
        any_change = [False] * n
        for side in self.sides:
            before = batch[side]
            after = self._clean(before, side, batch) if n else []
            rows = [i for i in range(n) if after[i] != before[i]]
            res.counts[f"changed_{side}"] = len(rows)
            if rows:
                ids, variants = batch["id"], batch["variant"]
                res.changed.append(Changed(self.label, side, [ids[i] for i in rows],
                                           [variants[i] for i in rows],
                                           [before[i] for i in rows], [after[i] for i in rows]))
                for i in rows:
                    any_change[i] = True
                out[side] = after
        res.counts["changed"] = sum(any_change)
        res.kept = out
        res.seconds = time.perf_counter() - t0
        return res
