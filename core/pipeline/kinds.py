"""The step kinds as a run executes them: each row of :mod:`bitextforge.recipe.kinds`, the one
table of step kinds, with the executor that runs it and what the run's summary says about its
counts.

The plan, the ``score`` command, both runners, the summary and serve's replay ask this table (or
the objects it builds); no other module branches on a step's type. Nothing here lists the kinds:
the rows are the recipe table's, in its order, and each executor states which kind it runs
(``FilterExec.kind``). A new kind is its row in the recipe table and its executor in
:data:`EXECUTORS`; a kind that no executor runs, or an executor of no kind, fails at import.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Mapping

from pydantic import BaseModel

from ..recipe import kinds as recipe_kinds
from .executors import (CleanExec, Executor, FilterExec, GenerateExec, ParaphraseExec, SplitExec,
                        WeightExec)
from .notes import clean_note, filter_note, generate_note, paraphrase_note, weight_note

#: what the run's summary table says about a step's counts (:mod:`.notes`)
Note = Callable[[dict[str, int]], str]


@dataclass(frozen=True, kw_only=True)
class StepKind(recipe_kinds.StepKind):
    """One kind of recipe step, with what runs it."""

    executor: type[Executor]       # what runs it
    note: Note | None = None       # None: the summary says nothing about its counts


#: every executor, each with its summary note (None: none); ``executor.kind`` names its recipe row
EXECUTORS: tuple[tuple[type[Executor], Note | None], ...] = (
    (SplitExec, None),
    (GenerateExec, generate_note),
    (ParaphraseExec, paraphrase_note),
    (CleanExec, clean_note),
    (FilterExec, filter_note),
    (WeightExec, weight_note),
)


def running(kinds: Mapping[str, recipe_kinds.StepKind],
            executors: tuple[tuple[type[Executor], Note | None], ...]) -> dict[str, StepKind]:
    """Each row of the recipe's ``kinds`` with the executor that states it runs that kind, in the
    recipe table's order; a kind without exactly one executor, or an executor of no kind, is a
    ``LookupError`` naming them."""
    by_kind: dict[str, list[tuple[type[Executor], Note | None]]] = {}
    for ex, note in executors:
        by_kind.setdefault(ex.kind, []).append((ex, note))
    wrong = [f"{ex.__name__} runs {ex.kind!r}, which is no step kind"
             for ex, _ in executors if ex.kind not in kinds]
    wrong += [f"step kind {key!r} has {len(by_kind.get(key, []))} executors, not one"
              for key in kinds if len(by_kind.get(key, [])) != 1]
    if wrong:
        raise LookupError("; ".join(wrong))
    out = {}
    for key, row in kinds.items():
        [(ex, note)] = by_kind[key]
        out[key] = StepKind(**{f.name: getattr(row, f.name) for f in fields(row)}, executor=ex,
                            note=note)
    return out


STEP_KINDS: dict[str, StepKind] = running(recipe_kinds.STEP_KINDS, EXECUTORS)


def kind_of(step: BaseModel) -> StepKind:
    """The kind of a validated step model."""
    return STEP_KINDS[step.key]  # type: ignore[attr-defined]
