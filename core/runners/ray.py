"""The Ray runner: the recipe's steps on Ray Data, with output identical to the local runner's.

Implements the "Ray runner" of issue 7 (design in ``docs/ray.md``); the papers' components run
unchanged, this module only decides where each step executes.

* The driver keeps reading (the :class:`~bitextforge.corpus.Reader` with all its input checks and
  statistics) and feeds the batches, through a bounded queue, to a Ray Data read task. One Ray row
  is one reader batch, pickled whole: the batch keeps its ``id`` groups (weighters and paraphrase
  expansion see whole groups), its exact Python values (ints, ``None`` scores of out-of-scope rows)
  and travels with the events it produced (rejected rows, step counters, score samples).
* Every streaming step is a ``map_batches`` over an autoscaling actor pool; each actor builds the
  component ONCE from its class and config (not its registered name: the registry is
  process-local), with ``num_cpus``/``num_gpus``/``concurrency`` from the step's ``resources``.
* Steps that need a global view run in the driver: ``keep: {top, words}`` (the local runner's two
  passes: score all, select by the threshold of all scores) and stateful components
  (``Component.stateful``, e.g. ``dedupe.v1``) whose result depends on every earlier batch. A recipe therefore becomes segments
  of Ray steps separated by driver steps.
* Rejected rows and counters are not written where they arise: they ride with their batch and the
  driver replays them in input order, so ``rejected.tsv``, the manifest counts and the score
  report's sample are the ones the local runner produces, byte for byte.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import os
import pickle
import queue as _queue
import sys
import threading
from typing import Any, Iterable, Iterator

from ..corpus import Batch
from ..errors import BitextforgeError, ComponentError, RecipeError
from ..recipe import Resources
from ..steps import FilterExec, ParaphraseExec, SplitExec, WeightExec

# A packet is (batch, events, dropped): ``events`` are what the steps did to this batch, in the
# order the local runner would have done it; ``dropped`` marks a batch a streaming step emptied
# (the local runner drops those) that still carries its events to the driver.
Packet = tuple[Batch, list, bool]

_QUEUE_SIZE = 8
_END = b""


def build_stream(source: Iterable[Batch], executors: list, recipe=None) -> Iterator[Batch]:
    """Run ``executors`` over ``source`` on Ray; yield output batches in input order."""
    import ray

    if not ray.is_initialized():
        # RAY_ADDRESS (set by --address) selects a cluster; without it a local one starts. It
        # stays up for the process: a sharded run calls build_stream once per shard.
        ray.init(address=os.environ.get("RAY_ADDRESS") or None, include_dashboard=False,
                 log_to_driver=False, logging_level="ERROR")
        atexit.register(ray.shutdown)
    _configure_data_context(recipe)
    seed = recipe.seed if recipe is not None else 0
    _check_resources(recipe, executors, ray.cluster_resources().get("CPU", 0.0))
    by_index = {ex.stats.index: ex for ex in executors}
    # the real sinks, taken before a driver step swaps in its collector: replay must reach them
    # even while that step's generator is suspended with the collector attached
    sinks = {i: (getattr(ex, "reject", None), getattr(ex, "sample", None))
             for i, ex in by_index.items()}
    packets: Iterator[Packet] = ((b, [], False) for b in source)
    pending: list = []
    for ex in executors:
        if _in_driver(ex):
            if pending:
                packets = _ray_segment(packets, pending, recipe, seed)
                pending = []
            if isinstance(ex, FilterExec) and ex.keep.is_global:
                packets = _driver_global(ex, packets)
            else:
                packets = _driver_stream(ex, packets)
        else:
            pending.append(ex)
    if pending:
        packets = _ray_segment(packets, pending, recipe, seed)
    for batch, events, dropped in packets:
        _replay(events, by_index, sinks)
        if not dropped:
            yield batch


def _in_driver(ex) -> bool:
    if isinstance(ex, FilterExec) and ex.keep.is_global:
        return True
    if isinstance(ex, SplitExec):
        return True  # it numbers output rows with fresh ids carried from batch to batch
    # a stateful component's result depends on every earlier batch (Component.stateful)
    return bool(getattr(ex.comp, "stateful", False))


def _configure_data_context(recipe) -> None:
    from ray.data import DataContext

    ctx = DataContext.get_current()
    ctx.execution_options.preserve_order = True
    show = bool(getattr(recipe, "progress", False))
    ctx.enable_progress_bars = show
    ctx.print_on_execution_start = show
    if not show:
        import logging

        logging.getLogger("ray.data").setLevel(logging.WARNING)


def _check_resources(recipe, executors: list, cpus: float) -> None:
    """Fail before starting when the actors' minimum (one per step) cannot be scheduled."""
    need = 0.0
    segment: list = []
    for ex in [*executors, None]:
        if ex is not None and not _in_driver(ex):
            segment.append(ex)
            continue
        need += sum(_step_resources(recipe, g[0]).num_cpus for g in _fuse(segment, recipe))
        segment = []
    if need > cpus:
        raise RecipeError(f"resources: the Ray steps need {need:g} CPUs for one actor each but the "
                          f"cluster has {cpus:g}; lower steps[*].resources.num_cpus (e.g. 0.25)")


