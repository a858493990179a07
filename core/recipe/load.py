"""YAML recipes: read, laid over their ``extends:`` chain, overridden with ``--set`` and validated
as a whole before anything runs; the entry points :func:`load_recipe`, :func:`parse_recipe` and
:func:`recipe_data`.

Each concern has its module: safe YAML (:mod:`.yaml_safe`), ``--set`` (:mod:`.overrides`),
``extends:`` with the file each value came from (:mod:`.layering`), error lines
(:mod:`.errors`), the recipe's models (:mod:`.models`, :mod:`.step_models`) and whole-recipe
validation (:mod:`.validate`). The names plugins, benchmarks and tests import from here stay
importable from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..components.registry import Registry
from ..errors import RecipeError
from .errors import format_validation_error
from .layering import MAX_EXTENDS_DEPTH, attribute, layered
from .models import (EvaluateStep, InputSpec, OutputSpec, PrepareStep, Recipe, Step,
                     input_specs)
from .moved import moved_hint
from .overrides import apply_override, blame_overrides, name_steps
from .step_models import (FilterStep, GenerateStep, KeepSpec, ParaphraseStep,
                          Resources, SplitStep, StepModel, TagToken, WeightStep)
from .validate import validate_recipe
from .yaml_safe import MAX_YAML_NODES, dump_yaml, yaml_load

#: the former private name of :func:`yaml_load`, which plugin commands import
_yaml_load = yaml_load

__all__ = ["EvaluateStep", "FilterStep", "GenerateStep", "InputSpec", "KeepSpec",
           "MAX_EXTENDS_DEPTH", "MAX_YAML_NODES", "OutputSpec", "ParaphraseStep", "PrepareStep",
           "Recipe", "Resources", "SplitStep", "Step", "StepModel", "TagToken", "WeightStep",
           "apply_override", "dump_yaml", "format_validation_error", "input_specs", "load_recipe",
           "parse_recipe", "recipe_data", "score_column", "yaml_load"]


def recipe_data(path: str | Path) -> dict:
    """A recipe file's plain data with its ``extends:`` chain merged in (not validated), for
    code that reads parts of a recipe itself."""
    p = Path(path)
    if not p.is_file():
        raise RecipeError(moved_hint(p) or f"{p}: no such recipe file")
    data, _ = layered(yaml_load(p.read_text(encoding="utf-8"), str(p)), str(p))
    if not isinstance(data, dict):
        raise RecipeError(f"{p}: a recipe is a YAML mapping with name, input, steps, output")
    return data


def load_recipe(path: str | Path, overrides: list[str] | None = None,
                registry: Registry | None = None) -> Recipe:
    """Read, override and validate a recipe file; raise one :class:`RecipeError` listing problems."""
    p = Path(path)
    if not p.exists():
        raise RecipeError(moved_hint(p) or f"{p}: no such recipe file")
    return parse_recipe(p.read_text(encoding="utf-8"), str(p), overrides, registry)


def parse_recipe(text: str, source: str = "<recipe>", overrides: list[str] | None = None,
                 registry: Registry | None = None) -> Recipe:
    """Validate recipe text; every step's component and config is checked before anything runs.
    A recipe with ``extends:`` is first merged with its base (see :func:`~.layering.layered`);
    errors then name the file and key path where each bad value was written, and the name of
    each step they concern."""
    data, origins = layered(yaml_load(text, source), source)
    try:
        return _parse_data(data, source, overrides, registry)
    except RecipeError as exc:
        message = str(exc)
        if len(origins) > 1:
            message = attribute(message, source, origins)
        steps = data.get("steps") if isinstance(data, dict) else None
        raise RecipeError(name_steps(message, source, steps)) from None


def _parse_data(data: Any, source: str, overrides: list[str] | None,
                registry: Registry | None) -> Recipe:
    """Validate a recipe's data (its ``extends:`` already merged; ``overrides`` applied to it
    in place)."""
    if not isinstance(data, dict):
        raise RecipeError(f"{source}: a recipe is a YAML mapping with name, input, steps, output")
    applied = [(apply_override(data, ov, source), ov) for ov in overrides or []]
    try:
        return validate_recipe(data, source, registry)
    except RecipeError as exc:
        if not applied:
            raise
        raise RecipeError(blame_overrides(str(exc), source, applied)) from None


def score_column(step: StepModel) -> str | None:
    """The column a step writes its scores to (None for split and weight steps)."""
    return step.score_column()
