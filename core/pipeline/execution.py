"""The common base of the executors (:class:`Executor`: a step bound to its built component, and
its counters) and what every executor needs to call a component safely: foreign failures as one
line naming the step and rows, scores checked to be numbers, candidates' columns checked."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Callable, ClassVar

from ..components.base import Component
from ..io.corpus import Batch, batch_len
from ..errors import BitextforgeError, ComponentError, StepError
from ..recipe.step_models import StepModel
from .results import StepResult, StepStats


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
    #: for a step that makes rows: which of them exist when a finished run is replayed with other
    #: bounds (``bitextforge serve``), as ``made_fate(made, alive, reach, lineage) -> (live,
    #: src)`` (see :func:`bitextforge.pipeline.adding.replaced_fate`); None for a step that
    #: makes none
    made_fate: ClassVar[Callable | None] = None

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
