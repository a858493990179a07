"""The executors of the steps that make rows: a split step replaces rows by their sentence pieces,
a paraphrase step adds variants of rows, a generate step fills the empty side of monolingual
rows (one row per candidate); each counts degenerate outputs (repetition loops, duplicates)."""

from __future__ import annotations

import hashlib
import time

import numpy as np

from ..components.base import Generator, Paraphraser, Splitter
from ..io.corpus import Batch, batch_len, tag_column, take_rows
from .decide import scope_rows
from ..errors import ComponentError
from ..recipe.step_models import GenerateStep, ParaphraseStep, SplitStep, StepModel
from .execution import Executor, check_candidate_columns, component_call, group_bounds
from .results import ADDS, REPLACES, Rejected, StepResult


def replaced_fate(made: np.ndarray, alive: np.ndarray, reach: np.ndarray,
                  lineage) -> tuple[np.ndarray, np.ndarray]:
    """Replaying a step that replaces rows (split, generate) over a finished run's stored rows:
    a row made from a row that no longer reaches the step is never made. ``made``: positions of
    the rows the step made; ``alive``: the rows not rejected before it; ``lineage.rep``: per row,
    the first row made from the same row, which stands for that row before the step (its fate is
    the row's). Returns which made rows exist, and the row whose fate each shares."""
    src = lineage.rep[made]
    return alive[src], src


def added_fate(made: np.ndarray, alive: np.ndarray, reach: np.ndarray,
               lineage) -> tuple[np.ndarray, np.ndarray]:
    """Replaying a step that adds variants (paraphrase): a variant exists while a row of its
    group (``lineage.group``: the original and the rows made beside it) reaches the step
    (``reach``); otherwise it shares the fate of the group's first row (``lineage.group_first``).
    Arguments and result as :func:`replaced_fate`."""
    reached = np.bincount(lineage.group[reach], minlength=len(reach)) > 0
    return reached[lineage.group[made]], lineage.group_first[made]


class SplitExec(Executor):
    """Replaces each row by the ``(src, tgt)`` pieces a Splitter's ``split(batch)`` returns.

    Every output row gets a fresh ``id`` (pieces are separate originals for later weighting); the
    input row's id is kept in ``source_id``. A row that stays whole keeps its ``origin``.
    """

    kind = "split"
    makes = REPLACES
    made_fate = staticmethod(replaced_fate)
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


class DuplicateOutputs:
    """Counts the texts a step made that it had already made for another sentence: a model that
    collapsed writes one sentence for thousands of inputs. Up to ``LIMIT`` distinct texts are
    remembered (a hash each, with the hash of the first sentence they were made for), so memory
    stays bounded; past it, texts are only compared with those remembered.

    The hashes are :func:`made_key`'s, the same in every process, so a step's Ray workers send
    them with their results and the driver counts in input order: the count does not depend on
    how many workers made the texts."""

    LIMIT = 200_000

    def __init__(self) -> None:
        """Start with nothing seen."""
        self.first_for: dict[int, int] = {}

    def count(self, key: int, source: int) -> int:
        """1 when the text of ``key`` was already made for a sentence other than ``source``
        (both :func:`made_key`), else 0."""
        seen = self.first_for.get(key)
        if seen is None:
            if len(self.first_for) < self.LIMIT:
                self.first_for[key] = source
            return 0
        return int(seen != source)


def made_key(made: str, source: str) -> tuple[int, int]:
    """The keys :class:`DuplicateOutputs` compares: a 64-bit hash of the made text (spaces
    normalised) and of the sentence it was made for, equal in every process (``hash()`` of a
    string is not: it is salted per process)."""
    def h(text: str) -> int:
        return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"),
                                              digest_size=8).digest(), "little")

    return h(" ".join(made.split())), h(source)


class MadeTexts:
    """What the adding steps share: the texts made in a batch go with its result
    (:attr:`StepResult.made`) and are counted for duplicates when the result is recorded."""

    duplicates: DuplicateOutputs
    _made: list[tuple[int, int]]

    def run(self, batch: Batch) -> StepResult:
        """Apply the step to one batch; the texts it made go with the result."""
        self._made = []
        res = super().run(batch)  # type: ignore[misc]
        res.made = self._made
        return res

    def record(self, result: StepResult) -> None:
        """Add a result's counters, and its made texts already made for another sentence."""
        super().record(result)  # type: ignore[misc]
        count = self.duplicates.count
        self.stats.count(duplicates=sum(count(k, s) for k, s in result.made))  # type: ignore


class ParaphraseExec(MadeTexts, Executor):
    """Runs a Paraphraser on one side and expands each row into variant 0 plus candidates."""

    kind = "paraphrase"
    makes = ADDS
    made_fate = staticmethod(added_fate)
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
        empty = punct = same = total = none = loops = 0
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
                    self._made.append(made_key(text, current[i]))
        self.count(originals=len(results), without_candidates=none, candidates=total,
                   empty=empty, punctuation_only=punct, identical=same, repetition_loops=loops)

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


class GenerateExec(MadeTexts, Executor):
    """Fills the empty side of monolingual rows with a Generator (back-translation of target
    text, forward translation of source text), one row per candidate; rows that already have
    both sides pass unchanged, and a sentence the generator gives no text for is rejected."""

    kind = "generate"
    makes = REPLACES
    made_fate = staticmethod(replaced_fate)
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
        loops = total = 0
        made_keys: list[tuple[int, int]] = []
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
                made_keys.append(made_key(cand[0], R[i]))
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
                   repetition_loops=loops)
        res.counts = self._counts
        res.made = made_keys
        res.seconds = time.perf_counter() - t0
        return res
