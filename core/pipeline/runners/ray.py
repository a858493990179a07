"""The Ray runner: the recipe's steps on Ray Data, with output identical to the local runner's.

Design in ``docs/ray.md``; the components run unchanged, this module only decides where each step
executes.

* The driver keeps reading (the :class:`~bitextforge.io.corpus.Reader` with all its input checks and
  statistics) and feeds :class:`~bitextforge.pipeline.runners.stream.Packet` objects, through a bounded
  queue, to a Ray Data read task. One Ray row is one packet, pickled whole: the batch keeps its
  ``id`` groups (weighters and paraphrase expansion see whole groups), its exact Python values
  (ints, ``None`` scores of out-of-scope rows), and the packet carries the rows its steps rejected
  and their counters.
* Every streaming step is a ``map_batches`` over an autoscaling actor pool; each actor builds the
  component ONCE from its class and config (not its registered name: the registry is
  process-local) through the :class:`~bitextforge.pipeline.plan.Plan` loop the driver builds with, with
  ``num_cpus``/``num_gpus``/``concurrency`` from the step's ``resources``.
  An actor of a step without ``num_gpus`` sees no GPU (Ray leaves ``CUDA_VISIBLE_DEVICES`` alone
  for it), so on a mixed cluster ``device: auto`` puts only the steps that asked for GPUs on
  them; each actor reports the devices its components resolved, which the manifest records as
  the step's ``ray_devices``.
* Steps that must see every batch in order run in the driver, exactly as the local runner runs
  them: ``keep: {top, words}`` (two passes over all scores), split steps (fresh ids across
  batches) and stateful components (``Component.stateful``, e.g. ``dedupe.v1``). A recipe
  therefore becomes segments of Ray steps separated by driver steps.
* The feeding queue and the read task are pinned to the driver's node; only actors run on
  other nodes, so a lost worker node costs actors, which Ray Data restarts elsewhere, and the
  batches they held, which it retries (``tests/test_ray_cluster.py`` removes a node mid-run).
* Ray prints nothing on the run's stderr (its logs stay in its session folder).
* Workers return results, never write: rejected rows ride with their packet and the driver adds
  the workers' counters to its executors when the packet arrives in input order, so
  ``rejected.tsv`` and the manifest counts are the local runner's.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import inspect
import os
import pickle
import queue as _queue
import socket
import sys
import threading
import time
import traceback
import warnings
from contextlib import contextmanager
from typing import Iterable, Iterator

from ...io.corpus import Batch, batch_len
from ...log import say
from ...errors import BitextforgeError, RecipeError
from ...processes import release_free_memory
from ...recipe.step_models import Resources
from ..executors import Executor
from .stream import Packet, drive, packets

_QUEUE_SIZE = 8
_END = b""
#: packets a worker runs between two hand-backs of its freed heap pages
#: (:func:`~bitextforge.processes.release_free_memory`)
_TRIM_EVERY = 10


def run(source: Iterable[Batch], executors: list[Executor], recipe=None) -> Iterator[Packet]:
    """Run ``executors`` over ``source`` on Ray; yield packets in input order."""
    # the actors get the recipe's configs: the driver's copy of a GPU step may have been built
    # on the CPU (:func:`bitextforge.pipeline.plan.driver_config`)
    configs = dict(enumerate(recipe.configs)) if recipe is not None else {}
    import ray

    if not ray.is_initialized():
        # RAY_ADDRESS (set by --address) selects a cluster; without it a local one starts, even
        # where a `ray start` cluster runs on this machine (Ray would join that one, and
        # --address auto asks for it). It stays up for the process: a sharded run calls run()
        # once per shard.
        _init_quietly(ray)
        atexit.register(ray.shutdown)
    _configure_data_context()
    seed = recipe.seed if recipe is not None else 0
    where = recipe.source if recipe is not None else "recipe"
    cluster = ray.cluster_resources()
    full, start_cpus, start_gpus = _check_resources(executors, cluster.get("CPU", 0.0),
                                                    cluster.get("GPU", 0.0))
    if not any(key[0] == id(recipe) for key in _OPEN):  # the run's first shard: no actors yet
        _say_if_held_by_others(ray, start_cpus, start_gpus)
    by_index = {ex.index: ex for ex in executors}
    stream: Iterator[Packet] = packets(source)
    pending: list[Executor] = []
    for ex in executors:
        if _in_driver(ex):
            if pending:
                stream = _ray_segment(stream, pending, seed, where, configs, recipe, full)
                pending = []
            stream = drive(ex, stream)
        else:
            pending.append(ex)
    if pending:
        stream = _ray_segment(stream, pending, seed, where, configs, recipe, full)
    for p in stream:
        if p.error is not None:
            raise p.error
        for index, counters in p.counters:
            by_index[index].record(counters)
        for index, devices in p.devices:
            extra = by_index[index].stats.extra
            extra["ray_devices"] = sorted(set(extra.get("ray_devices", [])) | set(devices))
        p.counters, p.devices = [], []
        yield p


def _in_driver(ex: Executor) -> bool:
    return ex.needs_all_rows or ex.in_order


#: the driver's own Ray log level: its C++ core worker otherwise prints warnings meant for Ray's
#: developers (an actor's constructor arguments in the object store) on the run's stderr
_BACKEND_LOG_LEVEL = "fatal"


def _init_quietly(ray) -> None:
    """``ray.init`` that prints nothing on the run's stderr: Ray's Python loggers at ERROR, its
    workers' output kept in their log files, and the driver's C++ logging, which reads
    ``RAY_BACKEND_LOG_LEVEL`` once, at start, set for this call only (a user's own setting wins).
    A local cluster's workers run at niceness 0 (``RAY_worker_niceness``, likewise)."""
    address = os.environ.get("RAY_ADDRESS") or "local"
    settings = {"RAY_BACKEND_LOG_LEVEL": _BACKEND_LOG_LEVEL}
    if address == "local":
        # the cluster started for this run does this run's work: its workers at the run's own
        # priority, not at Ray's default niceness of 15, which on a busy machine left the actors
        # waiting for a core while every other process ran (hardrules.v1 took 5.5x its local
        # time on 2 cores at load 15)
        settings["RAY_worker_niceness"] = "0"
    else:
        _check_answers(address)
    unset = [k for k in settings if k not in os.environ]  # a user's own setting wins
    for key in unset:
        os.environ[key] = settings[key]
    try:
        with _cxx_stderr_silenced("RAY_BACKEND_LOG_LEVEL" in unset):
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     logging_level="ERROR")
    except Exception as exc:  # Ray's start-up failures are bare Exception, ConnectionError, ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if address != "local":
            hint = "check the address (`ray status` on the cluster's head node prints it)"
        elif "timed out" in first:
            hint = ("a local cluster's raylet must register within 30 s, which a very busy "
                    "machine can miss: try again, or use --runner local")
        else:
            hint = "or use --runner local"
        raise BitextforgeError(f"--runner ray: Ray did not start ({address}): {first}; "
                               f"{hint}") from exc
    finally:
        for key in unset:
            del os.environ[key]


