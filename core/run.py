"""Executes a validated Recipe: builds each component once, streams the corpus through the
steps with a runner, writes every output atomically, runs the evaluators and writes the manifest.

Output directory layout: ``corpus.src``/``corpus.tgt`` (plain), ``corpus.tsv`` (every column),
``corpus.jsonl``, ``corpus.weights`` (Marian ``--data-weighting`` file, only when weights are not
all 1), ``rejected.tsv`` (each rejected row with the step and score that rejected it),
``recipe.filled.yaml``, ``manifest.json``, ``signature.txt``, ``report.html`` and ``reports/``.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from . import __version__
from .components import Component
from .corpus import (AtomicFile, Batch, CorpusView, Reader, TsvWriter, batch_len, format_value,
                     order_columns, write_atomic)
from .errors import BitextforgeError, ComponentError
from .prepare import run_prepare
from .recipe import FilterStep, ParaphraseStep, Recipe, SplitStep, WeightStep, dump_yaml
from .registry import Registry, get_registry
from .runners import get_runner
from .shards import ShardStore, input_fingerprint, split_shards
from .steps import FilterExec, ParaphraseExec, SplitExec, WeightExec

KEY_LIBRARIES = ("pluggy", "pydantic", "numpy", "sacrebleu", "sacremoses", "sentencepiece",
                 "torch", "transformers", "sentence-transformers", "ctranslate2", "kenlm",
                 "pydelphin", "heliport", "lingua-language-detector", "faiss-cpu", "scikit-learn")


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


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries that change results (read from metadata, not imported)."""
    out = {"python": platform.python_version()}
    for name in KEY_LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def seed_everything(seed: int) -> None:
    """Seed Python, and NumPy and torch when loaded (a run calls it again once its components
    are built, so the libraries they load are seeded before the first batch; importing NumPy
    just to seed it would cost a model-free run a third of its memory)."""
    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def build_component(registry: Registry, kind: str, name: str, config) -> Component:
    """Instantiate a registered component as ``cls(config)``, turning start-up failures into
    one-line errors that name the component."""
    cls = registry.get(kind, name)
    try:
        return cls(config)
    except BitextforgeError:
        raise
    except (OSError, ImportError, ValueError) as exc:
        raise ComponentError(f"{name}: cannot start: {exc}") from exc


class _Outputs:
    """The run's output files, all written under temporary names until :meth:`commit`."""

    def __init__(self, out_dir: Path, formats: list[str], columns: list[str],
                 write_rejected: bool, reject_columns: list[str], keep_weights: bool = False):
        self.dir = out_dir
        self.keep_weights = keep_weights
        self.files: list[AtomicFile] = []
        self.tsv = TsvWriter(out_dir / "corpus.tsv", columns) if "tsv" in formats else None
        self.plain = None
        if "plain" in formats:
            self.plain = (self._open("corpus.src"), self._open("corpus.tgt"))
        self.weights = self._open("corpus.weights") if self.plain else None
        self.jsonl = self._open("corpus.jsonl") if "jsonl" in formats else None
        self.rejected = TsvWriter(out_dir / "rejected.tsv", reject_columns) if write_rejected else None
        self.columns = columns
        self.all_one = True
        self.rows = 0
        self.rejected_rows = 0
        if self.tsv:
            self.files.append(self.tsv.file)
        if self.rejected:
            self.files.append(self.rejected.file)

    def _open(self, name: str) -> AtomicFile:
        f = AtomicFile(self.dir / name)
        self.files.append(f)
        return f

    def write(self, batch: Batch) -> None:
        n = batch_len(batch)
        self.rows += n
        if self.tsv:
            self.tsv.write(batch)
        if self.plain:
            self.plain[0].write("".join(s.replace("\n", " ") + "\n" for s in batch["src"]))
            self.plain[1].write("".join(t.replace("\n", " ") + "\n" for t in batch["tgt"]))
            w = batch["weight"]
            if self.all_one and any(x != 1.0 for x in w):
                self.all_one = False
            self.weights.write("".join(format_value(x) + "\n" for x in w))
        if self.jsonl:
            names = [c for c in self.columns if c in batch]
            cols = [batch[c] for c in names]
            self.jsonl.write("".join(json.dumps(dict(zip(names, r)), ensure_ascii=False) + "\n"
                                     for r in zip(*cols)))

    def reject(self, batch: Batch, why: str, scores: list) -> None:
        n = batch_len(batch)
        self.rejected_rows += n
        if self.rejected:
            batch = dict(batch)
            batch["rejected_by"] = [why] * n
            batch["rejected_score"] = scores
            self.rejected.write(batch)

    def commit(self) -> list[str]:
        names = []
        for writer in (self.tsv, self.rejected):
            if writer is not None:
                writer.finish()
        for f in self.files:
            if f is self.weights and self.all_one and not self.keep_weights:
                f.discard()
                continue
            names.append(f.commit().name)
        return names

    def discard(self) -> None:
        for f in self.files:
            f.discard()