def _step(recipe, ex):
    """The recipe step of an executor (WeightExec keeps no reference to it)."""
    if recipe is not None:
        return recipe.steps[ex.stats.index]
    return getattr(ex, "step", None)


def _step_resources(recipe, ex) -> Resources:
    return getattr(_step(recipe, ex), "resources", None) or Resources()


# ---------------------------------------------------------------- events


def _replay(events: list, by_index: dict, sinks: dict) -> None:
    """Apply events in order: rejections go to the run's sink, counters to the driver's stats."""
    for ev in events:
        kind = ev[0]
        if kind == "error":
            raise ev[1]
        if kind == "reject":
            _, index, batch, why, scores = ev
            by_index[index].rejected += len(batch["id"])
            sinks[index][0](batch, why, scores)
        elif kind == "sample":
            sinks[ev[1]][1].extend(ev[2])
        else:  # "stats"
            _, index, rows_in, rows_out, seconds, hits, misses, counters = ev
            ex = by_index[index]
            st = ex.stats
            st.count(**counters)
            st.rows_in += rows_in
            st.rows_out += rows_out
            st.seconds += seconds
            cache = getattr(ex, "cache", None)
            if cache is not None:  # the workers' lookups, reported when the driver closes it
                cache.hits += hits
                cache.misses += misses


def _raise_errors(events: list) -> None:
    """Raise a worker's BitextforgeError in the driver as soon as its batch arrives."""
    for ev in events:
        if ev[0] == "error":
            raise ev[1]


class _Collect:
    """Stands in for an executor's reject sink or score sample and records events instead."""

    def __init__(self, events: list, ex):
        self.events = events
        self.ex = ex
        self.index = ex.stats.index

    def reject(self, batch: Batch, why: str, scores: list) -> None:
        # FilterExec counted these already; the replay counts them once, in the driver
        self.ex.rejected -= len(batch["id"])
        self.events.append(("reject", self.index, batch, why, scores))

    def extend(self, values) -> None:
        self.events.append(("sample", self.index, list(values)))


# ---------------------------------------------------------------- driver steps


def _driver_stream(ex, packets: Iterator[Packet]) -> Iterator[Packet]:
    """A streaming step that must see every batch in order (a stateful filter), in the driver."""
    real_reject, real_sample = getattr(ex, "reject", None), getattr(ex, "sample", None)
    try:
        for batch, events, dropped in packets:
            _raise_errors(events)
            if dropped or not batch["id"]:
                yield batch, events, True
                continue
            _attach(ex, events)
            out = ex(batch)
            yield out, events, not out["id"]
    finally:
        _detach(ex, real_reject, real_sample)


def _driver_global(ex: FilterExec, packets: Iterator[Packet]) -> Iterator[Packet]:
    """``keep: top/words`` in the driver: the local runner's two passes over a spill file.

    Pass 1 consumes every upstream packet; their events and this step's min/max rejections are
    queued in arrival order and leave with the first selected batch, exactly where the local runner
    writes them.
    """
    real_reject, real_sample = ex.reject, ex.sample
    pending: list = []
    _attach(ex, pending)

    def feed() -> Iterator[Batch]:
        for batch, events, dropped in packets:
            _raise_errors(events)
            pending.extend(events)
            if not dropped:
                yield batch

    try:
        for out in ex.apply_global(feed()):
            events = pending[:]
            pending.clear()
            yield out, events, False
        if pending:
            yield {"id": []}, pending[:], True
    finally:
        _detach(ex, real_reject, real_sample)