def _check_answers(address: str, timeout: float = 5.0) -> None:
    """Fail at once, in one line, when nothing listens at a cluster ``address``
    (``host:port``, ``ray://host:port``; a host alone means Ray's port 6379): Ray itself keeps
    retrying the connection for minutes, saying nothing. ``auto`` is left to Ray."""
    if address == "auto":
        return
    where = address.split("://", 1)[-1]
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit():
        host, port = where, "6379"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise BitextforgeError(
            f"--address {address}: no Ray cluster answers at {host}:{port} "
            f"({exc.strerror or exc}); start one with `ray start --head` and give the address it "
            f"prints, or leave --address out for a local cluster") from None


@contextmanager
def _cxx_stderr_silenced(silence: bool):
    """While ``ray.init`` starts the driver's core worker, its C++ logging announces the level it
    read, whatever that level: the process's stderr (file descriptor 2) goes to the null device
    meanwhile. Python's own errors are exceptions, raised after it is restored."""
    if not silence:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _configure_data_context() -> None:
    """Ray Data in input order, one packet a block, and silent: its progress bars and its
    per-dataset log lines (about twenty INFO lines a dataset, and a progress report every ten
    seconds where stdout is not a terminal) repeat what bitextforge's own progress shows, and
    they would ignore ``-q``; they stay in Ray's log files."""
    import logging

    from ray.data import DataContext

    ctx = DataContext.get_current()
    ctx.execution_options.preserve_order = True
    # a block leaves the read task as soon as it is yielded, not when enough have gathered to
    # fill a block of the default size: a shard's last packets must come out before the next
    # shard is fed (the pipeline stays open between shards)
    ctx.target_max_block_size = 1
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    # Ray Data's loggers write to stderr from their own handlers at INFO and WARNING ("progress
    # bars disabled"); its file handler keeps everything
    for name in ("ray.data", "ray.data._internal"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # and its Python warnings about its own tuning: a pool of more actors than the input has
    # blocks (a small input, or a shard's last packet) does the same work, and the advice it
    # gives (override_num_blocks) is not a bitextforge setting
    warnings.filterwarnings("ignore", category=UserWarning, module=r"ray\.data\.")


def _check_resources(executors: list[Executor], cpus: float,
                     gpus: float = 0.0) -> tuple[bool, float, float]:
    """Fail before starting when the actors' minimum (one per step) cannot be scheduled: Ray
    would otherwise wait for the missing CPUs or GPUs for ever. Return whether every step's
    ``concurrency`` actors fit at once (then each pool starts at full size), and the CPUs and
    GPUs the pools start with."""
    need = need_gpus = full = full_gpus = 0.0
    segment: list = []
    for ex in [*executors, None]:
        if ex is not None and not _in_driver(ex):
            segment.append(ex)
            continue
        for group in _fuse(segment):
            res = _step_resources(group[0])
            need, need_gpus = need + res.num_cpus, need_gpus + res.num_gpus
            full += res.num_cpus * res.concurrency
            full_gpus += res.num_gpus * res.concurrency
        segment = []
    if need > cpus:
        raise RecipeError(f"resources: the Ray steps need {need:g} CPUs for one actor each but the "
                          f"cluster has {cpus:g}; lower steps[*].resources.num_cpus (e.g. 0.25)")
    if need_gpus > gpus:
        raise RecipeError(f"resources: the Ray steps need {need_gpus:g} GPUs for one actor each "
                          f"but the cluster has {gpus:g}; start a node with GPUs (docs/ray.md) "
                          f"or lower steps[*].resources.num_gpus (e.g. 0.5 shares one GPU)")
    fits = full <= cpus and full_gpus <= gpus
    return (fits, full, full_gpus) if fits else (fits, need, need_gpus)


def _say_if_held_by_others(ray, cpus: float, gpus: float, grace: float = 2.0) -> None:
    """One line when other work on the cluster holds the CPUs or GPUs the actors start with:
    Ray then waits for them, and would say nothing. Resources freed a moment ago may take a
    heartbeat to show as free, hence the ``grace`` seconds before saying so."""
    deadline = time.monotonic() + grace
    while True:
        free = ray.available_resources()
        short = [f"{n:g} {what} ({free.get(key, 0.0):g} free now)"
                 for n, what, key in ((cpus, "CPUs", "CPU"), (gpus, "GPUs", "GPU"))
                 if n > free.get(key, 0.0) + 1e-9]
        if not short or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    if short:
        say("", "--runner ray: waiting for the cluster: the steps' actors need "
                + " and ".join(short) + "; other work holds the rest, and the run starts when "
                "it is freed")


def _step_resources(ex: Executor) -> Resources:
    return ex.step.resources or Resources()


# ---------------------------------------------------------------- Ray steps


class _StepActor:
    """One worker of one or more consecutive steps with equal resources: builds their components
    once, through the driver's own :class:`~bitextforge.pipeline.plan.Plan` loop, and runs pickled reader
    batches through the steps in order."""

    def __init__(self, specs: list, seed: int, source: str = "recipe", num_gpus: float = 0):
        """Build each ``(index, step, cls, config)`` as the driver's Plan builds them, from the
        same seed (``source`` names the recipe in its errors).

        The config arrives as a plain dict and is validated again, against the class this worker
        imported. A start-up failure is kept and reported with the first batch: a
        BitextforgeError as the one-line error the driver would have given, anything else as
        itself, as the local runner would raise it (Ray would wrap it and restart the actor).
        Without ``num_gpus`` the GPUs of the node are hidden before any component loads CUDA:
        Ray reserved none for this actor.
        """
        from ..plan import Plan

        if not num_gpus:
            os.environ["CUDA_VISIBLE_DEVICES"] = ""
        self.plan: Plan | None = None
        self.error: BaseException | None = None
        self.devices_sent = False
        try:
            self.plan = Plan(_WorkerRecipe(specs, seed, source), _WorkerRegistry(specs), [],
                             only={index for index, *_ in specs})
        except Exception as exc:  # noqa: BLE001 - classified by Plan, raised by the driver
            if not isinstance(exc, BitextforgeError):
                exc.add_note(f"(on a Ray worker)\n{traceback.format_exc()}")
            self.error = exc
        self.execs: list[Executor] = self.plan.executors if self.plan is not None else []
        self.packets = 0

    def __call__(self, table):
        """Run the steps on each pickled packet of a Ray batch."""
        import pyarrow as pa

        out = []
        for blob in table.column("blob").to_pylist():
            p: Packet = pickle.loads(blob)
            if self.error is not None and p.error is None:
                p.error, p.batch = self.error, None
            if not self.devices_sent:
                p.devices.extend((ex.index, found) for ex in self.execs
                                 if (found := _devices(ex.comp.manifest_info())))
                self.devices_sent = True
            for ex in self.execs:
                if p.batch is None:
                    break
                try:
                    res = ex.run(p.batch)
                except BitextforgeError as exc:
                    # as data, not as a Ray task failure: Ray would wrap the one-line message
                    # in its own traceback
                    p.error, p.batch = exc, None
                    break
                p.rejected.extend(res.rejected)
                p.changed.extend(res.changed)
                p.counters.append((ex.index, res.counters()))
                p.batch = res.kept if batch_len(res.kept) else None
            out.append(pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL))
            self.packets += 1
            if self.packets % _TRIM_EVERY == 0:
                release_free_memory()
        return pa.table({"blob": pa.array(out, type=pa.large_binary())})

    def __del__(self):
        """Release the models and score caches when Ray ends the actor."""
        plan = getattr(self, "plan", None)
        if plan is not None:
            plan.close()


