"""The recipe's own models: its inputs, output, ``prepare:`` and ``evaluate:`` entries and the
whole :class:`Recipe`, with its filled copy (every default written out) and its reproducibility
signature. The step models are in :mod:`.step_models`; validating a whole recipe, component
configs included, is :mod:`.validate`'s."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..components.base import ComponentConfig
from .kinds import STEP_KINDS
from .runners import RUNNER_HELP, RunnerName
from .step_models import TagToken

_Strict = ConfigDict(extra="forbid", populate_by_name=True)


class InputSpec(BaseModel):
    """One input of the corpus: paired plain files, a TSV file or JSONL, or a monolingual file that
    holds one side only (``src:`` or ``tgt:`` alone, or ``path:`` with ``side:``), whose other
    side stays empty until a ``generate:`` step fills it (back-translation, Sennrich et al. 2016).

    ``input:`` is one such mapping, or a list of them, each with a ``name`` (the rows' ``origin``),
    read one after the other."""

    model_config = _Strict
    #: what to write instead of a key users reach for that is no field (too far from any for
    #: a nearest-name hint)
    unknown_hints: ClassVar[dict[str, str]] = {
        **dict.fromkeys(("tsv", "jsonl", "file", "files", "filename"),
                        "give the file as path: (its format is inferred from the name)"),
        **dict.fromkeys(("mono", "monolingual", "lang", "language"),
                        "a monolingual input is src: or tgt: alone, or path: with side:")}
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]+$", description="The input's name, "
                             "written to each row's `origin` (default `input`); required and "
                             "unique when `input:` is a list.")
    format: Literal["plain", "tsv", "jsonl"] | None = Field(
        None, description="plain (src + tgt files), tsv or jsonl; inferred when omitted.")
    src: str | None = Field(None, description="Source-side file, one sentence per line (.gz ok).")
    tgt: str | None = Field(None, description="Target-side file, line-aligned with src (.gz ok).")
    path: str | None = Field(None, description="The TSV or JSONL file (.gz ok); or, with `side`, "
                             "a plain monolingual file.")
    side: Literal["src", "tgt"] | None = Field(
        None, description="A monolingual input: the side its text is (inferred for a plain input "
        "with only src or only tgt); the other side is empty until a generate step fills it.")
    columns: list[str] | None = Field(None, description="TSV column names by position; must "
                                      "include src and tgt (or the `side` of a monolingual TSV). "
                                      "Default: the header line.")
    header: bool = Field(False, description="TSV: the first line is a header (skipped).")
    extra_fields: list[str] | None = Field(None, description="JSONL: extra keys to carry as columns.")
    extra_fields_policy: Literal["error", "drop-extra"] = Field(
        "error", description="TSV rows with more fields than columns: error, or keep the first ones.")
    on_invalid_utf8: Literal["error", "replace"] = Field(
        "error", description="Invalid UTF-8: stop with file and line, or replace and count.")
    skip: int = Field(0, ge=0, description="Skip the first N rows (e.g. the lines another input "
                      "reads as bitext).")
    limit: int | None = Field(None, gt=0, description="Read only the first N rows (after skip).")
    max_ratio: float | None = Field(None, gt=0, allow_inf_nan=False,
                                    description="Read at most this many rows per row "
                                    "of the two-sided inputs listed before this one (after "
                                    "repeat): a cap on monolingual text as a multiple of the "
                                    "bitext size.")
    sample: Literal["first", "random"] = Field(
        "first", description="With limit or max_ratio: take the first rows, or a random sample "
        "(seeded by the recipe's seed; the file is counted once first; input order kept).")
    repeat: int = Field(1, ge=1, description="Read the input this many times (upsampling real "
                        "bitext against synthetic rows); each copy gets fresh ids.")
    weight: float = Field(1.0, ge=0, allow_inf_nan=False,
                          description="Initial sentence weight of the input's rows "
                          "(the `weight` column, Marian's --data-weighting).")
    tag: dict[Literal["src", "tgt"], TagToken] | None = Field(
        None, description="Tokens written in front of this input's text, by side, when the corpus "
        "is written (Caswell et al. 2019's tagging of a whole input), e.g. `{tgt: <LEX>}`; steps "
        "score the text without it, and a generate step's own `tag` replaces it on the side the "
        "step fills.")

    #: fields a one-input recipe leaves out of its filled copy while they hold their default, so
    #: recipes written before several inputs existed keep their signature
    NEW_FIELDS: ClassVar[dict[str, Any]] = {"name": None, "side": None, "skip": 0,
                                            "max_ratio": None, "sample": "first", "repeat": 1,
                                            "weight": 1.0, "tag": None}

    @model_validator(mode="after")
    def _check(self):
        fmt = self.format
        if fmt is None:
            if self.src or self.tgt:
                fmt = "plain"
            elif self.path and self.side:
                fmt = "plain" if not re.search(r"\.(tsv|jsonl)(\.gz)?$", self.path) else (
                    "jsonl" if re.search(r"\.jsonl(\.gz)?$", self.path) else "tsv")
            elif self.path:
                fmt = "jsonl" if re.search(r"\.jsonl(\.gz)?$", self.path) else "tsv"
            else:
                raise ValueError("give src and tgt files, or a path to a TSV/JSONL file")
            object.__setattr__(self, "format", fmt)
        if fmt == "plain":
            if self.src and self.tgt:
                if self.side:
                    raise ValueError("side is for a monolingual input; this one has src and tgt")
            elif self.src or self.tgt:
                given = "src" if self.src else "tgt"
                if self.side not in (None, given):
                    raise ValueError(f"side: {self.side}, but the file is given as {given}")
                object.__setattr__(self, "side", given)
                if self.path:
                    raise ValueError("give the monolingual file as src, tgt or path, not two")
            elif self.path and self.side:
                object.__setattr__(self, self.side, self.path)
                object.__setattr__(self, "path", None)
            else:
                raise ValueError("format plain needs both src and tgt (or one of them alone for "
                                 "a monolingual input)")
        if fmt in ("tsv", "jsonl") and not self.path:
            raise ValueError(f"format {fmt} needs path")
        if fmt == "tsv" and not self.columns and not self.header:
            raise ValueError("a TSV input needs columns: [...] or header: true")
        return self

    @property
    def one_sided(self) -> bool:
        """True for a monolingual input (one side only)."""
        return self.side is not None

    @property
    def label(self) -> str:
        """The input's name, as written to ``origin``."""
        return self.name or "input"

    def files(self) -> list[str]:
        """The files this input reads."""
        if self.format == "plain":
            return [f for f in (self.src, self.tgt) if f]
        return [self.path] if self.path else []


def input_specs(recipe: "Recipe") -> list[InputSpec]:
    """The recipe's inputs as a list (one ``input:`` mapping is a list of one; none: empty)."""
    if recipe.input is None:
        return []
    return list(recipe.input) if isinstance(recipe.input, list) else [recipe.input]


class OutputSpec(BaseModel):
    """Where and how the run writes its results."""

    model_config = _Strict
    dir: str = Field(description="Run directory (created; files inside are replaced atomically).")
    formats: list[Literal["plain", "tsv", "jsonl", "opustrainer"]] = Field(
        default_factory=lambda: ["plain", "tsv"],
        description="plain: corpus.src/corpus.tgt; tsv: corpus.tsv with every column; jsonl; "
        "opustrainer: opustrainer/config.yml with one dataset per origin, mixed in the "
        "proportions of the output (needs tsv).")
    write_rejected: bool = Field(True, description="Write rejected.tsv: each rejected row with "
                                 "the step and score that rejected it.")
    shard_size: int | None = Field(100_000, ge=1, description="Input rows per shard: each finished "
                                   "shard is recorded so a killed run resumes after it (empty: "
                                   "one pass). A keep top/words selection follows the last shard.")
    report: bool = Field(True, description="Write report.html, a snapshot of the `bitextforge "
                         "serve` page: rows in and out per step, score histograms, samples, "
                         "evaluator tables (read back from corpus.tsv and rejected.tsv with "
                         "pyarrow, part of the core install).")


class EvaluateStep(BaseModel):
    """Evaluate the final corpus."""

    model_config = _Strict
    evaluator: str = Field(description="Registered Evaluator name, e.g. corpus_stats.v1.")
    with_: dict[str, Any] = Field(default_factory=dict, alias="with",
                                  description="The component's configuration.")


class PrepareStep(BaseModel):
    """Build a model the steps load (a Trainer), before the first line is read; skipped when its
    outputs exist."""

    model_config = _Strict
    train: str = Field(description="Registered Trainer name, e.g. nmt_model.v1.")
    with_: dict[str, Any] = Field(default_factory=dict, alias="with",
                                  description="The trainer's configuration (always an `output`).")
    force: bool = Field(False, description="Train even when the outputs exist (they are replaced "
                        "only when training succeeds).")


Step = Union[tuple(kind.model for kind in STEP_KINDS.values())]  # type: ignore[valid-type]


class Recipe(BaseModel):
    """A whole recipe, validated; ``configs`` holds each step's validated component Config."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    name: str = Field(description="Name of the recipe (used in the signature).")
    description: str = Field("", description="Free text.")
    input: InputSpec | list[InputSpec] | None = Field(
        None, description="The corpus: one input, or a list of named inputs read one after the "
        "other (bitext and monolingual text); only a recipe that just trains models (prepare: "
        "alone) has none.")
    prepare: list[PrepareStep] = Field(default_factory=list, description="Trainers run before "
                                       "the steps, each skipped when its outputs exist.")
    steps: list[Step] = Field(default_factory=list)
    evaluate: list[EvaluateStep] = Field(default_factory=list)
    output: OutputSpec | None = Field(None, description="Where results go; required with "
                                      "steps or evaluate.")
    runner: RunnerName = Field("local", description=RUNNER_HELP)
    seed: int = Field(1234, description="Seed for every random choice (sampling, shuffles).")
    batch_size: int = Field(5000, gt=0, description="Rows per columnar batch.")
    progress: bool = Field(True, description="Show a progress bar with rows per second.")

    # filled in by load_recipe (not part of the YAML)
    source: str = Field("<recipe>", exclude=True)
    configs: list[ComponentConfig] = Field(default_factory=list, exclude=True)
    eval_configs: list[ComponentConfig] = Field(default_factory=list, exclude=True)
    prepare_configs: list[ComponentConfig] = Field(default_factory=list, exclude=True)

    def filled(self) -> dict[str, Any]:
        """The recipe with every default written out, component configs included."""
        data = self.model_dump(by_alias=True, exclude={"source", "configs", "eval_configs",
                                                       "prepare_configs"})
        for prep, cfg in zip(data["prepare"], self.prepare_configs):
            prep["with"] = cfg.model_dump(mode="json")
        for i, (step, cfg) in enumerate(zip(data["steps"], self.configs)):
            step["with"] = cfg.model_dump(mode="json")
            # the component's key first, the shared with/resources last, as a user writes a step
            data["steps"][i] = {k: step[k] for k in sorted(
                step, key=lambda k: (k != self.steps[i].key, k in ("with", "resources")))}
        for ev, cfg in zip(data["evaluate"], self.eval_configs):
            ev["with"] = cfg.model_dump(mode="json")
        if isinstance(data.get("input"), dict):
            for key, default in InputSpec.NEW_FIELDS.items():
                if data["input"].get(key, default) == default:
                    data["input"].pop(key, None)
        return data

    def signature(self, version: str) -> str:
        """A one-line string that identifies what produced an output (sacrebleu style)."""
        filled = json.dumps(self.filled(), sort_keys=True, default=str)
        digest = hashlib.sha256(filled.encode()).hexdigest()[:12]
        names = "+".join(s.component for s in self.steps) or "none"
        return (f"bitextforge:{version}|recipe:{self.name}|steps:{names}|seed:{self.seed}"
                f"|config:{digest}")
