"""The sink stage of a run: writes what the runner yields into the run directory, atomically.

A run writes ``corpus.src``/``corpus.tgt`` (plain), ``corpus.tsv`` (every column),
``corpus.jsonl``, ``corpus.weights`` (Marian ``--data-weighting`` file, only when weights are not
all 1), ``rejected.tsv`` (each rejected row with the step and score that rejected it) and, when
the recipe has ``clean:`` steps, ``cleaned.tsv`` (every text a clean step changed). Every
file is written under a temporary name and renamed only when the run succeeds. A run with
``output.shard_size`` is written shard by shard through :class:`~bitextforge.shards.ShardStore`,
so a killed run resumes after its last finished shard.
"""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .corpus import AtomicFile, Batch, TsvWriter, batch_len, format_value
from .errors import BitextforgeError
from .plan import Plan
from .runners.stream import Packet
from .shards import ShardStore, input_fingerprint
from .source import Source
from .steps import Changed, Rejected

#: the columns of cleaned.tsv: one line per changed text of a row, in the order steps changed them
CLEANED_COLUMNS = ["step", "id", "variant", "column", "before", "after"]


@dataclass
class Written:
    """What the sink wrote: file names, rows kept and rejected, and whether it was sharded."""

    files: list[str]
    rows: int
    rejected: int
    resumable: bool


class Outputs:
    """The output files of one run or shard, all written under temporary names until
    :meth:`commit`."""

    def __init__(self, out_dir: Path, formats: list[str], columns: list[str],
                 write_rejected: bool, keep_weights: bool = False, write_cleaned: bool = False):
        """Open the files of ``formats`` in ``out_dir``; ``keep_weights`` keeps
        ``corpus.weights`` even when every weight is 1 (a shard cannot know about the others);
        ``write_cleaned`` opens ``cleaned.tsv`` (a recipe with clean steps)."""
        self.dir = out_dir
        self.keep_weights = keep_weights
        self.files: list[AtomicFile] = []
        self.tsv = TsvWriter(out_dir / "corpus.tsv", columns) if "tsv" in formats else None
        self.plain = None
        if "plain" in formats:
            self.plain = (self._open("corpus.src"), self._open("corpus.tgt"))
        self.weights = self._open("corpus.weights") if self.plain else None
        self.jsonl = self._open("corpus.jsonl") if "jsonl" in formats else None
        reject_columns = columns + ["rejected_by", "rejected_score"]
        self.rejected = TsvWriter(out_dir / "rejected.tsv", reject_columns) if write_rejected else None
        self.cleaned = TsvWriter(out_dir / "cleaned.tsv", CLEANED_COLUMNS) if write_cleaned else None
        self.columns = columns
        self.all_one = True
        self.rows = 0
        self.rejected_rows = 0
        if self.tsv:
            self.files.append(self.tsv.file)
        if self.rejected:
            self.files.append(self.rejected.file)
        if self.cleaned:
            self.files.append(self.cleaned.file)

    def _open(self, name: str) -> AtomicFile:
        f = AtomicFile(self.dir / name)
        self.files.append(f)
        return f

    def write(self, batch: Batch) -> None:
        """Append kept rows."""
        self.rows += batch_len(batch)
        if self.tsv:
            self.tsv.write(batch)
        if self.plain:
            self.plain[0].write(plain_lines(batch["src"]))
            self.plain[1].write(plain_lines(batch["tgt"]))
            w = batch["weight"]
            if w.count(1.0) == len(w):  # the usual case: no formatting per row
                self.weights.write("1\n" * len(w))
            else:
                self.all_one = False
                self.weights.write("".join(format_value(x) + "\n" for x in w))
        if self.jsonl:
            names = [c for c in self.columns if c in batch]
            cols = [batch[c] for c in names]
            self.jsonl.write("".join(json.dumps(dict(zip(names, r)), ensure_ascii=False) + "\n"
                                     for r in zip(*cols)))

    def reject(self, rej: Rejected) -> None:
        """Append rejected rows with the step and score that rejected them."""
        n = batch_len(rej.batch)
        self.rejected_rows += n
        if self.rejected:
            batch = dict(rej.batch)
            batch["rejected_by"] = ([rej.why] * n if rej.reasons is None else
                                    [f"{rej.why} ({r})" for r in rej.reasons])
            batch["rejected_score"] = rej.scores
            self.rejected.write(batch)

    def record_changes(self, ch: Changed) -> None:
        """Append the texts one clean step changed in one column, before and after."""
        if self.cleaned:
            n = len(ch.ids)
            self.cleaned.write({"step": [ch.step] * n, "id": ch.ids, "variant": ch.variants,
                                "column": [ch.column] * n, "before": ch.before,
                                "after": ch.after})

    def drain(self, stream: Iterator[Packet]) -> None:
        """Write every packet of a runner: its rejected rows, its changes, then its kept rows."""
        for p in stream:
            for rej in p.rejected:
                self.reject(rej)
            for ch in p.changed:
                self.record_changes(ch)
            if p.batch is not None:
                self.write(p.batch)

    def commit(self) -> list[str]:
        """Move every file to its final name; return the names."""
        names = []
        for writer in (self.tsv, self.rejected, self.cleaned):
            if writer is not None:
                writer.finish()
        for f in self.files:
            if f is self.weights and self.all_one and not self.keep_weights:
                f.discard()
                continue
            names.append(f.commit().name)
        return names

    def discard(self) -> None:
        """Remove every temporary file."""
        for f in self.files:
            f.discard()