class _WorkerRecipe:
    """What :class:`~bitextforge.pipeline.plan.Plan` reads of a recipe, for the steps a worker runs (the
    others are None and skipped)."""

    def __init__(self, specs: list, seed: int, source: str):
        n = max(index for index, *_ in specs) + 1
        self.steps: list = [None] * n
        self.configs: list = [None] * n
        for index, step, _cls, config in specs:
            self.steps[index], self.configs[index] = step, config
        self.seed = seed
        self.source = source


class _WorkerRegistry:
    """The registry a worker's Plan builds from: the classes the driver shipped, each taking the
    plain-dict config it was sent (validated by its own ``Config``, so a mismatch becomes the
    Plan's one-line start-up error)."""

    def __init__(self, specs: list):
        self.classes = {step.component: cls for _index, step, cls, _config in specs}

    def registration(self, kind: str, name: str) -> "_WorkerRegistration":
        """What ``build_component`` asks for: a factory ``config dict -> component`` for the
        shipped class ``name``, and no missing extra (the driver checked the extras when it built
        its own plan, before shipping anything)."""
        cls = self.classes[name]
        return _WorkerRegistration(lambda config: cls(cls.Config.model_validate(config)))


class _WorkerRegistration:
    """A shipped class as ``build_component`` sees a registration: ``cls`` builds it from the
    plain-dict config the driver sent."""

    def __init__(self, factory):
        self.cls = factory

    def unavailable(self, config=None) -> None:
        """Never: availability was decided on the driver."""
        return None


