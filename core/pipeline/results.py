"""What an executor returns for one batch (:class:`StepResult`: kept rows, :class:`Rejected` and
:class:`Changed` rows, counters) and what a step sums over the run (:class:`StepStats`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..components.base import Component
from ..io.corpus import Batch


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
    #: an adding step's ``(text, source)`` keys of the texts it made, counted for duplicates
    #: where the result is recorded (in input order, also for a Ray worker's batches)
    made: list[tuple[int, int]] = field(default_factory=list)

    def counters(self) -> "StepResult":
        """This result without its rows (what a Ray worker sends back for the driver's counts)."""
        return StepResult(None, [], self.rows_rejected, self.rows_in, self.rows_out, self.seconds,
                          self.cache_hits, self.cache_misses, self.counts, made=self.made)


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
