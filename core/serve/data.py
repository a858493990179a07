"""A finished run held in memory as columns, and its filter decisions re-made from the stored scores.

``bitextforge serve`` and the static ``report.html`` read a run directory (``corpus.tsv``,
``rejected.tsv``, ``manifest.json``, ``recipe.filled.yaml``; ``cleaned.tsv`` when a page asks for a
clean step's changes, see :meth:`RunData.changes`) or a scores TSV written by
``bitextforge score``. Every score column becomes a float NumPy array, and :meth:`RunData.decide`
replays the recipe's steps in the run's order over those arrays, deciding each filter step with
the runner's own decision functions (:mod:`bitextforge.pipeline.decide`), so a moved threshold is
re-decided for every row without running a model. A row made by step ``k`` (a paraphrase, a split
piece: the executor's ``made_mark`` names the column that marks the rows a step made) is seen only
by the steps after ``k``, and whether it exists is the step's executor's own rule
(``Executor.made_fate``: :func:`bitextforge.pipeline.adding.replaced_fate` for a split or a
generate step, whose rows exist only if the row they were made from reaches ``k``,
:func:`~bitextforge.pipeline.adding.added_fate` for a paraphrase step); before a step that
replaces rows, the first piece of each row stands for the row it came from.

What stored scores cannot tell: a row the run rejected at step ``j`` was never scored by the steps
after ``j``. When a loosened bound lets such a row through, later steps cannot decide it; it is
counted as *unscored* (kept, and flagged) until the recipe is rerun. A scores TSV from
``bitextforge score`` has every score of every row, so nothing is unscored there. Scores in TSV
files carry 6 significant digits; rows whose score lies within that rounding of a bound are counted
as *near the bound*, because the full-precision score a rerun uses may fall on the other side.
"""

from __future__ import annotations

import difflib
import json
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..io.corpus import unescape
from ..pipeline.decide import count_words, decide_rows, in_scope
from ..pipeline.kinds import kind_of
from ..recipe.load import KeepSpec, Recipe, dump_yaml, load_recipe, parse_recipe
from ..pipeline.executors import ADDS, REPLACES
from ..pipeline.sink import CLEANED_COLUMNS
from .tables import (AXES, HIST_BINS, RunDataError, half_last_digit,  # noqa: F401
                     histogram_edges, json_float, logit, read_table, whole)

_STEP_LABEL = re.compile(r"^steps\[(\d+)\]")
#: changed texts kept per clean step for its before/after view: a seeded sample of at most this
#: many, so a cleaned.tsv of millions of lines costs one pass and bounded memory
CHANGES_SAMPLE = 200
#: texts longer than this (before and after together) are marked changed as a whole: a
#: character diff is quadratic in the worst case
DIFF_MAX_CHARS = 4000


@dataclass
class StepInfo:
    """One recipe step as the page shows it."""

    index: int
    kind: str
    component: str
    column: str | None = None
    keep: KeepSpec | None = None
    apply_to: str = "all"
    origins: list[str] | None = None
    side: str | None = None
    editable: bool = False
    stateful: bool = False  # the score depends on earlier rows (dedupe.v1)
    stored: dict[str, Any] = field(default_factory=dict)
    decides: bool = False  # a filter step: keeps or rejects rows by its score
    makes: str | None = None  # ADDS or REPLACES rows (the executor's Executor.makes)
    mark: str | None = None  # the column filled in exactly the rows this step made
    replicates: bool = False  # writes a kept row possibly several times (a weighter)
    changes_text: bool = False  # a clean step: its changes are in cleaned.tsv
    probability: bool = False  # every score in [0, 1], not whole numbers: a logit axis helps
    made_fate: Any = None  # the executor's replay of the rows it made (Executor.made_fate)

    @property
    def label(self) -> str:
        """``steps[i]:component``, as ``rejected.tsv`` names the step."""
        return f"steps[{self.index}]:{self.component}"

    def to_dict(self) -> dict[str, Any]:
        """JSON for the page."""
        return {"index": self.index, "kind": self.kind, "component": self.component,
                "column": self.column, "label": self.label, "apply_to": self.apply_to,
                "side": self.side, "editable": self.editable, "stateful": self.stateful,
                "keep": self.keep.model_dump(exclude_none=True) if self.keep else None,
                "decides": self.decides, "makes": self.makes,
                "rows_in": self.stored.get("rows_in"), "rows_out": self.stored.get("rows_out"),
                "seconds": self.stored.get("seconds"), "info": self.stored.get("info"),
                "changes_text": self.changes_text, "counts": self.stored.get("counts"),
                "probability": self.probability}


@dataclass
class Decision:
    """Where every row ends under one set of ``keep`` bounds."""

    keeps: dict[int, KeepSpec]
    rejected_at: np.ndarray  # step index that rejects the row; len(steps) when it is kept
    unscored: np.ndarray  # rows that reach a step the stored run never brought them to
    entered: dict[int, np.ndarray]  # per filter step: the rows that reach it
    steps: list[dict[str, Any]]
    kept: int
    seconds: float


