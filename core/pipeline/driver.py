"""The driver of a run, shared by ``bitextforge run`` and ``bitextforge score``: the preamble
(recipe files checked, the output claimed, the ``prepare:`` list trained, the source
opened), then the runner over the source, in one pass or shard by shard with resume
(:mod:`~bitextforge.pipeline.shards`), each packet fed to the sink, which only writes.

``docs/architecture.md`` draws where it sits between the stages.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol

from ..recipe.checks import check_recipe_files
from ..errors import BitextforgeError
from ..log import say
from ..processes import release_free_memory
from .plan import Plan
from .prepare import run_prepare
from ..components.registry import Registry
from .judging import FirstPass
from .runners.stream import Packet, drive
from .selection import first_pass, second_pass
from .shards import FINAL, ShardStore, input_fingerprint
from .sink import Written
from .source import Source


@dataclass
class Started:
    """What the preamble produced: when the run started, the ``prepare:`` entries it trained or
    found, and the source (None for a recipe that only trains models)."""

    started: float
    prepared: list
    source: Source | None


@contextmanager
def preamble(recipe, registry: Registry, progress: bool,
             claim: AbstractContextManager | None = None,
             output_dir: Path | None = None, evaluators: bool = True) -> Iterator[Started]:
    """Check every file the recipe names (and what its steps, and with ``evaluators`` its
    evaluators, check for a run into ``output_dir``), claim the output (``claim``, held
    until the run ends), train the ``prepare:`` list, and open the source with ``progress``
    bars."""
    started = time.time()
    # every problem at once, before any training
    check_recipe_files(recipe, registry, output_dir=output_dir, evaluators=evaluators)
    # a recipe that only trains models has no output to claim (``claim`` is None) and no source
    with claim if claim is not None else nullcontext():
        prepared = run_prepare(recipe, registry) if recipe.prepare else []
        yield Started(started, prepared,
                      None if recipe.input is None
                      else Source(recipe.input, recipe.batch_size, progress=progress,
                                  seed=recipe.seed))


class Writer(Protocol):
    """What the driver feeds: the output files of a run or shard
    (:class:`~bitextforge.pipeline.sink.Outputs`, or the score TSV of ``bitextforge score``)."""

    rows: int
    rejected_rows: int

    def put(self, packet: Packet) -> None:
        """Write one packet."""

    def commit(self) -> list[str]:
        """Give every file its final name; return the names."""

    def discard(self) -> None:
        """Remove every temporary file."""


def feed(packets: Iterator[Packet], writer: Writer) -> list[str]:
    """Write every packet into ``writer`` and commit it; an error leaves no file of it behind."""
    try:
        for p in packets:
            writer.put(p)
        return writer.commit()
    except BaseException:
        writer.discard()
        raise


class Driver:
    """Runs ``executors`` over ``source`` with ``runner`` and feeds the packets to ``sink``:
    in one pass, or, with ``shard_size`` and a ``plan`` whose steps allow it, shard by shard into
    the sink's directory so a killed run resumes after its last finished shard."""

    def __init__(self, recipe, source: Source, runner, sink, executors: list, *,
                 plan: Plan | None = None, shard_size: int | None = None, restart: bool = False):
        """``sink.open(where=None, keep_weights=False)`` gives a :class:`Writer`; ``restart``
        discards an unfinished run of a different recipe in the directory instead of refusing."""
        self.recipe = recipe
        self.source = source
        self.runner = runner
        self.sink = sink
        self.executors = executors
        self.plan = plan
        self.shard_size = shard_size if plan is not None else None
        self.restart = restart
        self.store: ShardStore | None = None

    def run(self) -> Written:
        """Run to the end and return what was written (final names, rows kept and rejected)."""
        try:
            if self.shard_size:
                return self._sharded()
            return self._one_pass()
        except OSError as exc:
            if isinstance(exc, BitextforgeError):
                raise
            raise BitextforgeError(f"{self.sink.dir}: writing output failed: "
                                   f"{exc.strerror or exc}") from exc
        finally:
            # a runner that keeps workers between shards (ray) ends them here
            self.runner.close()

    def finish(self) -> None:
        """The run's reports are written: remove its shards (kept until now so a kill before the
        manifest never costs a row)."""
        if self.store is not None:
            self.store.remove()
            self.store = None

    def _packets(self, batches) -> Iterator[Packet]:
        return self.runner.run(batches, self.executors, self.recipe)

    def _one_pass(self) -> Written:
        writer = self.sink.open()
        files = feed(self._packets(self.source.batches()), writer)
        return Written(files, writer.rows, writer.rejected_rows, False)

    def _sharded(self) -> Written:
        plan, source = self.plan, self.source
        fingerprint = input_fingerprint(self.recipe, [ex.comp for ex in plan.executors])
        store = self.store = ShardStore(self.sink.dir, fingerprint, self.restart)
        # a corpus-wide selection: the shards run up to its first pass (pipeline.selection)
        at = next((i for i, ex in enumerate(self.executors) if ex.needs_all_rows), None)
        head = (self.executors if at is None
                else [*self.executors[:at], FirstPass(self.executors[at])])
        try:
            done = store.finished()
            if done:
                state = store.state(done - 1)
                plan.restore(state)
                source.stats.replaced_invalid_utf8 = state["replaced_invalid_utf8"]
                say("", f"{self.sink.dir}: resuming an earlier, stopped run of this recipe after "
                        f"its {done} finished shard{'' if done == 1 else 's'} "
                        f"(its first {done * self.shard_size:,} input rows); --restart "
                        f"starts again")
            for k, shard in enumerate(source.shards(self.shard_size)):
                if k < done:
                    for _ in shard:  # already processed: read past its lines
                        pass
                    continue
                where = store.begin(k)
                stream = self.runner.run(shard, head, self.recipe)
                if at is not None:
                    stream = first_pass(self.executors[at], stream, where)
                writer = self.sink.open(where, keep_weights=True)
                feed(stream, writer)
                store.finish(k, self._shard_state(k, writer))
                release_free_memory()  # a shard's batches are gone: hand their pages back
            n = store.finished()
            last = self._selected(store, n, at) if at is not None and n else None
        except BaseException:
            if store.finished() == 0:
                # nothing to resume: the corrected rerun starts cleanly instead of being refused
                # as a different run
                self.finish()
            raise
        # one shard's state at a time: each holds its components' state (dedupe's keys), and all
        # of them at once grew the run's peak with the number of shards
        files: list[str] = []
        rows = rejected = 0
        all_one = True
        for k in range(n):
            st = store.state(k)
            files = files or sorted(st["files"])
            rows += st["rows"]
            rejected += st["rejected_rows"]
            all_one = all_one and st["all_one"]
            del st
        if last is not None:
            rows += last["rows"]
            rejected += last["rejected_rows"]
            all_one = all_one and last["all_one"]
        if n:
            files = store.merge(self.sink.dir, n, files, not all_one, final=last is not None)
        else:  # empty input: no shard was started; write the header-only files
            files = self.sink.open().commit()
            self.finish()  # nothing to resume
        return Written(files, rows, rejected, True, resumed_shards=done)

    def _selected(self, store: ShardStore, n: int, at: int) -> dict[str, Any]:
        """The selection and the steps after it, over every shard's first pass, into the run's
        last part; done once (a rerun after it finds its saved state)."""
        saved = store.final_state()
        if saved is None:
            where = store.begin(FINAL)
            stream = second_pass(self.executors[at], [store.shard_dir(k) for k in range(n)])
            for ex in self.executors[at + 1:]:
                stream = drive(ex, stream)
            writer = self.sink.open(where, keep_weights=True)
            feed(stream, writer)
            saved = {"rows": writer.rows, "rejected_rows": writer.rejected_rows,
                     "all_one": writer.all_one, **self.plan.state()}
            store.finish(FINAL, saved)
        else:
            self.plan.restore(saved)
        return saved

    def _shard_state(self, k: int, writer) -> dict[str, Any]:
        return {"shard": k, "rows": writer.rows, "rejected_rows": writer.rejected_rows,
                "all_one": writer.all_one, "files": [f.path.name for f in writer.files],
                "replaced_invalid_utf8": self.source.stats.replaced_invalid_utf8,
                **self.plan.state()}
