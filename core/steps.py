"""Executors that apply one recipe step to columnar batches.

Each executor wraps one component instance, built once per run, and transforms batches: a
paraphrase step expands rows into variants, a filter step scores and decides (streaming for
``min``/``max``, two passes over a spill file for the corpus-wide ``top``/``words``), a weight step
replaces each group by weighted rows (Nichols et al., section 4.2).
"""

from __future__ import annotations

import math
import pickle
import tempfile
import time
from array import array
from typing import Any, Callable, Iterator

from .components import Component, Filter, Paraphraser, Weighter
from .corpus import Batch, batch_len, take_rows
from .errors import ComponentError
from .recipe import FilterStep, KeepSpec, ParaphraseStep, SplitStep, WeightStep, score_column

RejectSink = Callable[[Batch, str, list], None]
NAN = float("nan")


class StepStats:
    """Counts and time of one step, for the manifest."""

    def __init__(self, index: int, kind: str, component: Component):
        """Start counting for ``component`` at position ``index``."""
        self.index = index
        self.kind = kind
        self.component = component
        self.rows_in = 0
        self.rows_out = 0
        self.seconds = 0.0
        self.extra: dict[str, Any] = {}

    def to_dict(self) -> dict[str, Any]:
        """The manifest entry."""
        c = self.component
        d = {"index": self.index, "kind": self.kind, "component": c.name,
             "config": c.config.model_dump(mode="json"), "rows_in": self.rows_in,
             "rows_out": self.rows_out, "seconds": round(self.seconds, 3)}
        info = {**c.manifest_info(), **self.extra}
        if info:
            d["info"] = info
        return d