class RunData:
    """A run's rows and scores as columns, with the recipe steps that made them."""

    def __init__(self, recipe: Recipe, recipe_text: str, manifest: dict[str, Any],
                 tables: list[tuple[Path, str]], run_dir: Path | None,
                 fraction: float | None = None):
        """Build from the recipe and the TSV tables ``(path, 'corpus'|'rejected'|'scores')``;
        with ``fraction``, only a seeded random sample of that share of the rows is read."""
        self.recipe = recipe
        self.fraction = fraction
        self.recipe_text = recipe_text
        self.manifest = manifest
        self.run_dir = run_dir
        self.steps = _step_infos(recipe, manifest)
        self.warnings: list[str] = []
        self._load(tables)
        self._words: dict[str, np.ndarray] = {}
        self._origin: np.ndarray | None = None  # each row's origin, read when a step asks
        self._lower: dict[str, tuple[str, np.ndarray]] = {}
        self._made: dict[int, np.ndarray] = {}
        self._plots: dict[str, list[dict[str, Any]]] | None = None
        self._changes: dict[str, tuple[int, list[tuple]]] | None = None
        for st in self.steps:
            if st.decides:
                v = self.scores[st.column]
                f = v[np.isfinite(v)]
                st.probability = bool(len(f)) and not self.exact[st.column] and \
                    bool(f.min() >= 0.0) and bool(f.max() <= 1.0)
        self.edges = {st.index: self._edges(st) for st in self.steps if st.decides}
        # each score's histogram bin, once: a histogram per request is then one bincount
        self.bins = {st.index: self._bins(st) for st in self.steps if st.decides}
        #: the same on the logit axis, for probability-like steps, made when first asked for
        self._logit: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # -- loading -----------------------------------------------------------------------------

    def _load(self, tables: list[tuple[Path, str]]) -> None:
        import pyarrow as pa

        n_steps = len(self.steps)
        score_cols = {st.column for st in self.steps if st.column}
        marks = {st.mark for st in self.steps if st.mark}
        rng = np.random.default_rng(0)
        parts = [read_table(path, score_cols | marks, self.fraction, rng) for path, _ in tables]
        ids = np.concatenate([t.column("id").to_numpy() for t in parts]).astype(np.int64)
        variant = np.concatenate([
            t.column("variant").to_numpy() if "variant" in t.column_names
            else np.zeros(t.num_rows, dtype=np.int64) for t in parts]).astype(np.int64)
        # A scores file has every score of every row: its rejected_by column (what the recipe's
        # bounds would reject) must not hide scores from later steps as a run's rejections do.
        at = np.concatenate([self._stored_at(t, path, n_steps) if what != "scores"
                             else np.full(t.num_rows, n_steps, dtype=np.int32)
                             for t, (path, what) in zip(parts, tables)]).astype(np.int32)
        # Stream order: groups by id, variants in order. Kept and rejected rows were written to two
        # files; sorting by (id, variant) interleaves them back as the steps saw them. A step that
        # replaces rows numbers its rows afresh: they sort under the row they were made from
        # (their root), where that row stood before the step.
        root = ids
        for st in self.steps:
            if st.makes == REPLACES:
                parent, has = self._mark(parts, st.mark)
                root = np.where(has, parent, root)
        order = np.lexsort((variant, ids, root))
        if any(st.replicates for st in self.steps):
            # a weighter replicates kept rows; re-deciding the filters wants each row once
            r, i, v = root[order], ids[order], variant[order]
            first = np.ones(len(order), dtype=bool)
            first[1:] = (r[1:] != r[:-1]) | (i[1:] != i[:-1]) | (v[1:] != v[:-1])
            order = order[first]
        self.n = len(order)
        # a group: an original and the rows made beside it (the same id under the same root)
        r, i = root[order], ids[order]
        start = np.ones(self.n, dtype=bool)
        start[1:] = (r[1:] != r[:-1]) | (i[1:] != i[:-1])
        self.group = np.cumsum(start) - 1
        self.group_first = np.flatnonzero(start)[self.group]
        self.ids = ids[order]
        self.variant = variant[order]
        self.stored_at = at[order]
        # row i of the page is row order[i] of the files, read where it lies
        self.file_row = order

        def column(name: str, dtype) -> "pa.ChunkedArray":
            chunks = [c for t in parts for c in (
                t.column(name).chunks if name in t.column_names
                else [pa.nulls(t.num_rows, type=dtype)])]
            return pa.chunked_array(chunks, type=dtype)

        names = {c for t in parts for c in t.column_names}
        # text stays in the Arrow arrays as read, in file order (a fraction of the memory of
        # Python strings, and no copy); cells are unescaped when shown
        self.text = {name: column(name, pa.string()) for name in sorted(names)
                     if name in ("src", "tgt", "origin") or name.endswith("_original")}
        self.weight = column("weight", pa.float64()).to_numpy()[order] \
            if "weight" in names else np.ones(self.n)
        self.scores: dict[str, np.ndarray] = {}
        self.has_score: dict[str, np.ndarray] = {}
        for name in score_cols:
            if name not in names:
                raise RunDataError(f"{tables[0][0]}: no score column {name!r} for the recipe's "
                                   f"step (is this the run of that recipe?)")
            col = column(name, pa.float64())
            self.has_score[name] = col.is_valid().to_numpy()[order]
            self.scores[name] = col.to_numpy()[order]  # null -> NaN
        # A column of whole numbers (lengths, dedupe's 0/1) is exact in a TSV cell; others are
        # rounded to 6 significant digits
        self.exact = {name: whole(v) for name, v in self.scores.items()}
        # the step that made each row (-1: the input); a row carries the marks of the steps that
        # made the rows it was made from, so the latest mark is its own
        self.born = np.full(self.n, -1, dtype=np.int32)
        #: per row made by a step that replaces rows: the first row made from the same row, which
        #: stands for that row before the step (itself for that first row)
        self.rep = np.arange(self.n)
        for st in self.steps:
            if st.mark:
                parent, has = self._mark(parts, st.mark)
                self.born[has[order]] = st.index
                if st.makes == REPLACES:
                    made = np.flatnonzero(has[order])
                    p = parent[order][made]
                    _, first, inverse = np.unique(p, return_index=True, return_inverse=True)
                    self.rep[made] = made[first][inverse]
        replaced = np.isin(self.born, [st.index for st in self.steps if st.makes == REPLACES])
        #: rows that stand for the row they were made from before the step that made them
        self.stand_in = replaced & (self.rep == np.arange(self.n))

    @staticmethod
    def _mark(parts, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A step's mark column over the tables in file order: its values (as int64, 0 where
        empty) and which rows hold one."""
        vals, has = [], []
        for t in parts:
            if name in t.column_names:
                col = t.column(name)
                has.append(col.is_valid().to_numpy(zero_copy_only=False))
                vals.append(np.nan_to_num(col.to_numpy(), nan=0.0))
            else:
                has.append(np.zeros(t.num_rows, dtype=bool))
                vals.append(np.zeros(t.num_rows))
        return np.concatenate(vals).astype(np.int64), np.concatenate(has)

    @staticmethod
    def _stored_at(table, path: Path, n_steps: int) -> np.ndarray:
        """Per row, the step that rejected it in the stored run (``n_steps``: kept)."""
        import pyarrow.compute as pc

        if "rejected_by" not in table.column_names:
            return np.full(table.num_rows, n_steps, dtype=np.int32)
        enc = pc.dictionary_encode(table.column("rejected_by")).combine_chunks()
        steps = []
        for label in enc.dictionary.to_pylist():
            m = _STEP_LABEL.match(label or "")
            if not m:
                raise RunDataError(f"{path}: rejected_by {label!r} names no step")
            steps.append(int(m.group(1)))
        codes = enc.indices.to_numpy(zero_copy_only=False)
        return np.asarray(steps, dtype=np.int32)[codes] if steps else codes.astype(np.int32)

    def cell(self, name: str, i: int) -> str:
        """One text cell as the run wrote it (unescaped)."""
        return unescape(self.text[name][int(self.file_row[i])].as_py() or "")

    def _edges(self, st: StepInfo, axis: str = "score") -> np.ndarray:
        """Histogram bin edges of a filter step on ``axis``: see :func:`histogram_edges`."""
        v = self.scores[st.column]
        bounds = [b for b in ((st.keep.min, st.keep.max) if st.keep else ()) if b is not None]
        if axis == "logit":
            v, bounds = logit(v), [float(logit(np.float64(b))) for b in bounds]
        return histogram_edges(v[np.isfinite(v)], bounds)

    def _bins(self, st: StepInfo, edges: np.ndarray | None = None,
              axis: str = "score") -> np.ndarray:
        """Each row's bin of its step's score on ``axis``; NaN gets one past the last bin (not
        drawn), an infinite score the first or the last."""
        edges = self.edges[st.index] if edges is None else edges
        nb = len(edges) - 1
        v = self.scores[st.column]
        if axis == "logit":
            v = logit(v)
        b = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, nb - 1)
        return np.where(np.isnan(v), nb, b).astype(np.int16)

    def axis_bins(self, st: StepInfo, axis: str) -> tuple[np.ndarray, np.ndarray, str]:
        """``(edges, bins, axis drawn)`` of a filter step: on the logit axis when asked and the
        step's scores are probability-like, else on the score itself."""
        if axis != "logit" or not st.probability:
            return self.edges[st.index], self.bins[st.index], "score"
        made = self._logit.get(st.index)
        if made is None:  # two threads may both make it: the same arrays, no harm
            edges = self._edges(st, "logit")
            made = (edges, self._bins(st, edges, "logit"))
            self._logit[st.index] = made
        return (*made, "logit")

    # -- deciding ----------------------------------------------------------------------------

    def scope(self, st: StepInfo) -> np.ndarray:
        """Rows a filter step decides (``apply_to``)."""
        if st.origins is None:
            return in_scope(st.apply_to, self.variant)
        if self._origin is None:
            self._origin = np.array(self.text["origin"].to_pylist(), dtype=object)[self.file_row]
        return in_scope(st.apply_to, self.variant, self._origin, st.origins)

    def present(self, index: int) -> np.ndarray:
        """Rows that exist when step ``index`` runs: those made before it, and the stand-ins of
        rows a later step replaces (alive or not: that is the decision's part)."""
        return (self.born < index) | self.stand_in

    def words(self, side: str, index: int | None = None) -> np.ndarray:
        """Whitespace tokens per row on ``side``, as ``keep.words`` counts them; with ``index``,
        as step ``index`` sees them: before a step that replaces rows, a stand-in counts the words
        of every row made from the row it stands for (that row's text is not stored)."""
        if side not in self._words:
            src = [unescape(t) for t in self.text["src"].to_pylist()]
            tgt = [unescape(t) for t in self.text["tgt"].to_pylist()]
            self._words[side] = count_words(src, tgt, side)[self.file_row]
        words = self._words[side]
        later = self.stand_in & (self.born >= (index or 0))
        if index is None or not later.any():
            return words
        made = (self.born >= index) & np.isin(self.born, self.born[later])
        sums = np.bincount(self.rep[made], weights=words[made], minlength=self.n)
        return np.where(later, sums.astype(np.int64), words)

    def decide(self, overrides: dict[int, KeepSpec] | None = None) -> Decision:
        """Re-decide every filter step with ``overrides`` (step index -> keep) over stored scores,
        replaying the steps in the run's order (module docstring)."""
        t0 = time.perf_counter()
        overrides = overrides or {}
        n_steps = len(self.steps)
        # alive: not rejected (rows not made yet are alive until the row they come from dies)
        alive = np.ones(self.n, dtype=bool)
        rejected_at = np.full(self.n, n_steps, dtype=np.int32)
        unscored = np.zeros(self.n, dtype=bool)
        entered: dict[int, np.ndarray] = {}
        keeps: dict[int, KeepSpec] = {}
        out: list[dict[str, Any]] = []
        for st in self.steps:
            m = st.index
            present = self.present(m)
            reach = alive & present
            new = reach & (self.stored_at < m)
            unscored |= new
            changed = not np.array_equal(reach, present & (self.stored_at >= m))
            entry: dict[str, Any] = {"index": m, "rows_in": int(reach.sum()),
                                     "unscored": int(new.sum()), "changed": changed}
            if st.decides:
                # a score that depends on earlier rows was computed for the rows that reached
                # the step in the run; other rows before it make it stale
                entry["stale"] = st.stateful and changed
                entered[m] = reach
                if st.editable:
                    keep = overrides.get(m, st.keep)
                    keeps[m] = keep
                    ok = self._decide_step(st, keep, reach, new)
                else:
                    ok = self.stored_at != m
                drop = reach & ~ok
                rejected_at[drop] = m
                alive &= ~drop
                entry["rows_out"] = int((alive & present).sum())
                entry["rejected"] = int(drop.sum())
            elif st.makes is not None:
                made = np.flatnonzero(self.born == m)
                # which rows the step made still exist: the step's executor says (made_fate)
                live, src = st.made_fate(made, alive, reach, self)
                alive[made] = live
                rejected_at[made[~live]] = rejected_at[src[~live]]
                # a row the step could make nothing from (a generate step's sentence without
                # output) was rejected there
                failed = reach & (self.stored_at == m)
                if failed.any():
                    alive &= ~failed
                    rejected_at[failed] = m
                    entry["rejected"] = int(failed.sum())
                entry["rows_out"] = int((alive & self.present(m + 1)).sum())
            elif st.replicates:  # the rows it wrote are known only as the run wrote them
                entry["rows_out"] = None if changed else st.stored.get("rows_out")
            else:
                entry["rows_out"] = entry["rows_in"]
            out.append(entry)
        return Decision(keeps, rejected_at, unscored, entered, out, int(alive.sum()),
                        time.perf_counter() - t0)

    def as_run(self) -> Decision:
        """The decisions the run made, read from where each row was rejected (no re-deciding:
        exact for a sample of the rows too); counts are the manifest's."""
        n_steps = len(self.steps)
        entered = {st.index: (self.stored_at >= st.index) & self.present(st.index)
                   for st in self.steps if st.decides}
        out = []
        for st in self.steps:
            rin, rout = st.stored.get("rows_in"), st.stored.get("rows_out")
            rejected = rin - rout if st.decides and rin is not None and rout is not None \
                else None
            out.append({"index": st.index, "rows_in": rin, "rows_out": rout, "rejected": rejected,
                        "unscored": 0, "changed": False})
        kept = (self.manifest.get("output") or {}).get("rows")
        at = np.where(self.stored_at >= n_steps, n_steps, self.stored_at).astype(np.int32)
        return Decision({}, at, np.zeros(self.n, dtype=bool), entered, out,
                        int(kept if kept is not None else (at == n_steps).sum()), 0.0)

    def _decide_step(self, st: StepInfo, keep: KeepSpec, reach: np.ndarray,
                     new: np.ndarray) -> np.ndarray:
        """Which of the rows ``reach`` (those reaching the step) pass one filter step: min/max,
        then top/words over the survivors (:func:`bitextforge.pipeline.decide.decide_rows`). Rows the run
        never brought to the step (``new``) cannot be ranked: they pass like rows out of scope."""
        words = self.words(keep.words_side, st.index) if keep.words is not None else None
        return decide_rows(keep, self.scores[st.column], self.scope(st) & ~new, reach, words)[0]

    # -- what the page shows -----------------------------------------------------------------

    def step(self, index: int) -> StepInfo:
        """The step at ``index`` (a clear error for a wrong one)."""
        if not 0 <= index < len(self.steps):
            raise RunDataError(f"no step {index}; the recipe has {len(self.steps)} steps")
        return self.steps[index]

    def histogram(self, dec: Decision, st: StepInfo, axis: str = "score") -> dict[str, Any]:
        """Counts per bin of the scores reaching a filter step, kept and rejected apart. On the
        ``logit`` axis (probability-like steps only; others stay on ``score``, and ``axis`` in
        the answer says which) the edges are log-odds; bounds and the cutoff stay scores."""
        edges, bins, drawn = self.axis_bins(st, axis)
        reach = dec.entered[st.index] & self.scope(st) & self.has_score[st.column]
        v = self.scores[st.column]
        rej = dec.rejected_at == st.index
        nb = len(edges) - 1
        kept_counts = np.bincount(bins[reach & ~rej], minlength=nb + 1)[:nb]
        rej_counts = np.bincount(bins[reach & rej], minlength=nb + 1)[:nb]
        finite = ~np.isnan(v)
        keep = dec.keeps.get(st.index, st.keep)
        near = np.zeros(self.n, dtype=bool)
        if keep is not None:
            for b in (keep.min, keep.max):
                if b is not None:
                    if self.exact[st.column]:
                        continue
                    # half a unit in the 6th digit is at most 5e-6 |v|: look closer only there
                    close = np.flatnonzero(reach & (np.abs(v - b) <= 5e-6 * np.abs(v)))
                    near[close] = np.abs(v[close] - b) <= half_last_digit(v[close])
        cutoff = None
        if keep is not None and keep.is_global:
            # the worst score the top/words selection kept: where the selection cut
            sel = v[reach & ~rej & np.isfinite(v)]
            if len(sel):
                cutoff = float(sel.min() if keep.order == "highest" else sel.max())
        return {"edges": edges.tolist(), "kept": kept_counts.tolist(), "cutoff": cutoff,
                "rejected": rej_counts.tolist(), "nan": int((reach & ~finite).sum()),
                "near_bound": int(near.sum()), "axis": drawn}

    def summary(self, dec: Decision, axis: str = "score") -> dict[str, Any]:
        """The page's JSON for one decision: funnel, counts and histograms (on ``axis``, see
        :meth:`histogram`)."""
        if axis not in AXES:
            raise RunDataError(f"axis must be one of {', '.join(AXES)}, not {axis!r}")
        hists = {str(st.index): self.histogram(dec, st, axis) for st in self.steps
                 if st.decides}
        return {"rows": self.n, "kept": dec.kept, "unscored": int(dec.unscored.sum()),
                "steps": dec.steps, "histograms": hists, "ms": round(dec.seconds * 1000, 2),
                "keep": {str(k): v.model_dump(exclude_none=True) for k, v in dec.keeps.items()}}

    def rows(self, dec: Decision, index: int, side: str, query: str = "", offset: int = 0,
             limit: int = 20) -> dict[str, Any]:
        """A page of the rows one filter step keeps or rejects, nearest the bound first."""
        st = self.step(index)
        if not st.decides:
            raise RunDataError(f"steps[{index}] is a {st.kind} step, not a filter")
        if side == "kept":
            mask = dec.entered[index] & (dec.rejected_at != index)
        elif side == "rejected":  # rows never made (their origin was rejected) never entered
            mask = dec.entered[index] & (dec.rejected_at == index)
        else:
            raise RunDataError(f"side must be kept or rejected, not {side!r}")
        idx = np.flatnonzero(mask)
        if query:
            idx = self._search(idx, query)
        total = len(idx)
        v = self.scores[st.column]
        keep = dec.keeps.get(index, st.keep)
        bounds = [b for b in (keep.min, keep.max) if b is not None] if keep else []
        if keep is not None and keep.is_global:
            kept_scores = v[dec.entered[index] & (dec.rejected_at != index) & np.isfinite(v)]
            if len(kept_scores):
                bounds.append(float(kept_scores.min() if keep.order == "highest"
                                    else kept_scores.max()))
        if bounds and len(idx):
            sv = v[idx]
            dist = np.min(np.abs(sv[:, None] - np.asarray(bounds)[None, :]), axis=1)
            dist = np.where(np.isnan(dist), np.inf, dist)
            k = offset + limit
            if k < len(idx):
                # only the first k of a stable sort: everything up to the k-th distance, ties
                # included, in stream order, then sorted
                kth = dist[np.argpartition(dist, k - 1)[k - 1]]
                near = np.flatnonzero(dist <= kth)
                idx = idx[near[np.argsort(dist[near], kind="stable")]]
            else:
                idx = idx[np.argsort(dist, kind="stable")]
        page = idx[offset:offset + limit]
        return {"total": total, "offset": offset, "rows": [self._row(i, dec, st) for i in page]}

    def _search(self, idx: np.ndarray, query: str) -> np.ndarray:
        import pyarrow.compute as pc

        # one slot, read once into a local: another thread may store its own query meanwhile
        last = self._lower.get("search")
        if last is None or last[0] != query:
            hit = np.zeros(len(self.text["src"]), dtype=bool)  # in file order
            for side in ("src", "tgt"):
                hit |= pc.match_substring(self.text[side], query, ignore_case=True).to_numpy(
                    zero_copy_only=False)
            last = (query, hit[self.file_row])
            self._lower["search"] = last
        return idx[last[1][idx]]

    def _row(self, i: int, dec: Decision, st: StepInfo | None) -> dict[str, Any]:
        at = int(dec.rejected_at[i])
        return {"id": int(self.ids[i]), "variant": int(self.variant[i]),
                "src": self.cell("src", i), "tgt": self.cell("tgt", i),
                "score": json_float(self.scores[st.column][i]) if st and st.column in self.scores
                else None,
                "rejected_by": self.steps[at].label if at < len(self.steps) else None,
                "unscored": bool(dec.unscored[i]), "weight": json_float(self.weight[i])}

    def groups(self, dec: Decision, index: int, query: str = "", offset: int = 0,
               limit: int = 10) -> dict[str, Any]:
        """Originals next to the candidates a paraphrase step made, with scores and weights."""
        st = self.step(index)
        if st.makes != ADDS:
            raise RunDataError(f"steps[{index}] is a {st.kind} step, not a paraphrase step")
        if index not in self._made:
            import pyarrow.compute as pc

            origin = self.text["origin"]
            made = pc.or_(pc.equal(origin, st.component),
                          pc.starts_with(origin, st.component + ":")).to_numpy(
                              zero_copy_only=False)[self.file_row]
            self._made[index] = np.unique(self.ids[made])
        gids = self._made[index]
        if query:
            hit = self._search(np.flatnonzero(np.isin(self.ids, gids)), query)
            gids = np.unique(self.ids[hit])
        total = len(gids)
        orig_col = f"{st.side}_original"
        out = []
        for g in gids[offset:offset + limit]:
            members = np.flatnonzero(self.ids == g)
            first = members[0]
            original = self.cell(orig_col if orig_col in self.text else st.side, first)
            rows = []
            for i in members:
                r = self._row(int(i), dec, None)
                r["score"] = json_float(self.scores[st.column][i]) if st.column in self.scores \
                    else None
                r["origin"] = self.cell("origin", i)
                rows.append(r)
            out.append({"id": int(g), "original": original, "side": st.side, "rows": rows})
        return {"total": total, "offset": offset, "groups": out}

    def changes(self, index: int, offset: int = 0, limit: int = 10) -> dict[str, Any]:
        """A page of a clean step's changed texts, before and after with the changed characters
        marked (:func:`char_diff`), from a seeded sample of at most :data:`CHANGES_SAMPLE` of the
        step's lines in ``cleaned.tsv``, in stream order; with the step's counts as the manifest
        has them (rows changed, per side) and how many texts it changed in all."""
        st = self.step(index)
        if not st.changes_text:
            raise RunDataError(f"steps[{index}] is a {st.kind} step; it changes no text")
        total, sample = self._changed_sample().get(st.label, (0, []))
        rows = []
        for _, ident, variant, column, before, after in sample[offset:offset + limit]:
            b, a = unescape(before), unescape(after)
            marked_before, marked_after = char_diff(b, a)
            rows.append({"id": ident, "variant": variant, "column": column, "before": b,
                         "after": a, "before_marked": marked_before,
                         "after_marked": marked_after})
        return {"total": total, "sampled": len(sample), "offset": offset,
                "counts": st.stored.get("counts") or {}, "rows": rows}

    def _changed_sample(self) -> dict[str, tuple[int, list[tuple]]]:
        """Per step label: how many lines of ``cleaned.tsv`` the step wrote, and a seeded
        reservoir sample of them as ``(line, id, variant, column, before, after)`` (text still
        escaped), sorted by row in stream order. Read once, on the first request."""
        if self._changes is not None:
            return self._changes
        if self.run_dir is None:
            raise RunDataError("a scores file has no cleaned.tsv: serve the run directory to see "
                               "what the clean steps changed")
        path = self.run_dir / "cleaned.tsv"
        if not path.is_file():
            raise RunDataError(f"{path}: no such file (the run's clean steps write it; rerun "
                               f"the recipe)")
        rng = random.Random(0)
        seen: dict[str, int] = {}
        kept: dict[str, list[tuple]] = {}
        with open(path, encoding="utf-8", newline="\n") as fh:
            header = fh.readline().rstrip("\n").split("\t")
            columns = ", ".join(CLEANED_COLUMNS)
            if header != CLEANED_COLUMNS:
                raise RunDataError(f"{path}:1: not a cleaned.tsv header ({columns})")
            for number, line in enumerate(fh, start=2):
                cells = line.rstrip("\n").split("\t")
                if len(cells) != len(CLEANED_COLUMNS):
                    raise RunDataError(f"{path}:{number}: {len(cells)} fields, expected "
                                       f"{len(CLEANED_COLUMNS)} ({columns})")
                if not cells[1].isdigit() or not cells[2].isdigit():
                    raise RunDataError(f"{path}:{number}: id and variant must be whole numbers")
                label = cells[0]
                n = seen.get(label, 0)
                seen[label] = n + 1
                item = (number, int(cells[1]), int(cells[2]), *cells[3:])
                sample = kept.setdefault(label, [])
                if n < CHANGES_SAMPLE:
                    sample.append(item)
                else:  # reservoir sampling: every line of the step equally likely to be shown
                    j = rng.randrange(n + 1)
                    if j < CHANGES_SAMPLE:
                        sample[j] = item
        # a row's texts together (src before tgt), rows in stream order
        self._changes = {label: (seen[label], sorted(kept[label], key=lambda t: (t[1], t[2], t[0])))
                         for label in seen}
        return self._changes

    def evaluation_plots(self) -> dict[str, list[dict[str, Any]]]:
        """Per evaluator, a histogram of each per-item statistic of its report (``items`` in
        ``reports/<name>.json``: sentence lengths, repetition, per-segment scores)."""
        if self._plots is not None:
            return self._plots
        found: dict[str, list[dict[str, Any]]] = {}
        if self.run_dir is None:
            self._plots = found
            return found
        reports = (self.run_dir / "reports").resolve()
        for name in (self.manifest.get("evaluations") or {}):
            path = (reports / f"{name}.json").resolve()
            if path.parent != reports or not path.is_file():
                continue
            try:
                items = json.loads(path.read_text(encoding="utf-8")).get("items") or {}
            except (ValueError, UnicodeDecodeError, AttributeError):
                continue
            plots = []
            for key, values in items.items():
                try:
                    v = np.asarray(values, dtype=np.float64)
                except (TypeError, ValueError):
                    continue  # not numbers
                v = v[np.isfinite(v)] if v.ndim == 1 else np.zeros(0)
                if len(v) < 2 or v.min() == v.max():
                    continue
                counts, edges = np.histogram(v, bins=30)
                plots.append({"key": key, "edges": edges.tolist(), "counts": counts.tolist(),
                              "n": int(len(v)), "mean": float(v.mean())})
            if plots:
                found[name] = plots
        self._plots = found  # whole, once made: requests in other threads read it
        return found

    def overview(self) -> dict[str, Any]:
        """What the page shows once: the recipe, the manifest, the steps, the evaluations."""
        m = self.manifest
        return {"run_dir": str(self.run_dir) if self.run_dir else None,
                "recipe_name": self.recipe.name, "recipe": self.recipe_text,
                "signature": m.get("signature", ""), "manifest": m,
                "input_rows": (m.get("input") or {}).get("rows"),
                "output_rows": (m.get("output") or {}).get("rows"), "rows": self.n,
                "steps": [st.to_dict() for st in self.steps],
                "evaluations": m.get("evaluations") or {},
                "evaluation_plots": self.evaluation_plots(), "warnings": self.warnings,
                "seconds": m.get("seconds")}

