"""Executors: each applies one recipe step to columnar batches and returns what it did.

An executor wraps one component instance, built once per run. :meth:`Executor.run` takes a batch
and returns a :class:`StepResult`: the kept rows, the rejected rows (with the step and score that
rejected them) and the step's counters for this batch. Runners compose these results and the sink
writes them; an executor never writes anything itself. A split step replaces rows by their
sentence pieces, a paraphrase step expands rows into variants, a filter step scores and decides
(streaming for ``min``/``max``, two passes over a spill file for the corpus-wide ``top``/``words``),
a weight step replaces each group by weighted rows (Nichols et al., section 4.2), a clean step
changes text and returns each change it made (:class:`Changed`) for ``cleaned.tsv``.
"""

from __future__ import annotations

import math
import pickle
import tempfile
import time
from array import array
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Iterator

from ..components.base import Cleaner, Component, Filter, Generator, Paraphraser, Splitter, Weighter
from ..io.corpus import Batch, batch_len, tag_column, take_rows
from .decide import count_words, scope_rows, select_global, selection_cut, within_bounds
from ..errors import BitextforgeError, ComponentError, StepError
from ..recipe.step_models import (CleanStep, FilterStep, GenerateStep, KeepSpec, ParaphraseStep,
                          SplitStep, StepModel)

NAN = float("nan")

#: :attr:`Executor.makes` of a step whose new rows join the rows it was given (a paraphrase step)
ADDS = "adds"
#: :attr:`Executor.makes` of a step whose new rows take the place of the rows it was given (a split)
REPLACES = "replaces"


@dataclass
class Rejected:
    """Rows one step rejected, why (``steps[i]:name`` plus the selection), and their scores."""

    batch: Batch
    why: str
    scores: list
    #: per row, what the filter says rejected it (a composite's rule), or None: ``why`` alone
    reasons: list[str] | None = None


@dataclass
class Changed:
    """Rows one clean step changed in one column: their ids and variants, the text before and
    after (what ``cleaned.tsv`` lists)."""

    step: str
    column: str
    ids: list
    variants: list
    before: list[str]
    after: list[str]


@dataclass
class StepResult:
    """What one step did to one batch: the rows it kept (None in the scoring pass of a corpus-wide
    selection, whose rows are held back until the selection), the rows it rejected, and counters."""

    kept: Batch | None
    rejected: list[Rejected] = field(default_factory=list)
    rows_rejected: int = 0
    rows_in: int = 0
    rows_out: int = 0
    seconds: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    counts: dict[str, int] = field(default_factory=dict)  # the step's additive counts
    changed: list[Changed] = field(default_factory=list)  # a clean step's changes, in row order

    def counters(self) -> "StepResult":
        """This result without its rows (what a Ray worker sends back for the driver's counts)."""
        return StepResult(None, [], self.rows_rejected, self.rows_in, self.rows_out, self.seconds,
                          self.cache_hits, self.cache_misses, self.counts)


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
        #: additive counts (paraphrase candidates, groups without a paraphrase, ...); the Ray
        #: runner sums its workers' counts into the driver's
        self.counters: dict[str, int] = {}
        #: the cut of a top/words decision: the score of the last row kept, and what was kept
        self.threshold: dict[str, Any] | None = None

    def count(self, **amounts: int) -> None:
        """Add to the named counters."""
        for k, v in amounts.items():
            self.counters[k] = self.counters.get(k, 0) + v

    def to_dict(self) -> dict[str, Any]:
        """The manifest entry."""
        c = self.component
        d = {"index": self.index, "kind": self.kind, "component": c.name,
             "config": c.config.model_dump(mode="json"), "rows_in": self.rows_in,
             "rows_out": self.rows_out, "seconds": round(self.seconds, 3)}
        if self.counters:
            d["counts"] = dict(self.counters)
        if self.threshold is not None:
            d["effective_threshold"] = self.threshold
        if c.learned is not None:  # what a warning about its output blames (summary.py)
            d["learned"] = c.learned
        info = {**c.manifest_info(), **self.extra}
        if info:
            d["info"] = info
        return d


