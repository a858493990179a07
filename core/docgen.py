"""Generates the recipe reference (``docs/reference.md``) from the registered components' Config
models and the recipe schema, so the documentation cannot drift from the code (a test compares)."""

from __future__ import annotations

import inspect

from pydantic import BaseModel

from .recipe import (EvaluateStep, FilterStep, InputSpec, KeepSpec, OutputSpec, ParaphraseStep,
                     PrepareStep, Recipe, SplitStep, WeightStep)
from .registry import Registry, config_fields

KIND_TITLES = {"splitter": "Splitters", "paraphraser": "Paraphrasers", "filter": "Filters", "weighter": "Weighters",
               "evaluator": "Evaluators", "trainer": "Trainers"}


def _cell(v) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def fields_table(model: type[BaseModel]) -> str:
    """A Markdown table of a model's fields: name, type, default, description."""
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    for name, f in model.model_fields.items():
        if f.exclude:
            continue
        key = f.alias or name
        tname = _cell(getattr(f.annotation, "__name__", None) or
                      str(f.annotation).replace("typing.", ""))
        if f.is_required():
            default = "required"
        else:
            d = f.get_default(call_default_factory=True)
            default = f"`{d!r}`" if d is not None else "–"
        rows.append(f"| `{key}` | {tname} | {_cell(default)} | {_cell(f.description or '')} |")
    return "\n".join(rows)


def component_section(cls) -> str:
    """Markdown for one component: name, docstring, config table."""
    doc = inspect.cleandoc(cls.__doc__ or "(no docstring)")
    cfg = config_fields(cls.Config)
    out = [f"### `{cls.name}`", "", doc, ""]
    if getattr(cls, "default_keep", None):
        out += [f"Default decision when a step gives no `keep`: `{cls.default_keep}`.", ""]
    if cfg:
        out.append(fields_table(cls.Config))
    else:
        out.append("No options.")
    return "\n".join(out) + "\n"


def render_reference(registry: Registry) -> str:
    """The whole recipe reference as Markdown."""
    parts = [
        "# Recipe reference",
        "",
        "Generated from the code by `bitextforge reference > docs/reference.md`; "
        "a test fails when this file is stale.",
        "",
        "## Recipe", "", fields_table(Recipe), "",
        "### `input`", "", fields_table(InputSpec), "",
        "### `output`", "", fields_table(OutputSpec), "",
        "### Prepare entry (a trainer)", "", fields_table(PrepareStep), "",
        "### Split step", "", fields_table(SplitStep), "",
        "### Paraphrase step", "", fields_table(ParaphraseStep), "",
        "### Filter step", "", fields_table(FilterStep), "",
        "### `keep` (the decision of a filter step)", "", fields_table(KeepSpec), "",
        "### Weight step", "", fields_table(WeightStep), "",
        "### Evaluate entry", "",
        "A name (`- corpus_stats.v1`) or a mapping:", "", fields_table(EvaluateStep), "",
    ]
    by_kind: dict[str, list] = {}
    for kind, reg in registry.registrations():
        by_kind.setdefault(kind, []).append(reg)
    for kind, title in KIND_TITLES.items():
        regs = by_kind.get(kind, [])
        parts += [f"## {title}", ""]
        if not regs:
            parts += ["None registered.", ""]
        for reg in regs:
            parts.append(component_section(reg.cls))
            parts.append(f"Provided by {reg.package} (plugin `{reg.plugin}`).\n")
    return "\n".join(parts).rstrip() + "\n"