def char_diff(before: str, after: str) -> tuple[list[list[str]], list[list[str]]]:
    """``before`` and ``after`` cut into runs ``[op, text]``: ``"="`` for characters both keep,
    ``"-"`` for those only ``before`` has, ``"+"`` for those only ``after`` has (difflib's
    matching, without its junk heuristic, which would skip common characters such as spaces).
    Texts longer than :data:`DIFF_MAX_CHARS` together are one changed run each."""
    if len(before) + len(after) > DIFF_MAX_CHARS:
        return [["-", before]] if before else [], [["+", after]] if after else []
    old: list[list[str]] = []
    new: list[list[str]] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)

    def add(runs: list[list[str]], op: str, text: str) -> None:
        if runs and runs[-1][0] == op:  # a deletion between two kept runs joins them on the
            runs[-1][1] += text          # other side
        elif text:
            runs.append([op, text])

    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        add(old, "=" if op == "equal" else "-", before[i1:i2])
        add(new, "=" if op == "equal" else "+", after[j1:j2])
    return old, new


def _step_infos(recipe: Recipe, manifest: dict[str, Any]) -> list[StepInfo]:
    from ..components.registry import get_registry

    stored = {s.get("index"): s for s in manifest.get("steps", [])}
    infos = []
    replicated = False
    for i, step in enumerate(recipe.steps):
        # the step models carry what the page needs: a score column, keep/apply_to (filters) and
        # side (paraphrases); the executor class says how the step changes the rows; only
        # filters before any replicating step (a weighter) can be re-decided from scores
        kind = kind_of(step)
        ex = kind.executor
        st = StepInfo(i, step.key, step.component, step.score_column(),
                      getattr(step, "keep", None), getattr(step, "apply_to", "all"),
                      origins=getattr(step, "origins", None),
                      side=getattr(step, "side", None), decides=ex.decides, makes=ex.makes,
                      mark=ex.made_mark(step), replicates=ex.replicates, made_fate=ex.made_fate,
                      changes_text=ex.changes_text)
        if ex.decides:
            st.editable = not replicated
            st.stateful = bool(getattr(get_registry().get(kind.component, step.component),
                                       "stateful", False))
        replicated = replicated or ex.replicates
        st.stored = stored.get(i, {})
        infos.append(st)
    return infos