def group_bounds(ids: list) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of equal ids (groups are contiguous by construction)."""
    n = len(ids)
    if n == 0:
        return []
    bounds = []
    start = 0
    prev = ids[0]
    for i in range(1, n):
        cur = ids[i]
        if cur != prev:
            bounds.append((start, i))
            start = i
            prev = cur
    bounds.append((start, n))
    return bounds


class SplitExec:
    """Replaces each row by the ``(src, tgt)`` pieces a component's ``split(batch)`` returns.

    Every output row gets a fresh ``id`` (pieces are separate originals for later weighting); the
    input row's id is kept in ``source_id``. A row that stays whole keeps its ``origin``.
    """

    def __init__(self, index: int, step: SplitStep, comp):
        """Bind a built component that has a ``split`` method."""
        self.comp = comp
        self.stats = StepStats(index, "split", comp)
        self.next_id = 0

    def columns(self) -> list[str]:
        """Columns this step adds."""
        return ["source_id"]

    def get_state(self) -> int:
        """The next fresh id (saved with each shard so a resumed run numbers rows the same)."""
        return self.next_id

    def set_state(self, state: int) -> None:
        """Restore the next fresh id."""
        self.next_id = state

    def __call__(self, batch: Batch) -> Batch:
        """Split one batch."""
        t0 = time.perf_counter()
        n = batch_len(batch)
        self.stats.rows_in += n
        pieces = self.comp.split(batch) if n else []
        if len(pieces) != n:
            raise ComponentError(f"{self.comp.name}: split() returned {len(pieces)} lists for "
                                 f"{n} rows")
        idx: list[int] = []
        src: list[str] = []
        tgt: list[str] = []
        origin: list[str] = []
        S, T, O = batch["src"], batch["tgt"], batch["origin"]
        for i, ps in enumerate(pieces):
            if not ps:
                ps = [(S[i], T[i])]
            whole = len(ps) == 1
            for s, t in ps:
                idx.append(i)
                src.append(s)
                tgt.append(t)
                origin.append(O[i] if whole else self.comp.name)
        out = take_rows(batch, idx)
        out["source_id"] = out["id"]
        out["id"] = list(range(self.next_id, self.next_id + len(idx)))
        self.next_id += len(idx)
        out["src"], out["tgt"], out["origin"] = src, tgt, origin
        self.stats.rows_out += len(idx)
        self.stats.seconds += time.perf_counter() - t0
        return out


class ParaphraseExec:
    """Runs a Paraphraser on one side and expands each row into variant 0 plus candidates."""

    def __init__(self, index: int, step: ParaphraseStep, comp: Paraphraser):
        """Bind the step's options to a built component."""
        self.step = step
        self.comp = comp
        self.stats = StepStats(index, "paraphrase", comp)
        self.side = step.side
        self.read = step.read or step.side
        self.orig_col = f"{step.side}_original"
        self.score_col = score_column(step)
        self.extra = tuple(getattr(comp, "extra_columns", ()))
        self.label = f"steps[{index}]:{comp.name}"

    def columns(self) -> list[str]:
        """Columns this step adds."""
        return [self.orig_col, self.score_col, *self.extra]

    def __call__(self, batch: Batch) -> Batch:
        """Paraphrase one batch."""
        t0 = time.perf_counter()
        n = batch_len(batch)
        self.stats.rows_in += n
        if self.read not in batch:
            raise ComponentError(f"{self.label}: read column {self.read!r} does not exist; "
                                 f"columns are {', '.join(batch)}")
        V = batch["variant"]
        targets = range(n) if self.step.of == "all" else [i for i in range(n) if V[i] == 0]
        col = batch[self.read]
        S = batch[self.side]
        texts = [col[i] for i in targets]
        if texts and getattr(self.comp, "reads_side", False):
            # The component also wants the current text of the side it replaces (backtranslate.v1
            # drops candidates equal to that reference).
            results = self.comp.paraphrase(texts, side=[S[i] for i in targets])
        else:
            results = self.comp.paraphrase(texts) if texts else []
        if len(results) != len(texts):
            raise ComponentError(f"{self.comp.name}: paraphrase() returned {len(results)} lists "
                                 f"for {len(texts)} sentences")
        cands = dict(zip(targets, results))
        O, S = batch["origin"], batch[self.side]
        old_score = batch.get(self.score_col)
        old_extra = {k: batch.get(k) for k in self.extra}
        idx: list[int] = []
        variant: list[int] = []
        origin: list[str] = []
        text: list[str] = []
        score: list = []
        extra: dict[str, list] = {k: [] for k in self.extra}
        name = self.comp.name
        for start, end in group_bounds(batch["id"]):
            nextv = 0
            for i in range(start, end):
                idx.append(i)
                variant.append(V[i])
                origin.append(O[i])
                text.append(S[i])
                score.append(old_score[i] if old_score is not None else None)
                for k, lst in extra.items():
                    prev = old_extra[k]
                    lst.append(prev[i] if prev is not None else None)
                if V[i] >= nextv:
                    nextv = V[i] + 1
            for i in range(start, end):
                for cand in cands.get(i, ()):
                    idx.append(i)
                    variant.append(nextv)
                    nextv += 1
                    text.append(cand[0])
                    score.append(float(cand[1]))
                    prov = name
                    info = cand[2] if len(cand) > 2 else None
                    if info:
                        unknown = set(info) - set(self.extra) - {"provenance"}
                        if unknown:
                            raise ComponentError(
                                f"{name}: candidate carries undeclared columns {sorted(unknown)}; "
                                f"declare them in extra_columns")
                        if info.get("provenance"):
                            prov = f"{name}:{info['provenance']}"
                    origin.append(prov)
                    for k, lst in extra.items():
                        lst.append(info.get(k) if info else None)
        orig_src = batch.get(self.orig_col) or S
        out = take_rows(batch, idx)
        out["variant"] = variant
        out["origin"] = origin
        out[self.side] = text
        out[self.orig_col] = [orig_src[i] for i in idx]
        out[self.score_col] = score
        out.update(extra)
        self.stats.rows_out += len(idx)
        self.stats.seconds += time.perf_counter() - t0
        return out


