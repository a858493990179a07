"""A whole run of a recipe: the pipeline's stages, then the run's reports.

plan (:mod:`~bitextforge.pipeline.plan`: one executor per step) -> source
(:mod:`~bitextforge.pipeline.source`: the reader's batches) -> runner
(:mod:`~bitextforge.pipeline.runners`: local or Ray) -> sink (:mod:`~bitextforge.pipeline.sink`:
output files) -> evaluators (:mod:`~bitextforge.pipeline.evaluate`) -> reports
(:mod:`~bitextforge.report.run_reports`: manifest, signature). The driver
(:mod:`~bitextforge.pipeline.driver`) does the preamble, runs the runner (shard by shard, with
resume) and feeds the sink. This module stands above both the pipeline and the reports, so the
pipeline never imports what reports on it; ``docs/architecture.md`` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .components.registry import Registry, get_registry
from .pipeline.driver import Driver, preamble
from .pipeline.evaluate import run_evaluators
from .pipeline.plan import Plan
from .pipeline.runners import get_runner
from .pipeline.sink import RunDir, Sink
from .recipe.load import Recipe
from .report.run_reports import write_reports


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
               output_dir: str | None = None, restart: bool = False,
               force: bool = False) -> RunResult:
    """Run ``recipe`` and return what it produced.

    A run into a directory that holds an unfinished run of the same recipe and inputs resumes after
    its last finished shard; ``restart`` discards an unfinished run of a different recipe.
    ``force`` writes into a directory that holds files but no bitextforge run (refused otherwise).
    """
    registry = registry or get_registry()
    out_dir = Path(output_dir or recipe.output.dir) if recipe.input is not None else None
    claim = RunDir(out_dir, force) if out_dir is not None else None
    progress = recipe.progress if progress is None else progress
    with preamble(recipe, registry, progress, claim, out_dir) as run:
        if run.source is None:  # a recipe that only trains models
            return RunResult(None, 0, 0, 0, recipe.signature(__version__),
                             {"prepare": run.prepared})
        source = run.source
        with Plan(recipe, registry, source.extra_columns()) as plan:
            sink = Sink(out_dir, recipe, plan.columns, plan.cleans)
            driver = Driver(recipe, source, get_runner(recipe.runner), sink, plan.executors,
                            plan=plan, shard_size=recipe.output.shard_size, restart=restart)
            written = driver.run()
        evaluations = run_evaluators(recipe, registry, out_dir, plan.columns)
        written = sink.finish(written, recipe.seed)
        reported = write_reports(recipe, registry, out_dir, plan, source, written, run.prepared,
                                 run.started, evaluations)
        claim.remove_stale(reported.files)
        driver.finish()
    return RunResult(out_dir, source.stats.rows, written.rows, written.rejected,
                     reported.manifest["signature"], reported.manifest, reported.reports)