def _attach(ex, events: list) -> None:
    if isinstance(ex, FilterExec):
        c = _Collect(events, ex)
        ex.reject = c.reject
        # the sample is filled on replay, so it sees scores in the same order as the local runner
        ex.sample = c


def _detach(ex, reject, sample) -> None:
    if isinstance(ex, FilterExec):
        ex.reject, ex.sample = reject, sample


# ---------------------------------------------------------------- Ray steps


class _StepActor:
    """One worker of one or more consecutive steps with equal resources: builds each component
    once from (class, config) and runs pickled reader batches through the steps in order."""

    def __init__(self, specs: list, seed: int):
        """Seed like the driver does, then build each ``(kind, index, step, cls, config)``.

        The config arrives as a plain dict and is validated again here, against the class this
        worker imported; a start-up failure is kept and reported with the first batch, as the
        one-line error the driver would have given.
        """
        from ..run import seed_everything

        seed_everything(seed)
        self.execs: list = []
        self.error: BaseException | None = None
        try:
            for kind, index, step, cls, config in specs:
                try:
                    comp = cls(cls.Config.model_validate(config))
                except BitextforgeError:
                    raise
                except Exception as exc:  # noqa: BLE001 - becomes the driver's one-line error
                    raise ComponentError(f"{cls.name}: cannot start on a Ray worker: "
                                         f"{type(exc).__name__}: {exc}") from None
                if kind == "paraphrase":
                    ex: Any = ParaphraseExec(index, step, comp)
                elif kind == "filter":
                    ex = FilterExec(index, step, comp, lambda *a: None)
                else:
                    ex = WeightExec(index, step, comp)
                self.execs.append(ex)
            seed_everything(seed)  # again: seeds what the components loaded
        except BitextforgeError as exc:
            self.error = exc

    def __call__(self, table):
        """Run the steps on each pickled reader batch of a Ray batch."""
        import pyarrow as pa

        out = []
        for blob in table.column("blob").to_pylist():
            batch, events, dropped = pickle.loads(blob)
            if self.error is not None:
                events.append(("error", self.error))
                dropped = True
            for ex in self.execs:
                if dropped or not batch["id"]:
                    dropped = True  # the local runner drops an emptied batch between steps
                    break
                try:
                    batch = self._run(ex, batch, events)
                except BitextforgeError as exc:
                    # as data, not as a Ray task failure: Ray would wrap the one-line message
                    # in its own traceback
                    events.append(("error", exc))
                    dropped = True
                    break
            else:
                dropped = dropped or not batch["id"]
            out.append(pickle.dumps((batch, events, dropped), protocol=pickle.HIGHEST_PROTOCOL))
        return pa.table({"blob": pa.array(out, type=pa.large_binary())})

    @staticmethod
    def _run(ex, batch: Batch, events: list) -> Batch:
        st = ex.stats
        st.rows_in = st.rows_out = 0
        st.seconds = 0.0
        st.counters = {}
        cache = getattr(ex, "cache", None)
        h0, m0 = (cache.hits, cache.misses) if cache is not None else (0, 0)
        _attach(ex, events)
        out = ex(batch)
        h1, m1 = (cache.hits, cache.misses) if cache is not None else (0, 0)
        events.append(("stats", st.index, st.rows_in, st.rows_out, st.seconds, h1 - h0,
                       m1 - m0, dict(st.counters)))
        return out

    def __del__(self):
        """Release the models and score caches when Ray ends the actor."""
        for ex in getattr(self, "execs", ()):
            if hasattr(ex, "close"):
                ex.close()
            ex.comp.close()


def _step_kind(ex) -> str:
    if isinstance(ex, ParaphraseExec):
        return "paraphrase"
    if isinstance(ex, FilterExec):
        return "filter"
    return "weight"


def _ship_class(cls) -> None:
    """Let workers unpickle a class that only this process can import (a script's or a test's)."""
    top = cls.__module__.split(".")[0]
    if top in importlib.metadata.packages_distributions() or top == "bitextforge":
        return
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[cls.__module__])