class FilterExec:
    """Scores rows with a Filter and applies the step's ``keep`` decision."""

    def __init__(self, index: int, step: FilterStep, comp: Filter, reject: RejectSink,
                 sample: bool = True):
        """Bind the step's options to a built component and the sink for rejected rows;
        ``sample`` keeps a sample of scores for the report's histograms."""
        self.step = step
        self.comp = comp
        self.keep: KeepSpec = step.keep  # type: ignore[assignment]
        self.col = score_column(step)
        self.reject = reject
        self.stats = StepStats(index, "filter", comp)
        self.label = f"steps[{index}]:{comp.name}"
        self.sample = Reservoir(50_000 if sample else 0, seed=index)
        self.rejected = 0
        use_cache = comp.cache_scores if step.cache is None else step.cache
        self.cache = None
        if use_cache and not comp.stateful:
            from .cache import ScoreCache

            self.cache = ScoreCache(comp, self.col)

    def close(self) -> None:
        """Close the score cache; its hit counts go to the manifest."""
        if self.cache is not None:
            self.stats.extra["score_cache"] = {"file": str(self.cache.path), "hits": self.cache.hits,
                                               "computed": self.cache.misses}
            self.cache.close()
            self.cache = None

    def _score(self, batch: Batch):
        if self.cache is not None:
            return self.cache.score(batch, self.comp.score)
        return self.comp.score(batch)

    def columns(self) -> list[str]:
        """Columns this step adds."""
        return [self.col]

    def _scope(self, batch: Batch) -> list[int] | None:
        mode = self.step.apply_to
        if mode == "all":
            return None
        V = batch["variant"]
        want_orig = mode == "originals"
        return [i for i, v in enumerate(V) if (v == 0) == want_orig]

    def scores(self, batch: Batch) -> list:
        """Score a batch (only the rows in scope); out-of-scope rows get ``None``."""
        n = batch_len(batch)
        scope = self._scope(batch)
        if scope is None:
            raw = self._score(batch) if n else []
            if len(raw) != n:
                raise ComponentError(f"{self.comp.name}: score() returned {len(raw)} scores for "
                                     f"{n} rows")
            out: list = list(map(float, raw))
        else:
            sub = take_rows(batch, scope)
            raw = self._score(sub) if scope else []
            if len(raw) != len(scope):
                raise ComponentError(f"{self.comp.name}: score() returned {len(raw)} scores for "
                                     f"{len(scope)} rows")
            out = [None] * n
            for i, s in zip(scope, raw):
                out[i] = float(s)
        self.sample.extend(s for s in out if s is not None)
        return out

    def bounds_mask(self, scores: list) -> list[bool]:
        """Which rows pass min/max (rows out of scope pass; NaN fails)."""
        return within_bounds(self.keep, scores)

    def _split(self, batch: Batch, mask: list[bool], why: str) -> Batch:
        if all(mask):
            return batch
        keep = [i for i, m in enumerate(mask) if m]
        drop = [i for i, m in enumerate(mask) if not m]
        self.rejected += len(drop)
        self.reject(take_rows(batch, drop), f"{self.label}{why}", [batch[self.col][i] for i in drop])
        return take_rows(batch, keep)

    def __call__(self, batch: Batch) -> Batch:
        """Streaming decision (min/max only)."""
        t0 = time.perf_counter()
        self.stats.rows_in += batch_len(batch)
        scores = self.scores(batch)
        batch[self.col] = scores
        out = self._split(batch, self.bounds_mask(scores), "")
        self.stats.rows_out += batch_len(out)
        self.stats.seconds += time.perf_counter() - t0
        return out

    def apply_global(self, stream: Iterator[Batch]) -> Iterator[Batch]:
        """Two passes for top/words: score everything into a spill file, then select."""
        keep = self.keep
        side = keep.words_side
        scores = array("d")
        words = array("q")
        with tempfile.TemporaryFile(prefix="bitextforge-spill-") as spill:
            nb = 0
            for batch in stream:
                t0 = time.perf_counter()
                self.stats.rows_in += batch_len(batch)
                s = self.scores(batch)
                batch[self.col] = s
                batch = self._split(batch, self.bounds_mask(s), "")
                pickle.dump(batch, spill, protocol=pickle.HIGHEST_PROTOCOL)
                nb += 1
                # out-of-scope rows (None) are always kept: mark them +inf for the selection
                scores.extend(math.inf if v is None else v for v in batch[self.col])
                if keep.words is not None:
                    words.extend(count_words(batch["src"], batch["tgt"], side))
                self.stats.seconds += time.perf_counter() - t0
            t0 = time.perf_counter()
            selected = self._select(scores, words)
            self.stats.seconds += time.perf_counter() - t0
            spill.seek(0)
            pos = 0
            for _ in range(nb):
                batch = pickle.load(spill)
                t0 = time.perf_counter()
                n = batch_len(batch)
                mask = [bool(x) for x in selected[pos:pos + n]]
                pos += n
                why = f" (top {keep.top})" if keep.top is not None else f" (words {keep.words})"
                out = self._split(batch, mask, why)
                self.stats.rows_out += batch_len(out)
                self.stats.seconds += time.perf_counter() - t0
                yield out

    def _select(self, scores: array, words: array):
        import numpy as np

        s = np.frombuffer(scores, dtype=np.float64) if len(scores) else np.zeros(0)
        w = np.frombuffer(words, dtype=np.int64) if len(words) else None
        return select_global(self.keep, s, w)


