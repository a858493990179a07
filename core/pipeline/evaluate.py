"""The evaluate stage of a run: the recipe's evaluators, run on the finished corpus, each
writing ``reports/<name>.json``. It runs after the corpus is complete and before the run's reports
(:mod:`~bitextforge.report.run_reports`), which record what it returned in the manifest."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..components.registry import Registry
from ..io.corpus import CorpusView, write_atomic
from ..recipe.load import Recipe
from .plan import build_component


def run_evaluators(recipe: Recipe, registry: Registry, out_dir: Path,
                   columns: list[str]) -> dict[str, Any]:
    """Run the recipe's evaluators on the written corpus; write ``reports/<name>.json``."""
    if not recipe.evaluate:
        return {}
    numeric = [c for c in columns if c not in ("src", "tgt", "origin") and not c.endswith("_original")]
    view = CorpusView(out_dir / "corpus.tsv", numeric=numeric)
    if (out_dir / "rejected.tsv").is_file():
        view.rejected = CorpusView(out_dir / "rejected.tsv", numeric=numeric)
    results: dict[str, Any] = {}
    for ev, cfg in zip(recipe.evaluate, recipe.eval_configs):
        t0 = time.perf_counter()  # building counts too: an evaluator may load a model
        comp = build_component(registry, "evaluator", ev.evaluator, cfg)
        try:
            report = comp.evaluate(view)
            info = comp.manifest_info()  # e.g. the device a model-backed evaluator ran on
        finally:
            comp.close()
        key = ev.evaluator if ev.evaluator not in results else f"{ev.evaluator}#{len(results)}"
        results[key] = report.to_dict()
        # the step table's seconds stop before the evaluators, which can take most of a run
        results[key]["seconds"] = round(time.perf_counter() - t0, 3)
        if info:
            results[key]["info"] = info
        write_atomic(out_dir / "reports" / f"{key}.json",
                     json.dumps(report.to_dict(with_items=True), indent=2, ensure_ascii=False) + "\n")
    return results
