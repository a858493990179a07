"""The table of step kinds: each kind a recipe step can have is declared here once.

A :class:`StepKind` ties a recipe key (``filter:``) to its recipe model, the registry kind and base
class of its component, and the executor that runs it. Recipe parsing and validation, the plan, the
``score`` command and both runners ask this table (or the objects it builds); no other module
branches on a step's type. Adding a kind means adding one row here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pydantic import BaseModel

from ..components.base import KINDS, Component
from ..recipe.step_models import (CleanStep, FilterStep, GenerateStep, ParaphraseStep, SplitStep,
                          StepModel, WeightStep)
from .executors import (CleanExec, Executor, FilterExec, GenerateExec, ParaphraseExec, SplitExec,
                    WeightExec)
from ..report.summary import clean_note, filter_note, generate_note, paraphrase_note, weight_note


@dataclass(frozen=True)
class StepKind:
    """One kind of recipe step."""

    key: str                       # the recipe key naming the component: ``filter: length.v1``
    model: type[StepModel]         # the step's recipe model
    component: str                 # the registry kind of its component
    executor: type[Executor]       # what runs it
    before: tuple[str, ...] = ()   # kinds that may not come before a step of this kind
    #: what the run's summary table says about a step's counts (``report/summary.py``); None: nothing
    note: Callable[[dict[str, int]], str] | None = None

    @property
    def base(self) -> type[Component]:
        """The component base class a plugin subclasses for this kind."""
        return KINDS[self.component]


STEP_KINDS: dict[str, StepKind] = {k.key: k for k in (
    StepKind("split", SplitStep, "splitter", SplitExec, before=("paraphrase", "weight")),
    StepKind("generate", GenerateStep, "generator", GenerateExec, before=("paraphrase", "weight"),
             note=generate_note),
    StepKind("paraphrase", ParaphraseStep, "paraphraser", ParaphraseExec, note=paraphrase_note),
    StepKind("clean", CleanStep, "cleaner", CleanExec, note=clean_note),
    StepKind("filter", FilterStep, "filter", FilterExec, note=filter_note),
    StepKind("weight", WeightStep, "weighter", WeightExec, note=weight_note),
)}


def kind_of(step: BaseModel) -> StepKind:
    """The kind of a validated step model."""
    return STEP_KINDS[step.key]  # type: ignore[attr-defined]