def _check_writable(out_dir: Path) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise BitextforgeError(f"{out_dir}: output directory is not writable ({exc.strerror})") from None


def run_recipe(recipe: Recipe, registry: Registry | None = None, progress: bool | None = None,
               output_dir: str | None = None, restart: bool = False) -> RunResult:
    """Run ``recipe`` and return what it produced.

    A run into a directory that holds an unfinished run of the same recipe and inputs resumes after
    its last finished shard; ``restart`` discards an unfinished run of a different recipe.
    """
    registry = registry or get_registry()
    started = time.time()
    seed_everything(recipe.seed)
    if recipe.input is None:  # a recipe that only trains models
        prepared = run_prepare(recipe, registry)
        return RunResult(None, 0, 0, 0, recipe.signature(__version__), {"prepare": prepared})
    out_dir = Path(output_dir or recipe.output.dir)
    _check_writable(out_dir)
    prepared = run_prepare(recipe, registry) if recipe.prepare else []

    reader = Reader(recipe.input, recipe.batch_size)
    columns = ["id", "variant", "origin", "src", "tgt", "weight", *reader.extra_columns()]
    components: list[Component] = []
    executors: list = []
    outputs: _Outputs | None = None
    try:
        # build every component before reading a line: a missing model fails fast
        for i, (step, cfg) in enumerate(zip(recipe.steps, recipe.configs)):
            if isinstance(step, SplitStep):
                comp = build_component(registry, "paraphraser", step.split, cfg)
            elif isinstance(step, ParaphraseStep):
                comp = build_component(registry, "paraphraser", step.paraphrase, cfg)
            elif isinstance(step, FilterStep):
                comp = build_component(registry, "filter", step.filter, cfg)
            else:
                comp = build_component(registry, "weighter", step.weight, cfg)
            components.append(comp)
        seed_everything(recipe.seed)
        sink_holder: list[_Outputs] = []

        def reject(batch: Batch, why: str, scores: list) -> None:
            sink_holder[0].reject(batch, why, scores)

        for i, (step, comp) in enumerate(zip(recipe.steps, components)):
            if isinstance(step, SplitStep):
                ex: Any = SplitExec(i, step, comp)
            elif isinstance(step, ParaphraseStep):
                ex = ParaphraseExec(i, step, comp)  # type: ignore[arg-type]
            elif isinstance(step, FilterStep):
                ex = FilterExec(i, step, comp, reject,  # type: ignore[arg-type]
                                sample=recipe.output.report)
            else:
                ex = WeightExec(i, step, comp)  # type: ignore[arg-type]
            executors.append(ex)
            columns.extend(ex.columns())
        columns = order_columns(columns)
        formats = list(recipe.output.formats)
        if recipe.evaluate and "tsv" not in formats:
            formats.append("tsv")  # evaluators read the corpus back from corpus.tsv
        reject_cols = columns + ["rejected_by", "rejected_score"]
        show = recipe.progress if progress is None else progress
        source = _with_progress(reader.batches(), show, recipe.input.limit)
        runner = get_runner(recipe.runner)
        shard_size = recipe.output.shard_size
        resumable = bool(shard_size) and not any(
            isinstance(ex, FilterExec) and ex.keep.is_global for ex in executors)
        if not resumable:
            outputs = _Outputs(out_dir, formats, columns, recipe.output.write_rejected, reject_cols)
            sink_holder.append(outputs)
            for batch in runner.build_stream(source, executors, recipe):
                outputs.write(batch)
            written = outputs.commit()
            totals = (outputs.rows, outputs.rejected_rows)
        else:
            store = ShardStore(out_dir, input_fingerprint(recipe), restart)
            done = store.finished()
            if done:
                _restore(store.state(done - 1), components, executors, reader)
            per = max(1, -(-shard_size // recipe.batch_size))
            sink_holder.append(None)  # type: ignore[arg-type]
            names: list[str] = []
            for k, shard in enumerate(split_shards(source, per)):
                if k < done:
                    for _ in shard:  # already processed: read past its lines
                        pass
                    continue
                outputs = _Outputs(store.begin(k), formats, columns, recipe.output.write_rejected,
                                   reject_cols, keep_weights=True)
                sink_holder[0] = outputs
                for batch in runner.build_stream(shard, executors, recipe):
                    outputs.write(batch)
                names = outputs.commit()
                store.finish(k, _snapshot(outputs, components, executors, reader, k))
                outputs = None
            n_shards = store.finished()
            shard_states = [store.state(k) for k in range(n_shards)]
            if n_shards:
                names = sorted(shard_states[0]["files"])
                weights_needed = not all(st["all_one"] for st in shard_states)
                written = store.merge(out_dir, n_shards, names, weights_needed)
            else:  # empty input: no shard was started; write the header-only files
                outputs = _Outputs(out_dir, formats, columns, recipe.output.write_rejected,
                                   reject_cols)
                written = outputs.commit()
                shutil.rmtree(store.dir)
            totals = (sum(st["rows"] for st in shard_states),
                      sum(st["rejected_rows"] for st in shard_states))
            outputs = None
    except BaseException as exc:
        if outputs is not None:
            outputs.discard()
        _close(executors, components)
        if isinstance(exc, OSError) and not isinstance(exc, BitextforgeError):
            raise BitextforgeError(f"{out_dir}: writing output failed: {exc.strerror or exc}") from exc
        raise
    _close(executors, components)

    signature = recipe.signature(__version__)
    reports: dict[str, Any] = {}
    eval_results = run_evaluators(recipe, registry, out_dir, columns)
    reports.update(eval_results)

    manifest = {
        "bitextforge": __version__,
        "signature": signature,
        "recipe": recipe.name,
        "recipe_file": recipe.source,
        "seed": recipe.seed,
        "runner": recipe.runner,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "seconds": round(time.time() - started, 3),
        "input": {"files": reader.stats.files, "rows": reader.stats.rows,
                  "replaced_invalid_utf8": reader.stats.replaced_invalid_utf8},
        "prepare": prepared,
        "steps": [ex.stats.to_dict() for ex in executors],
        "output": {"dir": str(out_dir), "rows": totals[0], "rejected": totals[1],
                   "files": written, "columns": columns, "resumable": resumable},
        "evaluations": {k: v for k, v in eval_results.items()},
        "plugins": sorted({f"{reg.package} {reg.package_version}".strip()
                           for _, reg in registry.registrations()}),
        "versions": library_versions(),
    }
    write_atomic(out_dir / "recipe.filled.yaml", dump_yaml(recipe.filled()))
    write_atomic(out_dir / "signature.txt", signature + "\n")
    write_atomic(out_dir / "manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    if recipe.output.report:
        from .report import write_report

        note = write_report(out_dir)  # read back from the finished run directory
        if note:
            reports["score_report"] = note
    return RunResult(out_dir, reader.stats.rows, totals[0], totals[1], signature, manifest, reports)


def _snapshot(outputs: _Outputs, components: list[Component], executors: list, reader: Reader,
              k: int) -> dict[str, Any]:
    """What a finished shard records: its counts and files, and the cumulative state to resume."""
    return {
        "shard": k,
        "rows": outputs.rows,
        "rejected_rows": outputs.rejected_rows,
        "all_one": outputs.all_one,
        "files": [f.path.name for f in outputs.files],
        "components": [c.get_state() for c in components],
        "executors": [ex.get_state() if hasattr(ex, "get_state") else None for ex in executors],
        "stats": [(ex.stats.rows_in, ex.stats.rows_out, ex.stats.seconds,
                   getattr(ex, "rejected", 0)) for ex in executors],
        "replaced_invalid_utf8": reader.stats.replaced_invalid_utf8,
    }


def _restore(state: dict[str, Any], components: list[Component], executors: list,
             reader: Reader) -> None:
    """Put components and counters back as they were after the last finished shard."""
    for comp, st in zip(components, state["components"]):
        if st is not None:
            comp.set_state(st)
    for ex, st in zip(executors, state["executors"]):
        if st is not None:
            ex.set_state(st)
    for ex, (rin, rout, secs, rej) in zip(executors, state["stats"]):
        ex.stats.rows_in, ex.stats.rows_out, ex.stats.seconds = rin, rout, secs
        if hasattr(ex, "rejected"):
            ex.rejected = rej
    reader.stats.replaced_invalid_utf8 = state["replaced_invalid_utf8"]


def _close(executors: list, components: list[Component]) -> None:
    for ex in executors:
        if hasattr(ex, "close"):
            ex.close()
    for comp in components:
        comp.close()


def run_evaluators(recipe: Recipe, registry: Registry, out_dir: Path,
                   columns: list[str]) -> dict[str, Any]:
    """Run the recipe's evaluators on the written corpus; write ``reports/<name>.json``."""
    if not recipe.evaluate:
        return {}
    numeric = [c for c in columns if c not in ("src", "tgt", "origin") and not c.endswith("_original")]
    view = CorpusView(out_dir / "corpus.tsv", numeric=numeric)
    results: dict[str, Any] = {}
    for ev, cfg in zip(recipe.evaluate, recipe.eval_configs):
        comp = build_component(registry, "evaluator", ev.evaluator, cfg)
        try:
            report = comp.evaluate(view)
        finally:
            comp.close()
        key = ev.evaluator if ev.evaluator not in results else f"{ev.evaluator}#{len(results)}"
        results[key] = report.to_dict()
        write_atomic(out_dir / "reports" / f"{key}.json",
                     json.dumps(report.to_dict(with_items=True), indent=2, ensure_ascii=False) + "\n")
    return results


def _with_progress(batches, show: bool, total: int | None):
    if not show:
        yield from batches
        return
    from tqdm import tqdm

    with tqdm(total=total, unit=" rows", unit_scale=True, desc="bitextforge", file=sys.stderr,
              dynamic_ncols=True, mininterval=0.5) as bar:
        for b in batches:
            yield b
            bar.update(batch_len(b))
