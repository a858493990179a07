"""``bitextforge score``: run a recipe's split, paraphrase and filter steps as scorers only and
write a TSV with every score column; no row is removed and no weight applied (OpusFilter's
``score`` step)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .corpus import TsvWriter
from .errors import BitextforgeError
from .plan import Plan, seed_everything
from .prepare import run_prepare
from .recipe import load_recipe
from .registry import get_registry
from .source import Source


@dataclass
class ScoreResult:
    """Rows written and where."""

    rows: int
    path: Path


def score_recipe(recipe_path: str, output: str, overrides: list[str] | None = None,
                 quiet: bool = False) -> ScoreResult:
    """Score the recipe's input with its filters (after its paraphrase steps) into ``output``."""
    recipe = load_recipe(recipe_path, overrides)
    if recipe.input is None:
        raise BitextforgeError(f"{recipe_path}: input: required field missing (score reads a "
                               f"corpus; this recipe only trains models)")
    registry = get_registry()
    seed_everything(recipe.seed)
    if recipe.prepare:
        run_prepare(recipe, registry)
    source = Source(recipe.input, recipe.batch_size, progress=recipe.progress and not quiet)
    try:
        with Plan(recipe, registry, source.extra_columns(), sample=False) as plan:
            writer = TsvWriter(output, plan.columns)
            try:
                for batch in source.batches():
                    for ex in plan.executors:
                        batch = ex.score_only(batch)
                    writer.write(batch)
                writer.finish()
                path = writer.file.commit()
            except BaseException:
                writer.file.discard()
                raise
    except OSError as exc:
        raise BitextforgeError(f"{output}: {exc.strerror or exc}") from exc
    return ScoreResult(writer.rows, path)
