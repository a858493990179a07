"""The recipe models of the steps: one pydantic model per step kind, sharing a base that declares
what every step has (its component name, ``with:``, Ray ``resources``) and what a kind may add
(a score column, checks against its component class).

The table that ties each model to its kind of component is :mod:`.kinds`; the run adds each
kind's executor (:mod:`bitextforge.pipeline.kinds`).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (BaseModel, ConfigDict, Field, StringConstraints, field_validator,
                      model_validator)

Strict = ConfigDict(extra="forbid", populate_by_name=True)


#: a tag token (a generate step's or an input's): no spaces, so it stays one word in front of
#: the text
TagToken = Annotated[str, StringConstraints(pattern=r"^\S+$")]


class KeepSpec(BaseModel):
    """The decision of a filter step. Bounds and selections combine: min/max first, then top/words."""

    model_config = Strict
    min: float | None = Field(None, description="Keep rows whose score is >= min.")
    max: float | None = Field(None, description="Keep rows whose score is <= max.")
    top: float | None = Field(None, gt=0, allow_inf_nan=False,
                              description="Keep the best rows: a fraction in (0, 1) "
                              "or a count >= 1 over the whole corpus.")
    words: int | None = Field(None, gt=0, description="Keep the best rows until this many words "
                              "(whitespace tokens, on words_side) are reached (WMT18 filtering task).")
    words_side: Literal["src", "tgt", "both"] = Field("tgt", description="Side whose words count "
                                                      "towards `words`.")
    order: Literal["highest", "lowest"] = Field("highest", description="For top/words: whether "
                                                "high or low scores are best (perplexity: lowest).")

    @field_validator("min", "max")
    @classmethod
    def _not_nan(cls, value: float | None) -> float | None:
        # every comparison with NaN is false: a NaN bound would reject every row without a word;
        # an infinite bound is no bound, which is harmless
        if value is not None and math.isnan(value):
            raise ValueError("Input should be a number, not NaN")
        return value

    @model_validator(mode="after")
    def _check(self):
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max})")
        if self.top is not None and self.top >= 1 and self.top != int(self.top):
            raise ValueError("top must be a fraction below 1 or a whole count")
        if all(v is None for v in (self.min, self.max, self.top, self.words)):
            raise ValueError("give at least one of min, max, top, words")
        return self

    @property
    def is_global(self) -> bool:
        """True when the decision needs every score of the corpus (top or words)."""
        return self.top is not None or self.words is not None


class Resources(BaseModel):
    """What one worker of a step needs under the Ray runner (ignored by the local runner)."""

    model_config = Strict
    num_cpus: float = Field(0.5, gt=0, allow_inf_nan=False,
                            description="CPUs per worker (below 1 leaves room for "
                            "read tasks on small clusters).")
    num_gpus: float = Field(0, ge=0, allow_inf_nan=False, description="GPUs per worker.")
    concurrency: int = Field(2, ge=1, description="Workers (actors) for this step.")


class StepModel(BaseModel):
    """What every step has: the component it names (under the kind's own key, e.g. ``filter:``),
    the component's ``with:`` configuration and its Ray worker resources."""

    model_config = Strict
    #: the recipe key that names the component (``filter``, ``paraphrase``, ...)
    key: ClassVar[str] = ""
    #: nested option models documented under the step in the reference: ``(title, model)``
    nested: ClassVar[tuple[tuple[str, type[BaseModel]], ...]] = ()
    with_: dict[str, Any] = Field(default_factory=dict, alias="with",
                                  description="The component's configuration.")
    resources: Resources | None = Field(None, description="Worker resources under the Ray "
                                        "runner.")

    @classmethod
    def field_order(cls) -> list[str]:
        """Field names as a user writes a step: the component's key first, the shared ``with``
        and ``resources`` last."""
        return sorted(cls.model_fields, key=lambda n: (n != cls.key, n in ("with_", "resources")))

    @property
    def component(self) -> str:
        """The registered name of the step's component."""
        return getattr(self, self.key)

    @property
    def label(self) -> str:
        """What messages call the step after its index: its ``as:`` name, else its component's
        name without the version (``steps[3] (length_ratio)``)."""
        return getattr(self, "as_", None) or re.sub(r"\.v\d+$", "", self.component)

    def score_column(self) -> str | None:
        """The column this step writes scores to, or None when it writes none."""
        return None

    def fills(self) -> tuple[str, ...]:
        """The sides whose empty text this step fills (a generate step's ``side``)."""
        return ()

    def fills_origin(self, origin: str) -> bool:
        """Whether this step fills the empty rows of the input named ``origin`` (a generate
        step without ``origins``: every input's)."""
        return bool(self.fills())

    def check(self, cls, config, source: str, where: str) -> tuple["StepModel", list[str]]:
        """Check the step against its component class and validated ``config`` (its ``with:``);
        return the step (defaults filled from the class) and the problems found, each a full
        ``file: key.path: message`` line."""
        return self, []


class SplitStep(StepModel):
    """Replace each row by the sentence pairs a Splitter returns (nichols_split.v1)."""

    key: ClassVar[str] = "split"
    split: str = Field(description="Registered Splitter name, e.g. nichols_split.v1.")


class ParaphraseStep(StepModel):
    """Expand rows with paraphrases of one side."""

    key: ClassVar[str] = "paraphrase"
    paraphrase: str = Field(description="Registered Paraphraser name, e.g. backtranslate.v1.")
    side: Literal["src", "tgt"] = Field(description="The side whose text is replaced by candidates.")
    read: str | None = Field(None, description="Column given to the paraphraser (default: side); "
                             "back-translation paraphrases tgt reading src.")
    of: Literal["originals", "all"] = Field("originals", description="Paraphrase only variant-0 "
                                            "rows, or every row.")
    origins: list[str] | None = Field(None, min_length=1, description="Paraphrase only rows "
                                      "whose origin is one of these (input names, e.g. the "
                                      "bitext and not the back-translated input); other rows "
                                      "pass unchanged.")
    as_: str | None = Field(None, alias="as", description="Name of the candidate-score column "
                            "(default: <component>_score).")

    def score_column(self) -> str:
        """``as``, or ``<component>_score``."""
        return self.as_ or self.paraphrase.split(".")[0] + "_score"


class GenerateStep(StepModel):
    """Fill the empty side of monolingual rows by generation: back-translation of target text
    (Sennrich et al. 2016) or forward translation of source text (self-training)."""

    key: ClassVar[str] = "generate"
    generate: str = Field(description="Registered Generator name, e.g. translate.v1.")
    side: Literal["src", "tgt"] = Field(description="The side to fill; the other side is read. "
                                        "Back-translation of target monolingual text: src.")
    tag: TagToken | None = Field(None, description="A token prepended to every "
                            "generated text in the written corpus (tagged back-translation, "
                            "Caswell et al. 2019), e.g. <BT>; later steps score the text without "
                            "it, and test sets are never tagged.")
    origins: list[str] | None = Field(None, min_length=1, description="Fill only the rows of "
                                      "these inputs (their names); the empty rows of other "
                                      "inputs pass for a later generate step, so one monolingual "
                                      "text read twice can be back-translated two ways, e.g. "
                                      "beam and sampling (Edunov et al. 2018).")
    as_: str | None = Field(None, alias="as", description="Name of the generation-score column "
                            "(default: <component>_score).")

    def score_column(self) -> str:
        """``as``, or ``<component>_score``."""
        return self.as_ or self.generate.split(".")[0] + "_score"

    def fills(self) -> tuple[str, ...]:
        """The side this step fills."""
        return (self.side,)

    def fills_origin(self, origin: str) -> bool:
        """Whether this step fills the empty rows of the input named ``origin``."""
        return self.origins is None or origin in self.origins


class FilterStep(StepModel):
    """Score rows with a Filter and keep those the ``keep`` decision accepts."""

    key: ClassVar[str] = "filter"
    nested: ClassVar[tuple[tuple[str, type[BaseModel]], ...]] = (
        ("`keep` (the decision of a filter step)", KeepSpec),)
    filter: str = Field(description="Registered Filter name, e.g. length_ratio.v1.")
    keep: KeepSpec | None = Field(None, description="The decision; the filter's default if omitted.")
    cache: bool | None = Field(None, description="Cache scores by row content, component "
                               "config and the files it reads (default: the filter's "
                               "cache_scores); refused where a score depends on other rows "
                               "(guide: score cache).")
    apply_to: Literal["all", "originals", "paraphrases"] = Field(
        "all", description="Rows the decision applies to; others pass with an empty score.")
    origins: list[str] | None = Field(None, min_length=1, description="Decide only rows whose "
                                      "origin is one of these (input names, e.g. the "
                                      "back-translated monolingual input); others pass with an "
                                      "empty score.")
    as_: str | None = Field(None, alias="as", description="Score column name (default: the "
                            "component name without its version).")

    def score_column(self) -> str:
        """``as``, or the component name without its version."""
        return self.as_ or self.filter.split(".")[0]

    def check(self, cls, config, source: str, where: str) -> tuple["FilterStep", list[str]]:
        """Scores that are not a function of the row alone cannot be cached (the filter's
        ``uncacheable``); a step without ``keep`` takes the filter's default."""
        errors = []
        step = self
        why = cls.uncacheable(config) if self.cache else None
        if why:
            errors.append(f"{source}: {where}.cache: {self.filter} with these options cannot be "
                          f"cached: {why}")
        if self.keep is None:
            if cls.default_keep is None:
                errors.append(f"{source}: {where}.keep: required field missing ({self.filter} "
                              f"has no default decision; give min, max, top or words)")
            else:
                step = self.model_copy(update={"keep": KeepSpec(**cls.default_keep)})
        return step, errors


class WeightStep(StepModel):
    """Turn each group (original + paraphrases) into weighted training rows."""

    key: ClassVar[str] = "weight"
    weight: str = Field(description="Registered Weighter name, e.g. distributed.v1.")
    origins: list[str] | None = Field(None, min_length=1, description="Weight only the groups "
                                      "whose origin is one of these (input names, e.g. the "
                                      "back-translated input); other rows pass once, their "
                                      "weight unchanged.")


class CleanStep(StepModel):
    """Change the text of one or both sides with a Cleaner; every changed row is recorded."""

    key: ClassVar[str] = "clean"
    clean: str = Field(description="Registered Cleaner name, e.g. fix_mojibake.v1.")
    side: Literal["src", "tgt", "both"] = Field("both", description="The side(s) whose text is "
                                                "cleaned.")