def load_run(run_dir: str | Path, max_rows: int | None = None) -> RunData:
    """Open a finished run directory, or say clearly why it cannot be shown. With ``max_rows``, a
    run with more rows is read as a seeded random sample of about that many (the static report)."""
    d = Path(run_dir)
    if not d.is_dir():
        raise RunDataError(f"{d}: no such run directory")
    if (d / ".shards").exists():
        raise RunDataError(f"{d}: the run is unfinished (being written, or killed: rerun "
                           f"`bitextforge run` to finish it)")
    mf = d / "manifest.json"
    if not mf.exists():
        raise RunDataError(f"{d}: no manifest.json: not a finished bitextforge run (still being "
                           f"written?)")
    try:
        manifest = json.loads(mf.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunDataError(f"{mf}: unreadable manifest ({exc})") from None
    missing = [k for k in ("bitextforge", "steps", "output") if k not in manifest]
    if missing:
        raise RunDataError(f"{mf}: no {', '.join(missing)}: written by an older or different "
                           f"version; rerun the recipe with bitextforge {__version__}")
    filled = d / "recipe.filled.yaml"
    if not filled.exists():
        raise RunDataError(f"{d}: no recipe.filled.yaml; rerun the recipe")
    text = filled.read_text(encoding="utf-8")
    recipe = parse_recipe(text, str(filled))
    tables = []
    if not (d / "corpus.tsv").exists():
        raise RunDataError(f"{d}: no corpus.tsv (the recipe's output.formats must include tsv)")
    tables.append((d / "corpus.tsv", "corpus"))
    if any(kind_of(s).executor.decides for s in recipe.steps):
        if not (d / "rejected.tsv").exists():
            raise RunDataError(f"{d}: no rejected.tsv (the recipe set output.write_rejected: "
                               f"false); rerun with it on to re-decide thresholds")
        tables.append((d / "rejected.tsv", "rejected"))
    total = manifest["output"].get("rows", 0) + manifest["output"].get("rejected", 0)
    fraction = max_rows / total if max_rows and total > max_rows else None
    data = RunData(recipe, text, manifest, tables, d, fraction)
    if manifest.get("bitextforge") != __version__:
        data.warnings.append(f"written by bitextforge {manifest.get('bitextforge')}; this is "
                             f"{__version__}")
    if fraction is None and data.n != total and \
            not any(st.makes or st.replicates for st in data.steps):
        raise RunDataError(f"{d}: corpus.tsv and rejected.tsv hold {data.n} rows, the manifest "
                           f"says {manifest['output'].get('rows')} + "
                           f"{manifest['output'].get('rejected')} (files changed after the run?)")
    return data


def load_scores(recipe_path: str | Path, scores_tsv: str | Path) -> RunData:
    """Open a scores TSV written by ``bitextforge score RECIPE -o FILE``: every row, every score."""
    recipe = load_recipe(recipe_path)
    p = Path(scores_tsv)
    if not p.is_file():
        raise RunDataError(f"{p}: no such scores file (write it with bitextforge score "
                           f"{recipe_path} -o {p})")
    text = dump_yaml(recipe.filled())
    manifest = {"bitextforge": __version__, "signature": recipe.signature(__version__),
                "recipe": recipe.name, "recipe_file": str(recipe_path), "scores_file": str(p),
                "steps": [], "output": {}}
    return RunData(recipe, text, manifest, [(p, "scores")], None)
