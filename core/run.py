"""Runs a validated Recipe as a short pipeline of stages, each in its own module:

plan (:mod:`~bitextforge.plan`: one executor per step) -> source (:mod:`~bitextforge.source`: the
reader's batches) -> runner (:mod:`~bitextforge.runners`: local or Ray) -> sink
(:mod:`~bitextforge.sink`: output files, shards, resume) -> reports (:mod:`~bitextforge.reports`:
evaluators, manifest, signature). ``docs/architecture.md`` draws it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .checks import check_recipe_files
from .plan import Plan, build_component, seed_everything  # noqa: F401 - re-exported
from .prepare import run_prepare
from .recipe import Recipe
from .registry import Registry, get_registry
from .reports import library_versions, run_evaluators, write_reports  # noqa: F401 - re-exported
from .runners import get_runner
from .sink import Sink, check_writable
from .source import Source


@dataclass
class RunResult:
    """What a finished run produced."""

    output_dir: Path | None  # None for a recipe that only trains models
    rows_in: int
    rows_out: int
    rejected: int
    signature: str
    manifest: dict[str, Any] = field(default_factory=dict)
    reports: dict[str, Any] = field(default_factory=dict)


def run_recipe(recipe: Recipe, registry: Registry | None = None, progress: bool | None = None,
               output_dir: str | None = None, restart: bool = False) -> RunResult:
    """Run ``recipe`` and return what it produced.

    A run into a directory that holds an unfinished run of the same recipe and inputs resumes after
    its last finished shard; ``restart`` discards an unfinished run of a different recipe.
    """
    registry = registry or get_registry()
    started = time.time()
    check_recipe_files(recipe, registry)  # every missing file at once, before any training
    seed_everything(recipe.seed)
    if recipe.input is None:  # a recipe that only trains models
        prepared = run_prepare(recipe, registry)
        return RunResult(None, 0, 0, 0, recipe.signature(__version__), {"prepare": prepared})
    out_dir = Path(output_dir or recipe.output.dir)
    created = not out_dir.exists()
    check_writable(out_dir)
    prepared = run_prepare(recipe, registry) if recipe.prepare else []

    source = Source(recipe.input, recipe.batch_size, seed=recipe.seed,
                    progress=recipe.progress if progress is None else progress)
    sink = Sink(out_dir, recipe, restart, created=created)
    with sink.cleanup_on_error(), Plan(recipe, registry, source.extra_columns()) as plan:
        written = sink.write(source, get_runner(recipe.runner), plan)
    manifest, reports = write_reports(recipe, registry, out_dir, plan, source, written, prepared,
                                      started)
    return RunResult(out_dir, source.stats.rows, written.rows, written.rejected,
                     manifest["signature"], manifest, reports)
