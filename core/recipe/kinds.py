"""The kinds of recipe step: one row each, and the one table that lists them.

A :class:`StepKind` ties a recipe key (``filter:``) to the model that validates such a step, the
kind of component it names (a row of :mod:`bitextforge.components.kinds`) and the kinds that may
not come before it. Parsing and validating a recipe ask this table; the run derives its own from
it, adding the executor that runs each kind (:mod:`bitextforge.pipeline.kinds`, which refuses a
kind that no executor runs).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from ..components.base import Component
from ..components.kinds import KINDS
from .step_models import (CleanStep, FilterStep, GenerateStep, ParaphraseStep, SplitStep,
                          StepModel, WeightStep)


@dataclass(frozen=True)
class StepKind:
    """One kind of recipe step."""

    key: str                       # the recipe key naming the component: ``filter: length.v1``
    model: type[StepModel]         # the step's recipe model
    component: str                 # the registry kind of its component
    before: tuple[str, ...] = ()   # kinds that may not come before a step of this kind

    @property
    def base(self) -> type[Component]:
        """The component base class a plugin subclasses for this kind."""
        return KINDS[self.component]


STEP_KINDS: dict[str, StepKind] = {k.key: k for k in (
    StepKind("split", SplitStep, "splitter", before=("paraphrase", "weight")),
    StepKind("generate", GenerateStep, "generator", before=("paraphrase", "weight")),
    StepKind("paraphrase", ParaphraseStep, "paraphraser"),
    StepKind("clean", CleanStep, "cleaner"),
    StepKind("filter", FilterStep, "filter"),
    StepKind("weight", WeightStep, "weighter"),
)}


def kind_of(step: BaseModel) -> StepKind:
    """The kind of a validated step model."""
    return STEP_KINDS[step.key]  # type: ignore[attr-defined]