@contextmanager
def component_call(label: str, method: str, batch: Batch):
    """Turn an exception raised inside a component's ``method`` into one line that names the step
    and the rows it was working on; the original stays as the cause (``--debug`` prints it)."""
    try:
        yield
    except BitextforgeError:
        raise
    except Exception as exc:  # noqa: BLE001 - foreign code: any failure becomes a StepError
        ids = batch.get("id") or []
        rows = f"rows with id {min(ids)}-{max(ids)}" if ids else "an empty batch"
        detail = str(exc).strip().splitlines()
        raise StepError(f"{label}: {method} failed on {rows}: {type(exc).__name__}"
                        f"{': ' + detail[0] if detail else ''}") from exc


def as_scores(raw, label: str) -> list[float]:
    """A filter's scores as floats; text, None or other non-numbers are refused with the step's
    name (``float("0.5")`` would otherwise accept a string silently)."""
    kind = getattr(getattr(raw, "dtype", None), "kind", None)
    if kind is not None and kind in "biuf":  # a numeric NumPy array: no per-value check needed
        return raw.astype(float).tolist()
    values = list(raw)
    if not any(issubclass(t, (str, bytes, type(None), memoryview)) for t in set(map(type, values))):
        try:
            return list(map(float, values))
        except (TypeError, ValueError):
            pass
    for i, v in enumerate(values):
        try:
            if isinstance(v, (str, bytes)) or v is None:
                raise TypeError
            float(v)
        except (TypeError, ValueError):
            raise ComponentError(f"{label}: score() returned a non-numeric score {v!r} (row {i} "
                                 f"of a batch); scores must be numbers") from None
    raise AssertionError("unreachable: every value converted")  # pragma: no cover


def check_candidate_columns(name: str, info: dict, declared: tuple[str, ...],
                            also: tuple[str, ...] = ()) -> None:
    """Refuse a candidate whose info dict carries a column its component did not declare in
    ``extra_columns`` (``also``: keys the step reads itself, a paraphrase's ``provenance``)."""
    unknown = set(info) - set(declared) - set(also)
    if unknown:
        raise ComponentError(f"{name}: candidate carries undeclared columns {sorted(unknown)}; "
                             f"declare them in extra_columns")


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