def _devices(info) -> list[str]:
    """Every ``device`` value in a component's manifest facts, however deep (a backend's facts
    sit under ``model``)."""
    if isinstance(info, dict):
        found = [info["device"]] if isinstance(info.get("device"), str) else []
        return sorted(set(found).union(*(_devices(v) for v in info.values())))
    if isinstance(info, (list, tuple)):
        return sorted(set().union(*(_devices(v) for v in info)))
    return []


def _ship_class(cls) -> None:
    """Let workers unpickle a class that only this process can import (a script's or a test's)."""
    top = cls.__module__.split(".")[0]
    if top in importlib.metadata.packages_distributions() or top == "bitextforge":
        return
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[cls.__module__])


def _fuse(executors: list[Executor]) -> list[list[Executor]]:
    """Consecutive steps with equal resources share one actor pool (fewer processes, one
    transfer per batch); steps with their own resources keep their own pool."""
    groups: list[list] = []
    last = None
    for ex in executors:
        res = _step_resources(ex)
        if groups and res == last:
            groups[-1].append(ex)
        else:
            groups.append([ex])
        last = res
    return groups


#: the Ray Data pipelines of the run, by (recipe, step indices): a sharded run calls run() once
#: per shard, and its actors (with their models) serve every shard; :func:`close` ends them
_OPEN: dict[tuple, "_Segment"] = {}