def _fuse(executors: list, recipe) -> list[list]:
    """Consecutive steps with equal resources share one actor pool (fewer processes, one
    transfer per batch); steps with their own resources keep their own pool."""
    groups: list[list] = []
    last = None
    for ex in executors:
        res = _step_resources(recipe, ex)
        if groups and res == last:
            groups[-1].append(ex)
        else:
            groups.append([ex])
        last = res
    return groups


def _ray_segment(packets: Iterator[Packet], executors: list, recipe,
                 seed: int) -> Iterator[Packet]:
    """Consecutive streaming steps on Ray Data: one ``map_batches`` actor pool per group of
    steps with equal resources."""
    import ray
    import ray.data
    from ray.util.queue import Queue

    q = Queue(maxsize=_QUEUE_SIZE, actor_options={"num_cpus": 0})
    feeder = _Feeder(packets, q)
    # the read task only waits on the queue: it must not hold a CPU the actors need
    ds = ray.data.read_datasource(_QueueDatasource(q), override_num_blocks=1, num_cpus=0)
    for group in _fuse(executors, recipe):
        res = _step_resources(recipe, group[0])
        specs = []
        for ex in group:
            cls = type(ex.comp)
            _ship_class(cls)
            specs.append((_step_kind(ex), ex.stats.index, _step(recipe, ex), cls,
                          ex.comp.config.model_dump(mode="python", by_alias=True)))
        ds = ds.map_batches(
            _StepActor, batch_size=1, batch_format="pyarrow", zero_copy_batch=True,
            fn_constructor_args=(specs, seed),
            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=res.concurrency),
            num_cpus=res.num_cpus, num_gpus=res.num_gpus or None)
    feeder.start()
    try:
        for row in ds.iter_rows():
            yield pickle.loads(row["blob"])
    except Exception as exc:  # noqa: BLE001 - unwrap a component's own one-line error
        inner = _user_error(exc)
        if inner is not None:
            raise inner from None
        raise
    finally:
        feeder.stop()
        feeder.join(timeout=5)
        try:
            ray.kill(q.actor)
        except Exception:  # noqa: BLE001 - already gone with the cluster
            pass
    if feeder.error is not None:
        raise feeder.error


def _user_error(exc: BaseException) -> BaseException | None:
    """The BitextforgeError a worker raised, found inside Ray's wrappers."""
    seen = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, BitextforgeError):
            return cur
        cause = getattr(cur, "cause", None)
        if isinstance(cause, BaseException):
            cur = cause
            continue
        cur = cur.__cause__ or cur.__context__
    return None


class _Feeder(threading.Thread):
    """Pulls packets from the driver's iterator (the Reader, or a driver step) into the queue."""

    def __init__(self, packets: Iterator[Packet], q):
        super().__init__(name="bitextforge-ray-feeder", daemon=True)
        self.packets = packets
        self.q = q
        self.error: BaseException | None = None
        self._stop_flag = threading.Event()

    def stop(self) -> None:
        self._stop_flag.set()

    def _put(self, item: bytes) -> bool:
        while not self._stop_flag.is_set():
            try:
                self.q.put(item, timeout=0.5)
                return True
            except _queue.Full:
                continue
            except Exception:  # noqa: BLE001 - the queue actor is gone: the run is ending
                return False
        return False

    def run(self) -> None:
        try:
            for packet in self.packets:
                if not self._put(pickle.dumps(packet, protocol=pickle.HIGHEST_PROTOCOL)):
                    return
        except BaseException as exc:  # noqa: BLE001 - re-raised in the driver's main thread
            self.error = exc
        self._put(_END)


def _queue_blocks(q) -> Iterator:
    import pyarrow as pa

    while True:
        item = q.get()
        if item == _END:
            return
        yield pa.table({"blob": pa.array([item], type=pa.large_binary())})


def _make_datasource(q):
    from ray.data import Datasource, ReadTask
    from ray.data.block import BlockMetadata

    class QueueDatasource(Datasource):
        """One read task that yields one block per reader batch, as the driver queues them."""

        def estimate_inmemory_data_size(self):
            return None

        def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
            meta = BlockMetadata(num_rows=None, size_bytes=None, exec_stats=None,
                                 input_files=None)
            return [ReadTask(lambda: _queue_blocks(q), meta)]

    return QueueDatasource()


def _QueueDatasource(q):  # noqa: N802 - reads like the class it builds
    return _make_datasource(q)


__all__ = ["build_stream"]
