"""Generates the recipe reference (``docs/reference.md``) from the registered components' Config
models and the recipe schema, so the documentation cannot drift from the code (a test compares)."""

from __future__ import annotations

import inspect
import operator
from functools import reduce
from types import UnionType
from typing import Annotated, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from ..pipeline.kinds import STEP_KINDS
from ..recipe.load import EvaluateStep, InputSpec, OutputSpec, PrepareStep, Recipe
from ..components.kinds import KIND_TITLES
from ..components.registry import Registry, config_fields


def _cell(v) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def summary_line(cls) -> str:
    """The first sentence line of a component's docstring (what ``bitextforge plugins`` shows)."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    return doc.split("\n\n")[0].replace("\n", " ").strip() if doc else "(no docstring)"


def _plain(annotation):
    """``annotation`` without ``Annotated`` metadata (its constraints are not a type: a pattern
    would print as a repr of every StringConstraints attribute), with unions as ``X | None``
    (``typing.Optional[X]``'s name is just "Optional")."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _plain(args[0])
    if not args or origin is Literal:
        return annotation
    plain = tuple(_plain(a) for a in args)
    if origin in (Union, UnionType):
        return reduce(operator.or_, plain)
    return annotation if plain == args else origin[plain]


def type_label(annotation) -> str:
    """A readable type: ``'src' | 'tgt'`` for a Literal (its allowed values), else its name."""
    annotation = _plain(annotation)
    if get_origin(annotation) is Literal:
        return " | ".join(repr(v) for v in get_args(annotation))
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1 and \
            get_origin(args[0]) is Literal:
        return type_label(args[0]) + " or none"
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1 and \
            isinstance(args[0], type) and issubclass(args[0], BaseModel):
        # an option that is itself a set of options: its class name, not its module path
        return f"{args[0].__name__} | None"
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


_BOUNDS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="), ("min_length", "length >="),
           ("max_length", "length <="))


def bounds_label(field) -> str:
    """A field's constraints from ``Field(ge=1, ...)`` as text: ``>= 1, <= 10``."""
    out = []
    for meta in field.metadata:
        for attr, sym in _BOUNDS:
            v = getattr(meta, attr, None)
            if v is not None:
                out.append(f"{sym} {v}")
    return ", ".join(out)


def fields_table(model: type[BaseModel], order: list[str] | None = None) -> str:
    """A Markdown table of a model's fields (in ``order`` when given): name, type, default,
    description."""
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    names = order or list(model.model_fields)
    for name, f in ((n, model.model_fields[n]) for n in names):
        if f.exclude:
            continue
        key = f.alias or name
        tname = type_label(f.annotation)
        bounds = bounds_label(f)
        if bounds:
            tname += f" ({bounds})"
        tname = _cell(tname)
        if f.is_required():
            default = "required"
        else:
            d = f.get_default(call_default_factory=True)
            default = f"`{d!r}`" if d is not None else "–"
        rows.append(f"| `{key}` | {tname} | {_cell(default)} | {_cell(f.description or '')} |")
    return "\n".join(rows)


def component_section(cls, package: str = "bitextforge") -> str:
    """Markdown for one component: name, docstring, the extra it needs, config table."""
    from ..components.extras import install_hint

    doc = inspect.cleandoc(cls.__doc__ or "(no docstring)")
    cfg = config_fields(cls.Config)
    out = [f"### `{cls.name}`", "", doc, ""]
    if cls.extra:
        out += [f"Needs the `{cls.extra}` extra: `{install_hint(package, cls.extra)}`.", ""]
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
    ]
    for kind in STEP_KINDS.values():
        parts += [f"### {kind.key.capitalize()} step", "",
                  fields_table(kind.model, kind.model.field_order()), ""]
        for title, model in kind.model.nested:
            parts += [f"### {title}", "", fields_table(model), ""]
    parts += [
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
            parts.append(component_section(reg.cls, reg.package))
            parts.append(f"Provided by {reg.package} (plugin `{reg.plugin}`).\n")
    return "\n".join(parts).rstrip() + "\n"