def close() -> None:
    """End the run's Ray Data pipelines, their actor pools and models (the driver calls it once,
    after the last shard)."""
    while _OPEN:
        _, seg = _OPEN.popitem()
        seg.close()


def _ray_segment(stream: Iterator[Packet], executors: list[Executor], seed: int,
                 source: str, configs: dict | None = None, recipe=None,
                 full: bool = False) -> Iterator[Packet]:
    """The packets of ``stream`` through the pipeline of ``executors``, built at the run's first
    call and reused by the next shards'; ``full``: start every pool at its ``concurrency``."""
    key = (id(recipe), tuple(ex.index for ex in executors))
    seg = _OPEN.get(key)
    if seg is None:
        seg = _OPEN[key] = _Segment(executors, seed, source, configs, full)
    try:
        yield from seg.run(stream)
    except BaseException:
        # an error or an abandoned shard leaves packets in flight: this pipeline cannot serve
        # another shard in step
        _OPEN.pop(key, None)
        seg.close(drain=False)
        raise


class _Segment:
    """Consecutive streaming steps on Ray Data: one ``map_batches`` actor pool per group of
    steps with equal resources, fed through a queue that stays open between shards."""

    def __init__(self, executors: list[Executor], seed: int, source: str,
                 configs: dict | None = None, full: bool = False):
        """Build the pipeline; ``configs`` (by step index) are what the actors build from, the
        driver's own component configs otherwise; ``full``: every pool starts with its
        ``concurrency`` actors (else with one, and Ray Data adds the others when it sees work
        waiting). Nothing runs before the first packet."""
        import ray
        import ray.data
        from ray.util.queue import Queue
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        # the queue and the read task live on the driver's node: a worker node lost mid-run must
        # take only actors with it, whose batches Ray Data retries on the other nodes; a queue or
        # a read task lost with their node would lose the packets they held
        node = ray.get_runtime_context().get_node_id()
        here = {"scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False)}
        self.q = q = Queue(maxsize=_QUEUE_SIZE, actor_options={"num_cpus": 0, **here})
        # the read task only waits on the queue: it must not hold a CPU the actors need
        if "label_selector" in inspect.signature(ray.data.read_datasource).parameters:
            pin = {"label_selector": {"ray.io/node-id": node}}
        else:  # a Ray before node labels
            pin = {"ray_remote_args": here}
        ds = ray.data.read_datasource(_make_datasource(q), override_num_blocks=1, num_cpus=0,
                                      **pin)
        _check_paths_on_nodes(executors, configs or {}, source)
        for group in _fuse(executors):
            res = _step_resources(group[0])
            specs = []
            for ex in group:
                cls = type(ex.comp)
                _ship_class(cls)
                config = (configs or {}).get(ex.index, ex.comp.config)
                specs.append((ex.index, ex.step, cls,
                              config.model_dump(mode="python", by_alias=True)))
            ds = ds.map_batches(
                _StepActor, batch_size=1, batch_format="pyarrow", zero_copy_batch=True,
                fn_constructor_args=(specs, seed, source, res.num_gpus),
                # a pool that starts with one actor was seen to stay at one on a small cluster
                # (Ray Data's budget for the operator held it back), so the model-bound step
                # used one core of two; when all fit, each pool starts full
                compute=ray.data.ActorPoolStrategy(
                    min_size=res.concurrency if full else 1, max_size=res.concurrency),
                num_cpus=res.num_cpus, num_gpus=res.num_gpus or None)
        self.ds = ds
        self.rows: Iterator | None = None

    def run(self, stream: Iterator[Packet]) -> Iterator[Packet]:
        """Feed this shard's packets and yield as many results, in input order: every packet
        comes out of the pipeline exactly once, so the count marks the end of the shard."""
        feeder = _Feeder(stream, self.q)
        if self.rows is None:
            # no prefetching: it would wait for a block beyond the shard's last
            self.rows = (row for b in self.ds.iter_batches(batch_size=None, prefetch_batches=0,
                                                             batch_format="pyarrow")
                         for row in b.to_pylist())
        feeder.start()
        got = 0
        try:
            while feeder.more(got):
                yield pickle.loads(next(self.rows)["blob"])
                got += 1
        except Exception as exc:  # noqa: BLE001 - unwrap a component's own one-line error
            inner = _user_error(exc)
            if inner is not None:
                raise inner from None
            raise
        finally:
            feeder.stop()
            feeder.join(timeout=5)
        if feeder.error is not None:
            raise feeder.error

    def close(self, drain: bool = True) -> None:
        """End the read task, the actors and the queue; ``drain``: let the pipeline finish
        cleanly first (nothing is in flight after a whole shard), else only kill the queue,
        which fails the read task."""
        import ray

        if drain:
            try:
                self.q.put(_END, timeout=5)
                for _ in self.rows or ():
                    pass
            except Exception:  # noqa: BLE001 - a broken pipeline: killing the queue ends it
                pass
        self.rows = None
        try:
            ray.kill(self.q.actor)
        except Exception:  # noqa: BLE001 - already gone with the cluster
            pass


def _missing_paths(paths: list[str]) -> list[str]:
    """The ``paths`` that do not exist where this runs (a task on one node)."""
    return [p for p in paths if not os.path.exists(p)]


def _check_paths_on_nodes(executors: list[Executor], configs: dict, source: str) -> None:
    """Every file a Ray step declares (``input_paths``: its model, tables, dictionary) must be at
    the same path on every node that may run its actors: a task on each live node with CPUs
    looks, before any actor starts, and a missing one is refused naming the step, the path and
    the node, instead of each actor there failing on its own. Nothing is checked on a one-node
    cluster (the driver checked its own disk before the run)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    wanted: dict[str, str] = {}  # path -> the recipe key that names it
    for ex in executors:
        config = configs.get(ex.index, ex.comp.config)
        try:
            declared = type(ex.comp).input_paths(config)
        except Exception:  # noqa: BLE001 - the driver's own check reported any problem
            continue
        for key, path in declared.items():
            if path:
                wanted.setdefault(str(path), f"steps[{ex.index}].with.{key}")
    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU")]
    if not wanted or len(nodes) < 2:
        return
    check = ray.remote(num_cpus=0)(_missing_paths)
    refs = {n["NodeID"]: check.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        n["NodeID"], soft=False)).remote(sorted(wanted)) for n in nodes}
    for node in nodes:
        missing = ray.get(refs[node["NodeID"]])
        if missing:
            path = missing[0]
            raise RecipeError(
                f"{source}: {wanted[path]}: {path} is not on Ray node "
                f"{node.get('NodeManagerAddress', '?')} ({node['NodeID'][:12]}); every node that "
                f"may run the step's actors needs it at the same path (a shared file system or "
                f"a copy, docs/ray.md)" + (f"; {len(missing) - 1} more missing there"
                                          if len(missing) > 1 else ""))


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
    """Pulls one shard's packets from the driver's iterator (the Reader, or a driver step) into
    the queue, counting them."""

    def __init__(self, stream: Iterator[Packet], q):
        super().__init__(name="bitextforge-ray-feeder", daemon=True)
        self.packets = stream
        self.q = q
        self.error: BaseException | None = None
        self._stop_flag = threading.Event()
        self._fed = 0
        self._done = False
        self._cond = threading.Condition()

    def more(self, got: int) -> bool:
        """Whether a result beyond the ``got`` received is still to come: wait until the
        feeder has queued more packets than that or has finished."""
        with self._cond:
            while self._fed <= got and not self._done:
                self._cond.wait()
            return self._fed > got

    def stop(self) -> None:
        """Ask the thread to stop feeding (the run is ending)."""
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
        """Queue every packet; an error is kept for the driver."""
        try:
            for packet in self.packets:
                if not self._put(pickle.dumps(packet, protocol=pickle.HIGHEST_PROTOCOL)):
                    return
                with self._cond:
                    self._fed += 1
                    self._cond.notify_all()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the driver's main thread
            self.error = exc
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()


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


__all__ = ["close", "run"]
