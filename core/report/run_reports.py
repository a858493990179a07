"""The reports stage of a run: the score report, the evaluators, the filled recipe, the signature
and the manifest (versions, seeds, counts in and out of every step, time per step), written into
the run directory once the corpus is complete."""

from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import __version__
from ..io.corpus import write_atomic
from ..pipeline.plan import Plan
from ..recipe.load import Recipe, dump_yaml
from ..components.registry import Registry
from ..pipeline.sink import Written
from ..pipeline.source import Source
from .summary import run_warnings

KEY_LIBRARIES = ("pluggy", "pydantic", "numpy", "sacrebleu", "sacremoses", "sentencepiece",
                 "torch", "transformers", "sentence-transformers", "ctranslate2", "kenlm",
                 "pydelphin", "heliport", "lingua-language-detector", "faiss-cpu", "scikit-learn")


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries that change results (read from metadata, not imported)."""
    out = {"python": platform.python_version()}
    for name in KEY_LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def input_warnings(stats) -> list[str]:
    """What the reading of the input changed that the user should hear of."""
    out = []
    if stats.extra_fields_dropped:
        n = stats.extra_fields_dropped
        out.append(f"input: {n:,} TSV row{'' if n == 1 else 's'} had more fields than columns; "
                   f"the fields past the last column were dropped "
                   f"(input.extra_fields_policy: drop-extra)")
    return out


@dataclass
class Reported:
    """What the reports stage wrote: the manifest, the reports by key, and every file in the run
    directory that belongs to this run (relative to it: the corpus files and the reports)."""

    manifest: dict[str, Any]
    reports: dict[str, Any]
    files: list[str]


def write_reports(recipe: Recipe, registry: Registry, out_dir: Path, plan: Plan, source: Source,
                  written: Written, prepared: list, started: float,
                  eval_results: dict[str, Any]) -> Reported:
    """Write the score report, filled recipe, signature and manifest (with ``eval_results``,
    what :func:`bitextforge.pipeline.evaluate.run_evaluators` returned); return them with the
    files of the run."""
    signature = recipe.signature(__version__)
    reports: dict[str, Any] = dict(eval_results)
    stats = source.stats
    step_dicts = [ex.stats.to_dict() for ex in plan.executors]
    opustrainer = written.opustrainer
    manifest = {
        "bitextforge": __version__,
        "signature": signature,
        "recipe": recipe.name,
        "recipe_file": recipe.source,
        "seed": recipe.seed,
        "runner": recipe.runner,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "seconds": round(time.time() - started, 3),
        "input": {"files": stats.files, "rows": stats.rows,
                  "replaced_invalid_utf8": stats.replaced_invalid_utf8,
                  "extra_fields_dropped": stats.extra_fields_dropped,
                  **({"inputs": source.reader.per_input}
                     if getattr(source.reader, "per_input", None) else {})},
        "prepare": prepared,
        "steps": step_dicts,
        "warnings": input_warnings(stats) + run_warnings(step_dicts, prepared, eval_results),
        "output": {"dir": str(out_dir), "rows": written.rows, "rejected": written.rejected,
                   "files": written.files, "columns": plan.columns,
                   "resumable": written.resumable, "resumed_shards": written.resumed_shards,
                   **({"opustrainer": opustrainer} if opustrainer else {})},
        "evaluations": dict(eval_results),
        "plugins": registry.packages(),
        "versions": library_versions(),
    }
    write_atomic(out_dir / "recipe.filled.yaml", dump_yaml(recipe.filled()))
    write_atomic(out_dir / "signature.txt", signature + "\n")
    write_atomic(out_dir / "manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    if recipe.output.report:
        from .html import write_report

        note = write_report(out_dir)  # a snapshot of the serve page, read from the finished run
        if note:
            reports["score_report"] = note
    # report.html is this run's only when written: a note in its place means it was not
    return Reported(manifest, reports,
                    files_of_run(manifest, recipe.output.report and "score_report" not in reports))


def files_of_run(manifest: dict[str, Any], report: bool) -> list[str]:
    """The files a finished run wrote in its directory, relative to it, as its manifest lists
    them (``report``: ``report.html`` was written)."""
    files = list(manifest["output"]["files"]) + ["recipe.filled.yaml", "signature.txt",
                                                 "manifest.json"]
    files += [f"reports/{key}.json" for key in manifest.get("evaluations", {})]
    if report:
        files.append("report.html")
    return files
