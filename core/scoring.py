"""``bitextforge score``: run a recipe's paraphrase and filter steps as scorers only and write a TSV
with every score column; no row is removed and no weight applied (OpusFilter's ``score`` step)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .checks import check_recipe_files
from .corpus import Reader, TsvWriter, order_columns
from .errors import BitextforgeError
from .prepare import run_prepare
from .recipe import FilterStep, ParaphraseStep, SplitStep, load_recipe
from .registry import get_registry
from .run import _with_progress, build_component, seed_everything
from .steps import FilterExec, ParaphraseExec, SplitExec


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
    check_recipe_files(recipe, registry)
    seed_everything(recipe.seed)
    if recipe.prepare:
        run_prepare(recipe, registry)
    reader = Reader(recipe.input, recipe.batch_size)
    columns = ["id", "variant", "origin", "src", "tgt", "weight", *reader.extra_columns()]
    execs: list = []
    comps = []
    try:
        for i, (step, cfg) in enumerate(zip(recipe.steps, recipe.configs)):
            if isinstance(step, SplitStep):
                comp = build_component(registry, "paraphraser", step.split, cfg)
                execs.append(SplitExec(i, step, comp))
            elif isinstance(step, ParaphraseStep):
                comp = build_component(registry, "paraphraser", step.paraphrase, cfg)
                execs.append(ParaphraseExec(i, step, comp))
            elif isinstance(step, FilterStep):
                comp = build_component(registry, "filter", step.filter, cfg)
                execs.append(FilterExec(i, step, comp, reject=lambda *a: None))
            else:
                continue
            comps.append(comp)
            columns.extend(execs[-1].columns())
        seed_everything(recipe.seed)  # again: seeds what the components loaded
        writer = TsvWriter(output, order_columns(columns))
        try:
            show = recipe.progress and not quiet
            for batch in _with_progress(reader.batches(), show, recipe.input.limit):
                for ex in execs:
                    if isinstance(ex, FilterExec):
                        batch[ex.col] = ex.scores(batch)
                    else:
                        batch = ex(batch)
                writer.write(batch)
            writer.finish()
            path = writer.file.commit()
        except BaseException:
            writer.file.discard()
            raise
    except OSError as exc:
        raise BitextforgeError(f"{output}: {exc.strerror or exc}") from exc
    finally:
        for ex in execs:
            if hasattr(ex, "close"):
                ex.close()
        for c in comps:
            c.close()
    return ScoreResult(writer.rows, path)
