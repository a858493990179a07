"""A whole recipe validated before anything runs (explosion/confection): the top level, every
``prepare:``, step and ``evaluate:`` entry, each component's ``with:`` against its ``Config``,
then the checks across entries (unique score columns, inputs that a step fills, ``origins`` that
name inputs). Every problem is collected with its key path and raised as one error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..components.base import ComponentConfig
from ..components.registry import Registry, get_registry, suggest
from ..errors import RecipeError, RegistryError, clip, quote
from .kinds import STEP_KINDS
from .errors import format_validation_error
from .models import EvaluateStep, PrepareStep, Recipe, input_specs


def validate_recipe(data: dict, source: str, registry: Registry | None) -> Recipe:
    """The recipe mapping (overrides applied) validated; every problem listed in one error."""
    if isinstance(data.get("output"), str):
        data["output"] = {"dir": data["output"]}
    steps_raw = data.get("steps") or []
    if not isinstance(steps_raw, list):
        raise RecipeError(f"{source}: steps: expected a list of steps")
    evals_raw = data.get("evaluate") or []
    if not isinstance(evals_raw, list):
        raise RecipeError(f"{source}: evaluate: expected a list")
    prep_raw = data.get("prepare") or []
    if not isinstance(prep_raw, list):
        raise RecipeError(f"{source}: prepare: expected a list of {{train: name, with: ...}}")
    errors: list[str] = []
    registry = registry or get_registry()
    registry.check()  # a duplicate component name is one error, not one per step using it

    top = {k: v for k, v in data.items() if k not in ("steps", "evaluate", "prepare")}
    top["steps"], top["evaluate"], top["prepare"] = [], [], []
    recipe = None
    try:
        recipe = Recipe.model_validate(top)
    except ValidationError as exc:
        errors.append(format_validation_error(source, "", exc, Recipe))

    preps, prep_cfgs = _validate_prepare(prep_raw, registry, source, errors)
    steps, configs = _validate_steps(steps_raw, registry, source, errors)
    evals, eval_cfgs = _validate_evaluators(evals_raw, registry, source, errors)

    if recipe is not None:
        for key in ("input", "output"):
            if getattr(recipe, key) is None and (steps_raw or evals_raw):
                errors.append(f"{source}: {key}: required field missing (a recipe with steps or "
                              f"evaluate needs an input and an output)")
        if recipe.input is None and not (steps_raw or evals_raw or prep_raw):
            errors.append(f"{source}: nothing to do: give input, steps and output, or a "
                          f"prepare: list of models to train")
    if errors:
        raise RecipeError("\n".join(errors))
    assert recipe is not None  # no errors means the top level validated
    recipe.steps = steps
    recipe.prepare = preps
    recipe.prepare_configs = prep_cfgs
    recipe.evaluate = evals
    recipe.configs = configs
    recipe.eval_configs = eval_cfgs
    recipe.source = source
    _check_columns(recipe, source)
    _check_inputs(recipe, source)
    if recipe.output is not None and "opustrainer" in recipe.output.formats \
            and "tsv" not in recipe.output.formats:
        raise RecipeError(f"{source}: output.formats: opustrainer is made from corpus.tsv; add "
                          f"tsv to the formats")
    return recipe


def _validate_prepare(prep_raw: list, registry: Registry, source: str,
                      errors: list[str]) -> tuple[list[PrepareStep], list[ComponentConfig | None]]:
    """The ``prepare:`` entries and their trainers' configs; two entries may not write one
    output. Problems are added to ``errors``."""
    preps, prep_cfgs = [], []
    outputs_seen: dict[str, int] = {}
    for i, raw in enumerate(prep_raw):
        where = f"prepare[{i}]"
        entry = _validate_entry(registry, PrepareStep, "trainer", "train", raw, source, where,
                                errors)
        if entry is None:
            continue
        prep, cfg = entry
        if cfg is not None:
            given = getattr(cfg, "output")
            out = str(Path(given).resolve())
            if out in outputs_seen:
                errors.append(f"{source}: {where}.with.output: {given} is also written by "
                              f"prepare[{outputs_seen[out]}]")
            outputs_seen[out] = i
        preps.append(prep)
        prep_cfgs.append(cfg)
    return preps, prep_cfgs


def _validate_steps(steps_raw: list, registry: Registry, source: str,
                    errors: list[str]) -> tuple[list, list[ComponentConfig | None]]:
    """The steps and their components' configs, each step of exactly one kind and in an order
    its kind allows. Problems are added to ``errors``."""
    steps, configs = [], []
    for i, raw in enumerate(steps_raw):
        where = f"steps[{i}]"
        if not isinstance(raw, dict):
            errors.append(f"{source}: {where}: expected a mapping like {{filter: length.v1, ...}}")
            continue
        kinds = [k for k in STEP_KINDS if k in raw]
        if len(kinds) != 1:
            keys = ", ".join(clip(str(k), 40) for k in list(raw)[:10]) or "nothing"
            hint = "" if kinds else suggest(next(iter(raw), ""), STEP_KINDS)
            errors.append(f"{source}: {where}: a step names exactly one of "
                          f"{', '.join(STEP_KINDS)} (found {keys}){hint}")
            continue
        kind = STEP_KINDS[kinds[0]]
        try:
            step = kind.model.model_validate(raw)
        except ValidationError as exc:
            errors.append(format_validation_error(source, where, exc, kind.model))
            # a bad keep: must not hide a bad with: of the same step: report both at once
            name, with_ = raw.get(kinds[0]), raw.get("with", {})
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
            if (isinstance(name, str) and isinstance(with_, dict)
                    and not bad & {kinds[0], "with"}):
                _validate_component(registry, kind.component, name, with_, source, where,
                                    errors, key=kind.key)
            continue
        cfg = _validate_component(registry, kind.component, step.component, step.with_, source,
                                  where, errors, key=kind.key)
        earlier = [j for j, prev in enumerate(steps) if prev.key in kind.before]
        if earlier:
            errors.append(f"{source}: {where}: {kind.key} steps must come before "
                          f"{' and '.join(kind.before)} steps (steps[{earlier[0]}] is one)")
        if cfg is not None:
            step, problems = step.check(registry.get(kind.component, step.component), cfg,
                                        source, where)
            errors.extend(problems)
        steps.append(step)
        configs.append(cfg)
    return steps, configs


def _validate_evaluators(evals_raw: list, registry: Registry, source: str,
                         errors: list[str]) -> tuple[list[EvaluateStep],
                                                     list[ComponentConfig | None]]:
    """The ``evaluate:`` entries (a bare name is ``{evaluator: name}``) and their configs.
    Problems are added to ``errors``."""
    evals, eval_cfgs = [], []
    for i, raw in enumerate(evals_raw):
        where = f"evaluate[{i}]"
        if isinstance(raw, str):
            raw = {"evaluator": raw}
        entry = _validate_entry(registry, EvaluateStep, "evaluator", "evaluator", raw, source,
                                where, errors)
        if entry is None:
            continue
        ev, cfg = entry
        evals.append(ev)
        eval_cfgs.append(cfg)
    return evals, eval_cfgs


def _validate_entry(registry: Registry, model: type[BaseModel], kind: str, name_key: str, raw: Any,
                    source: str, where: str, errors: list[str]):
    """Validate a ``prepare`` or ``evaluate`` entry and its component config: ``(entry, config)``
    (config None when it is wrong), or None when the entry itself is; errors are collected."""
    try:
        entry = model.model_validate(raw)
    except ValidationError as exc:
        errors.append(format_validation_error(source, where, exc, model))
        return None
    cfg = _validate_component(registry, kind, getattr(entry, name_key), entry.with_, source,
                              where, errors, key=name_key)
    return entry, cfg


def _validate_component(registry: Registry, kind: str, name: str, with_: dict, source: str,
                        where: str, errors: list[str], key: str) -> ComponentConfig | None:
    try:
        reg = registry.registration(kind, name)
    except RegistryError as exc:
        errors.append(f"{source}: {where}.{key}: {clip(str(exc))}")
        return None
    try:
        cfg = reg.cls.Config.model_validate(with_)
    except ValidationError as exc:
        errors.append(format_validation_error(source, f"{where}.with", exc, reg.cls.Config))
        return None
    why = reg.unavailable(cfg)
    if why:
        errors.append(f"{source}: {where}: {why}")
        return None
    return cfg


def _check_columns(recipe: Recipe, source: str) -> None:
    """Score column names must be unique across steps."""
    seen: dict[str, int] = {}
    for i, step in enumerate(recipe.steps):
        col = step.score_column()
        if col is None:
            continue
        if col in seen:
            raise RecipeError(f"{source}: steps[{i}]: score column {col!r} is already written by "
                              f"steps[{seen[col]}]; give this step `as: other_name`")
        seen[col] = i


def _check_inputs(recipe: Recipe, source: str) -> None:
    """Several inputs need unique names; a monolingual input needs a generate step that fills its
    empty side, or the output could hold rows with an empty side."""
    specs = input_specs(recipe)
    problems = []
    if isinstance(recipe.input, list):
        if not specs:
            problems.append(f"{source}: input: an empty list; give at least one input")
        seen: dict[str, int] = {}
        for i, spec in enumerate(specs):
            if spec.name is None:
                problems.append(f"{source}: input[{i}].name: required field missing (several "
                                f"inputs are told apart by their names, written to `origin`)")
            elif spec.name in seen:
                problems.append(f"{source}: input[{i}].name: {quote(spec.name)} is also the "
                                f"name of input[{seen[spec.name]}]")
            else:
                seen[spec.name] = i
    for i, spec in enumerate(specs):
        where = f"input[{i}]" if isinstance(recipe.input, list) else "input"
        if spec.sample == "random" and spec.limit is None and spec.max_ratio is None:
            problems.append(f"{source}: {where}.sample: random samples the rows that limit or "
                            f"max_ratio lets through, and this input has neither; give one, or "
                            f"leave sample out to read every row")
        if spec.max_ratio is not None and all(s.one_sided for s in specs[:i]):
            problems.append(f"{source}: {where}.max_ratio: caps an input at a multiple of the "
                            f"two-sided inputs listed before it, and there is none; give limit: "
                            f"for a number of rows, or list the bitext first")
        if spec.one_sided:
            empty = "tgt" if spec.side == "src" else "src"
            fillers = [step for step in recipe.steps if empty in step.fills()]
            if not any(step.fills_origin(spec.label) for step in fillers):
                hint = (f" (the generate steps that fill {empty} have `origins:` without "
                        f"{spec.label!r})" if fillers else
                        f" (add e.g. `- generate: translate.v1` with `side: {empty}`)")
                problems.append(
                    f"{source}: {where}: input {spec.label!r} holds {spec.side} text only, and no "
                    f"generate step fills its empty {empty} side{hint}, so the output would hold "
                    f"rows with an empty side")
    problems += _origin_problems(recipe, source, specs)
    if problems:
        raise RecipeError("\n".join(problems))


def _origin_problems(recipe: Recipe, source: str, specs) -> list[str]:
    """A step's ``origins`` must name an input, or a paraphraser of an earlier step (the origin of
    the rows it adds): a misspelt name would leave the step deciding, weighting or paraphrasing
    no row at all, silently."""
    known = {spec.label: None for spec in specs}
    problems = []
    for i, step in enumerate(recipe.steps):
        unknown = [o for o in getattr(step, "origins", None) or () if o not in known]
        if unknown:
            problems.append(f"{source}: steps[{i}].origins: {', '.join(map(quote, unknown))} "
                            f"{'is' if len(unknown) == 1 else 'are'} not the name of an input "
                            f"(inputs: {', '.join(known)})")
        made = getattr(step, "paraphrase", None)
        if made:
            known.setdefault(made, None)
    return problems
