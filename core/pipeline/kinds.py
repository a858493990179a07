"""The step kinds as a run executes them: each kind of :mod:`bitextforge.recipe.kinds` with its
executor and what the run's summary says about its counts.

The plan, the ``score`` command, both runners, the summary and serve's replay ask this table (or
the objects it builds); no other module branches on a step's type. The recipe's side of a kind
(its key, model, component kind) is its row in :mod:`bitextforge.recipe.kinds`, and the
executor states which kind it runs (``FilterExec.kind``): a new kind is a row there, its
executor, and its row here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable

from pydantic import BaseModel

from ..recipe import kinds as recipe_kinds
from .executors import (CleanExec, Executor, FilterExec, GenerateExec, ParaphraseExec, SplitExec,
                        WeightExec)
from .notes import clean_note, filter_note, generate_note, paraphrase_note, weight_note


@dataclass(frozen=True, kw_only=True)
class StepKind(recipe_kinds.StepKind):
    """One kind of recipe step, with what runs it."""

    executor: type[Executor]       # what runs it
    #: what the run's summary table says about a step's counts (:mod:`.notes`); None: nothing
    note: Callable[[dict[str, int]], str] | None = None

    @classmethod
    def running(cls, executor: type[Executor],
                note: Callable[[dict[str, int]], str] | None = None) -> "StepKind":
        """The row of the recipe's kind that ``executor`` runs (``executor.kind``)."""
        row = recipe_kinds.STEP_KINDS[executor.kind]
        return cls(**{f.name: getattr(row, f.name) for f in fields(row)}, executor=executor,
                   note=note)


STEP_KINDS: dict[str, StepKind] = {k.key: k for k in (
    StepKind.running(SplitExec),
    StepKind.running(GenerateExec, note=generate_note),
    StepKind.running(ParaphraseExec, note=paraphrase_note),
    StepKind.running(CleanExec, note=clean_note),
    StepKind.running(FilterExec, note=filter_note),
    StepKind.running(WeightExec, note=weight_note),
)}


def kind_of(step: BaseModel) -> StepKind:
    """The kind of a validated step model."""
    return STEP_KINDS[step.key]  # type: ignore[attr-defined]