def plain_lines(texts: list[str]) -> str:
    """``texts`` as lines of a plain file, a line break inside a text written as a space."""
    if not texts:
        return ""
    joined = "\n".join(texts)
    if joined.count("\n") != len(texts) - 1:
        joined = "\n".join(t.replace("\n", " ") for t in texts)
    return joined + "\n"


def check_writable(out_dir: Path) -> None:
    """Create ``out_dir`` and make sure a file can be written there, before any work."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise BitextforgeError(f"{out_dir}: output directory is not writable ({exc.strerror})") from None


class Sink:
    """Writes a run into its directory, in one pass or shard by shard."""

    def __init__(self, out_dir: Path, recipe, restart: bool = False, created: bool = False):
        """Write ``recipe``'s outputs into ``out_dir``; ``restart`` discards an unfinished run of
        a different recipe there instead of refusing; ``created``: this run created ``out_dir``."""
        self.dir = out_dir
        self.recipe = recipe
        self.restart = restart
        self.created = created
        self.store: ShardStore | None = None
        out = recipe.output
        self.formats = list(out.formats)
        if recipe.evaluate and "tsv" not in self.formats:
            self.formats.append("tsv")  # evaluators read the corpus back from corpus.tsv

    @contextmanager
    def cleanup_on_error(self):
        """After an error before the first shard was finished there is nothing to resume: remove
        the shard folder (and the output directory this run created, when empty), so the
        corrected rerun starts cleanly instead of being refused as a different run."""
        try:
            yield
        except BaseException:
            store = self.store
            if store is not None and store.dir.exists() and store.finished() == 0:
                shutil.rmtree(store.dir, ignore_errors=True)
            if self.created and self.dir.is_dir() and not any(self.dir.iterdir()):
                self.dir.rmdir()
            raise

    def _outputs(self, where: Path, plan: Plan, keep_weights: bool = False) -> Outputs:
        return Outputs(where, self.formats, plan.columns, self.recipe.output.write_rejected,
                       keep_weights, write_cleaned=plan.cleans)

    def write(self, source: Source, runner, plan: Plan) -> Written:
        """Run ``plan`` over ``source`` with ``runner`` and write the results."""
        try:
            if self.recipe.output.shard_size and not plan.needs_all_rows:
                return self._sharded(source, runner, plan)
            return self._one_pass(source, runner, plan)
        except OSError as exc:
            if isinstance(exc, BitextforgeError):
                raise
            raise BitextforgeError(f"{self.dir}: writing output failed: "
                                   f"{exc.strerror or exc}") from exc

    def _one_pass(self, source: Source, runner, plan: Plan) -> Written:
        outputs = self._outputs(self.dir, plan)
        try:
            outputs.drain(runner.run(source.batches(), plan.executors, self.recipe))
            files = outputs.commit()
        except BaseException:
            outputs.discard()
            raise
        return Written(files, outputs.rows, outputs.rejected_rows, False)

    def _sharded(self, source: Source, runner, plan: Plan) -> Written:
        fingerprint = input_fingerprint(self.recipe, [ex.comp for ex in plan.executors])
        store = self.store = ShardStore(self.dir, fingerprint, self.restart)
        done = store.finished()
        if done:
            state = store.state(done - 1)
            plan.restore(state)
            source.stats.replaced_invalid_utf8 = state["replaced_invalid_utf8"]
        for k, shard in enumerate(source.shards(self.recipe.output.shard_size)):
            if k < done:
                for _ in shard:  # already processed: read past its lines
                    pass
                continue
            outputs = self._outputs(store.begin(k), plan, keep_weights=True)
            try:
                outputs.drain(runner.run(shard, plan.executors, self.recipe))
                outputs.commit()
            except BaseException:
                outputs.discard()
                raise
            store.finish(k, {"shard": k, "rows": outputs.rows,
                             "rejected_rows": outputs.rejected_rows, "all_one": outputs.all_one,
                             "files": [f.path.name for f in outputs.files],
                             "replaced_invalid_utf8": source.stats.replaced_invalid_utf8,
                             **plan.state()})
        n = store.finished()
        states = [store.state(k) for k in range(n)]
        if n:
            names = sorted(states[0]["files"])
            files = store.merge(self.dir, n, names, not all(st["all_one"] for st in states))
        else:  # empty input: no shard was started; write the header-only files
            files = self._outputs(self.dir, plan).commit()
            shutil.rmtree(store.dir)
        return Written(files, sum(st["rows"] for st in states),
                       sum(st["rejected_rows"] for st in states), True)