class Executor:
    """Common base of the executors: binds a step to its built component and counts.

    Subclasses implement :meth:`apply` (a batch in, the kept batch out) or, when a step rejects
    rows, override :meth:`run`. The driver adds each result's counters with :meth:`record`.
    """

    kind: ClassVar[str] = ""
    #: the step keeps or rejects rows by a score (the run's score report plots these)
    decides: ClassVar[bool] = False
    #: the step runs in ``bitextforge score`` (which scores rows and decides nothing)
    in_score: ClassVar[bool] = True
    #: the step changes text and reports each change (the sink writes ``cleaned.tsv``)
    changes_text: ClassVar[bool] = False
    #: whether the step makes rows, for replaying a finished run from its stored rows
    #: (``bitextforge serve``): None (it passes or drops the rows it is given), :data:`ADDS` or
    #: :data:`REPLACES`; the rows it made are those with a value in :meth:`made_mark`
    makes: ClassVar[str | None] = None
    #: the step writes a row it keeps possibly several times (a weighter's replicas)
    replicates: ClassVar[bool] = False

    @classmethod
    def made_mark(cls, step: StepModel) -> str | None:
        """The output column that holds a value in exactly the rows this step made (for
        :data:`REPLACES`, the id of the row each was made from); None for a step that makes none."""
        return None

    def __init__(self, index: int, step: StepModel, comp: Component):
        """Bind ``step`` to ``comp`` at position ``index``."""
        self.index = index
        self.step = step
        self.comp = comp
        self.stats = StepStats(index, self.kind, comp)
        self.label = f"steps[{index}]:{comp.name}"
        self.rejected = 0
        self._counts: dict[str, int] = {}

    @property
    def needs_all_rows(self) -> bool:
        """True when the step decides over the whole corpus (two passes, never sharded)."""
        return False

    @property
    def in_order(self) -> bool:
        """True when the step must see every batch in input order in one process: its result
        depends on earlier batches (a stateful component) or it numbers rows across batches."""
        return self.comp.stateful

    def columns(self) -> list[str]:
        """Columns this step adds."""
        return []

    def apply(self, batch: Batch) -> Batch:
        """The kept rows of one batch (steps that reject rows override :meth:`run` instead)."""
        raise NotImplementedError

    def run(self, batch: Batch) -> StepResult:
        """Apply the step to one batch."""
        t0 = time.perf_counter()
        self._counts = {}
        out = self.apply(batch)
        return StepResult(out, rows_in=batch_len(batch), rows_out=batch_len(out),
                          seconds=time.perf_counter() - t0, counts=self._counts)

    def count(self, **amounts: int) -> None:
        """Add to the named counts of the batch being applied (they reach the manifest through
        the result, also from a Ray worker)."""
        for k, v in amounts.items():
            self._counts[k] = self._counts.get(k, 0) + v

    def score_only(self, batch: Batch) -> Batch:
        """The batch with this step's columns and no row removed (``bitextforge score``)."""
        res = self.run(batch)
        self.record(res)
        return res.kept

    def record(self, result: StepResult) -> None:
        """Add a result's counters to this step's totals."""
        st = self.stats
        st.rows_in += result.rows_in
        st.rows_out += result.rows_out
        st.seconds += result.seconds
        st.count(**result.counts)
        self.rejected += result.rows_rejected

    def get_state(self) -> Any:
        """State of the executor itself saved with each finished shard (None: none)."""
        return None

    def set_state(self, state: Any) -> None:
        """Restore what :meth:`get_state` returned."""

    def close(self) -> None:
        """Release what the executor opened (the component is closed by the plan)."""