def within_bounds(keep: KeepSpec, scores):
    """Which scores pass ``keep``'s min/max (inclusive; NaN fails).

    ``scores`` is either a list, where ``None`` marks a row outside the step's scope (it passes), as
    the streaming runner sees a batch; or a float NumPy array, compared as a whole, as ``bitextforge
    serve`` re-decides stored scores (the caller decides which rows are in scope).
    """
    lo = -math.inf if keep.min is None else keep.min
    hi = math.inf if keep.max is None else keep.max
    if hasattr(scores, "dtype"):
        return (scores >= lo) & (scores <= hi)
    return [s is None or (lo <= s <= hi) for s in scores]


def count_words(src: list[str], tgt: list[str], side: str) -> list[int]:
    """Whitespace tokens per row on ``side`` (``src``, ``tgt`` or ``both``), what ``keep.words``
    counts."""
    if side == "both":
        return [len(a.split()) + len(b.split()) for a, b in zip(src, tgt)]
    return [len(t.split()) for t in (src if side == "src" else tgt)]


def select_global(keep: KeepSpec, scores, words=None):
    """The ``top``/``words`` selection over every score of a step, as a boolean NumPy mask.

    ``scores`` (float64, in stream order) marks rows outside the step's scope with ``+inf``: they
    are always kept. NaN is never selected; ties keep stream order. ``words`` holds each row's
    word count on ``keep.words_side`` when ``keep.words`` is set.
    """
    import numpy as np

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


class WeightExec:
    """Replaces each group of rows by what a Weighter returns: replicated rows with weights."""

    def __init__(self, index: int, step: WeightStep, comp: Weighter):
        """Bind a built Weighter."""
        self.comp = comp
        self.stats = StepStats(index, "weight", comp)

    def columns(self) -> list[str]:
        """Weight steps add no columns (they set ``weight``)."""
        return []

    def __call__(self, batch: Batch) -> Batch:
        """Weight every group of one batch."""
        t0 = time.perf_counter()
        n = batch_len(batch)
        self.stats.rows_in += n
        names = list(batch)
        cols = [batch[c] for c in names]
        idx: list[int] = []
        weights: list[float] = []
        weight = self.comp.weight
        for start, end in group_bounds(batch["id"]):
            group = [dict(zip(names, row)) for row in zip(*(c[start:end] for c in cols))]
            for j, w in weight(group):
                if not 0 <= j < end - start:
                    raise ComponentError(f"{self.comp.name}: weight() returned index {j} for a "
                                         f"group of {end - start} rows")
                idx.append(start + j)
                weights.append(float(w))
        out = take_rows(batch, idx)
        out["weight"] = weights
        self.stats.rows_out += len(idx)
        self.stats.seconds += time.perf_counter() - t0
        return out


class Reservoir:
    """An approximately uniform fixed-size sample of a stream, for score histograms.

    Filled batch-wise: once full, each batch of ``m`` values replaces about
    ``m * size / seen`` random slots, so the cost per batch is small and independent of ``size``.
    """

    def __init__(self, size: int, seed: int = 0):
        """Keep at most ``size`` values."""
        import random

        self.size = size
        self.values: list[float] = []
        self.seen = 0
        self.rng = random.Random(seed)

    def extend(self, values) -> None:
        """Offer values to the sample."""
        if not self.size:
            return
        vals = list(values)
        room = self.size - len(self.values)
        if room > 0:
            self.values.extend(vals[:room])
            self.seen += min(room, len(vals))
            vals = vals[room:]
        if not vals:
            return
        m = len(vals)
        k = min(m, int(m * self.size / (self.seen + m / 2) + self.rng.random()))
        for v in self.rng.sample(vals, k):
            self.values[self.rng.randrange(self.size)] = v
        self.seen += m