class SplitExec(Executor):
    """Replaces each row by the ``(src, tgt)`` pieces a Splitter's ``split(batch)`` returns.

    Every output row gets a fresh ``id`` (pieces are separate originals for later weighting); the
    input row's id is kept in ``source_id``. A row that stays whole keeps its ``origin``.
    """

    kind = "split"
    makes = REPLACES
    comp: Splitter

    def __init__(self, index: int, step: SplitStep, comp: Splitter):
        """Bind a built Splitter."""
        super().__init__(index, step, comp)
        self.next_id = 0

    @property
    def in_order(self) -> bool:
        """Always: fresh ids are numbered from batch to batch."""
        return True

    def columns(self) -> list[str]:
        """Columns this step adds."""
        return ["source_id"]

    @classmethod
    def made_mark(cls, step: StepModel) -> str:
        """``source_id``: every piece holds the id of the row it was split from."""
        return "source_id"

    def get_state(self) -> int:
        """The next fresh id (saved with each shard so a resumed run numbers rows the same)."""
        return self.next_id

    def set_state(self, state: int) -> None:
        """Restore the next fresh id."""
        self.next_id = state

    def apply(self, batch: Batch) -> Batch:
        """Split one batch."""
        n = batch_len(batch)
        with component_call(self.label, "split()", batch):
            pieces = self.comp.split(batch) if n else []
        if len(pieces) != n:
            raise ComponentError(f"{self.label}: split() returned {len(pieces)} lists for "
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
        return out


class ParaphraseExec(Executor):
    """Runs a Paraphraser on one side and expands each row into variant 0 plus candidates."""

    kind = "paraphrase"
    makes = ADDS
    comp: Paraphraser
    step: ParaphraseStep

    def __init__(self, index: int, step: ParaphraseStep, comp: Paraphraser):
        """Bind the step's options to a built component."""
        super().__init__(index, step, comp)
        self.side = step.side
        self.read = step.read or step.side
        self.orig_col = f"{step.side}_original"
        self.score_col = step.score_column()
        self.extra = tuple(comp.extra_columns)
        self.duplicates = DuplicateOutputs()

    def columns(self) -> list[str]:
        """Columns this step adds."""
        return [self.orig_col, self.score_col, *self.extra]

    @classmethod
    def made_mark(cls, step: StepModel) -> str | None:
        """The candidate-score column: the rows given to the step pass with it empty (a recipe
        writes each score column once), every candidate has a score."""
        return step.score_column()

    def _count_candidates(self, targets, results, current: list[str]) -> None:
        """Count originals without a candidate and degenerate candidates (empty, punctuation
        only, identical to the text they replace), for the summary's warnings."""
        empty = punct = same = total = none = loops = dups = 0
        for i, cands in zip(targets, results):
            if not cands:
                none += 1
                continue
            ref = " ".join(current[i].lower().split())
            for cand in cands:
                text = cand[0]
                total += 1
                if not text.strip():
                    empty += 1
                elif not any(ch.isalnum() for ch in text):
                    punct += 1
                elif " ".join(text.lower().split()) == ref:
                    same += 1
                else:
                    loops += repetition_loop(text)
                    dups += self.duplicates.count(text, current[i])
        self.count(originals=len(results), without_candidates=none, candidates=total,
                   empty=empty, punctuation_only=punct, identical=same, repetition_loops=loops,
                   duplicates=dups)

    def apply(self, batch: Batch) -> Batch:
        """Paraphrase one batch."""
        n = batch_len(batch)
        if self.read not in batch:
            raise ComponentError(f"{self.label}: read column {self.read!r} does not exist; "
                                 f"columns are {', '.join(batch)}")
        V = batch["variant"]
        O = batch["origin"]
        # of: originals / all are the filters' apply_to scopes of the same names
        targets = scope_rows("all" if self.step.of == "all" else "originals", V, O,
                             self.step.origins)
        if targets is None:
            targets = range(n)
        col = batch[self.read]
        S = batch[self.side]
        texts = [col[i] for i in targets]
        with component_call(self.label, "paraphrase()", batch):
            if texts and self.comp.reads_side:
                results = self.comp.paraphrase(texts, side=[S[i] for i in targets])
            else:
                results = self.comp.paraphrase(texts) if texts else []
        if len(results) != len(texts):
            raise ComponentError(f"{self.label}: paraphrase() returned {len(results)} lists "
                                 f"for {len(texts)} sentences")
        cands = dict(zip(targets, results))
        self._count_candidates(targets, results, S)
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
                        check_candidate_columns(name, info, self.extra, ("provenance",))
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
        return out


def repetition_loop(text: str, min_repeats: int = 4, max_span: int = 4) -> bool:
    """True when ``text`` ends in, or contains, a degenerate loop: one word or a span of up to
    ``max_span`` words repeated ``min_repeats`` or more times in a row ("the the the the",
    "a man , a man , a man , a man ,"), the failure of an undertrained decoder."""
    words = text.split()
    n = len(words)
    for span in range(1, max_span + 1):
        need = span * min_repeats
        if n < need:
            break
        for start in range(0, n - need + 1):
            unit = words[start:start + span]
            if all(words[start + r * span:start + (r + 1) * span] == unit
                   for r in range(1, min_repeats)):
                return True
    return False


class DuplicateOutputs:
    """Counts the texts a step made that it had already made for another sentence: a model that
    collapsed writes one sentence for thousands of inputs. Up to ``LIMIT`` distinct texts are
    remembered (a hash each, with the hash of the first sentence they were made for), so memory
    stays bounded; past it, texts are only compared with those remembered."""

    LIMIT = 200_000

    def __init__(self) -> None:
        """Start with nothing seen."""
        self.first_for: dict[int, int] = {}

    def count(self, made: str, source: str) -> int:
        """1 when ``made`` was already made for a sentence other than ``source``, else 0."""
        key, src = hash(" ".join(made.split())), hash(source)
        seen = self.first_for.get(key)
        if seen is None:
            if len(self.first_for) < self.LIMIT:
                self.first_for[key] = src
            return 0
        return int(seen != src)


class GenerateExec(Executor):
    """Fills the empty side of monolingual rows with a Generator (back-translation of target
    text, forward translation of source text), one row per candidate; rows that already have
    both sides pass unchanged, and a sentence the generator gives no text for is rejected."""

    kind = "generate"
    makes = REPLACES
    comp: Generator
    step: GenerateStep

    def __init__(self, index: int, step: GenerateStep, comp: Generator):
        """Bind the step's options to a built component."""
        super().__init__(index, step, comp)
        self.side = step.side
        self.read = "tgt" if step.side == "src" else "src"
        self.score_col = step.score_column()
        self.extra = tuple(comp.extra_columns)
        # Caswell et al.'s tag is not written into the text here: the steps after this one score
        # the generated sentence itself (a tag in the text made dual cross-entropy prefer long
        # sentences and changed 2,791 of 18,000 kept back-translations), and the sink puts the
        # tag in front when it writes the corpus (core.io.corpus.with_tags)
        self.tag = step.tag or ""
        self.tag_col = tag_column(step.side) if step.tag else None
        self.made_by = comp.describe() + (f" tag={step.tag}" if step.tag else "")
        self.duplicates = DuplicateOutputs()

    def columns(self) -> list[str]:
        """Columns this step adds."""
        return [self.score_col, "generated_by", "generated_from", *self.extra,
                *([self.tag_col] if self.tag_col else [])]

    @classmethod
    def made_mark(cls, step: StepModel) -> str:
        """``generated_from``: the id of the monolingual row a generated row replaced (its own
        id), empty in every other row."""
        return "generated_from"

    def run(self, batch: Batch) -> StepResult:
        """Generate for one batch's monolingual rows."""
        t0 = time.perf_counter()
        self._counts = {}
        n = batch_len(batch)
        S, R, O = batch[self.side], batch[self.read], batch["origin"]
        want = set(self.step.origins) if self.step.origins is not None else None
        targets = [i for i in range(n) if not S[i] and R[i] and (want is None or O[i] in want)]
        if not targets:  # bitext rows: nothing to generate
            batch.setdefault(self.score_col, [None] * n)
            batch.setdefault("generated_by", [""] * n)
            batch.setdefault("generated_from", [None] * n)
            for k in self.extra:
                batch.setdefault(k, [None] * n)
            if self.tag_col:
                batch.setdefault(self.tag_col, [""] * n)
            return StepResult(batch, rows_in=n, rows_out=n, seconds=time.perf_counter() - t0)
        texts = [R[i] for i in targets]
        with component_call(self.label, "generate()", batch):
            results = self.comp.generate(texts) if texts else []
        if len(results) != len(texts):
            raise ComponentError(f"{self.label}: generate() returned {len(results)} lists "
                                 f"for {len(texts)} sentences")
        cands = dict(zip(targets, results))
        old_score = batch.get(self.score_col)
        old_made = batch.get("generated_by")
        old_from = batch.get("generated_from")
        old_extra = {k: batch.get(k) for k in self.extra}
        old_tag = batch.get(self.tag_col) if self.tag_col else None
        tags: list[str] = []
        idx: list[int] = []
        variant: list[int] = []
        text: list[str] = []
        score: list = []
        made: list[str] = []
        made_from: list = []
        extra: dict[str, list] = {k: [] for k in self.extra}
        failed: list[int] = []
        loops = total = dups = 0
        V = batch["variant"]
        for i in range(n):
            if i not in cands:
                idx.append(i)
                variant.append(V[i])
                text.append(S[i])
                score.append(old_score[i] if old_score is not None else None)
                made.append(old_made[i] if old_made is not None else "")
                made_from.append(old_from[i] if old_from is not None else None)
                for k, lst in extra.items():
                    prev = old_extra[k]
                    lst.append(prev[i] if prev is not None else None)
                tags.append(old_tag[i] if old_tag is not None else "")
                continue
            got = [c for c in cands[i] if c[0].strip()]
            if not got:
                failed.append(i)
                continue
            for j, cand in enumerate(got):
                total += 1
                loops += repetition_loop(cand[0])
                dups += self.duplicates.count(cand[0], R[i])
                idx.append(i)
                variant.append(V[i] + j)
                text.append(cand[0])
                tags.append(self.tag)
                score.append(float(cand[1]))
                made.append(self.made_by)
                made_from.append(batch["id"][i])
                info = cand[2] if len(cand) > 2 else None
                if info:
                    check_candidate_columns(self.comp.name, info, self.extra)
                for k, lst in extra.items():
                    lst.append(info.get(k) if info else None)
        out = take_rows(batch, idx)
        out["variant"] = variant
        out[self.side] = text
        out[self.score_col] = score
        out["generated_by"] = made
        out["generated_from"] = made_from
        out.update(extra)
        if self.tag_col:
            out[self.tag_col] = tags
        res = StepResult(out, rows_in=n, rows_out=len(idx))
        if failed:
            rej = take_rows(batch, failed)
            rej[self.score_col] = [None] * len(failed)
            rej["generated_by"] = [self.made_by] * len(failed)
            rej["generated_from"] = [None] * len(failed)
            for k in self.extra:
                rej[k] = [None] * len(failed)
            if self.tag_col:
                rej[self.tag_col] = [""] * len(failed)
            res.rejected.append(Rejected(rej, f"{self.label}: no output", [None] * len(failed)))
            res.rows_rejected = len(failed)
        self.count(sentences=len(targets), generated=total, without_output=len(failed),
                   repetition_loops=loops, duplicates=dups)
        res.counts = self._counts
        res.seconds = time.perf_counter() - t0
        return res


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
        """Streaming decision (min/max only)."""
        res = self._bounded(batch)
        res.rows_out = batch_len(res.kept)
        return res

    def select(self, stream: Iterable[Batch]) -> Iterator[StepResult]:
        """Two passes for top/words: score everything into a spill file, then select.

        The first pass yields one result per batch with ``kept=None`` (its min/max rejections and
        counters; the kept rows wait in the spill file); the second yields the selected batches.
        """
        keep = self.keep
        side = keep.words_side
        scores = array("d")
        words = array("q")
        with tempfile.TemporaryFile(prefix="bitextforge-spill-") as spill:
            nb = 0
            for batch in stream:
                t0 = time.perf_counter()
                res = self._bounded(batch)
                kept = res.kept
                res.kept = None
                pickle.dump(kept, spill, protocol=pickle.HIGHEST_PROTOCOL)
                nb += 1
                # out-of-scope rows (None) are always kept: mark them +inf for the selection
                scores.extend(math.inf if v is None else v for v in kept[self.col])
                if keep.words is not None:
                    words.extend(count_words(kept["src"], kept["tgt"], side).tolist())
                res.seconds = time.perf_counter() - t0
                yield res
            t0 = time.perf_counter()
            selected = self._select(scores, words)
            pending = time.perf_counter() - t0
            spill.seek(0)
            pos = 0
            why = f" (top {keep.top})" if keep.top is not None else f" (words {keep.words})"
            for _ in range(nb):
                batch = pickle.load(spill)
                t0 = time.perf_counter()
                n = batch_len(batch)
                mask = [bool(x) for x in selected[pos:pos + n]]
                pos += n
                res = StepResult(None)
                res.kept = self._split(batch, mask, why, res)
                res.rows_out = batch_len(res.kept)
                res.seconds = time.perf_counter() - t0 + pending
                pending = 0.0
                yield res

    def _select(self, scores: array, words: array):
        """The selection over the spilled scores; its cut goes to the manifest."""
        import numpy as np

        s = np.frombuffer(scores, dtype=np.float64) if len(scores) else np.zeros(0)
        w = np.frombuffer(words, dtype=np.int64) if len(words) else np.zeros(0, dtype=np.int64)
        selected = select_global(self.keep, s, w)
        self.stats.threshold = selection_cut(self.keep, s, w, selected)
        return selected


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
