"""The plan stage of a run: the validated recipe becomes one built component and one executor per
step, found through the table of step kinds (:mod:`bitextforge.pipeline.kinds`).

Every component is built before the first line is read, so a missing model fails fast. The plan
also knows the run's columns and carries the state a sharded run saves and restores.
"""

from __future__ import annotations

import random
import sys
from typing import Any, Collection

from ..components.base import Component
from ..io.corpus import order_columns
from ..errors import BitextforgeError, ComponentError
from .kinds import kind_of
from ..components.registry import Registry
from ..recipe.runners import RUNNERS
from .executors import Executor

BASE_COLUMNS = ["id", "variant", "origin", "src", "tgt", "weight"]


def seed_everything(seed: int) -> None:
    """Seed Python, and NumPy and torch when loaded (a run calls it again once its components
    are built, so the libraries they load are seeded before the first batch; importing NumPy
    just to seed it would cost a model-free run a third of its memory)."""
    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def driver_config(recipe, step, config):
    """The config the plan builds a step's component from in this process.

    Under a runner with remote workers (Ray) a step that asks for GPUs (``resources:
    {num_gpus: ...}``) runs in GPU actors, and the driver's copy (which answers the plan's
    questions and runs the step only when it must see every row in order) may sit on a node
    without a GPU: there its ``device`` becomes ``cpu`` instead of failing with "no GPU visible";
    the actors get the recipe's own config."""
    res = getattr(step, "resources", None)
    runner = RUNNERS.get(getattr(recipe, "runner", "local"))
    if (runner is None or not runner.remote_workers or res is None or not res.num_gpus
            or getattr(config, "device", "cpu") == "cpu"):
        return config
    from ..hardware import visible_gpus

    if visible_gpus("torch") or visible_gpus("ctranslate2"):
        return config
    return config.model_copy(update={"device": "cpu"})


def build_component(registry: Registry, kind: str, name: str, config) -> Component:
    """Instantiate a registered component as ``cls(config)``, turning start-up failures into
    one-line errors that name the component (and the extra to install when its libraries are
    not)."""
    reg = registry.registration(kind, name)
    why = reg.unavailable(config)
    if why:
        raise ComponentError(why)
    cls = reg.cls
    try:
        return cls(config)
    except BitextforgeError:
        raise
    except (OSError, ImportError, ValueError) as exc:
        raise ComponentError(f"{name}: cannot start: {exc}") from exc


class Plan:
    """One executor per recipe step, each holding its built component, and the output columns.

    Use as a context manager: leaving it closes every executor and component, also on errors.
    """

    def __init__(self, recipe, registry: Registry, extra_columns: list[str],
                 only: Collection[int] | None = None):
        """Build every step's component and executor (``only`` the steps at these indices when
        given: a Ray worker builds its own); ``extra_columns`` are the input's own columns beyond
        src and tgt."""
        self.executors: list[Executor] = []
        self._closed = False
        problems: list[str] = []  # every component that cannot start, not just the first
        # components built from the seed whether or not a training ran before them
        seed_everything(recipe.seed)
        try:
            for i, (step, cfg) in enumerate(zip(recipe.steps, recipe.configs)):
                if only is not None and i not in only:
                    continue
                kind = kind_of(step)
                try:
                    comp = build_component(registry, kind.component, step.component,
                                           driver_config(recipe, step, cfg))
                except BitextforgeError as exc:
                    problems += [f"{recipe.source}: steps[{i}]: {line}"
                                 for line in str(exc).splitlines()]
                    continue
                self.executors.append(kind.executor(i, step, comp))
            if problems:
                raise ComponentError("\n".join(problems))
        except BaseException:
            self.close()
            raise
        seed_everything(recipe.seed)  # again: seeds what the components loaded
        cols = [*BASE_COLUMNS, *extra_columns]
        for ex in self.executors:
            cols.extend(ex.columns())
        self.columns = order_columns(cols)

    def __enter__(self) -> "Plan":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def cleans(self) -> bool:
        """True when a step changes text (the run writes cleaned.tsv)."""
        return any(ex.changes_text for ex in self.executors)

    @property
    def needs_all_rows(self) -> bool:
        """True when a step decides over the whole corpus (a sharded run selects after its
        last shard, :mod:`~bitextforge.pipeline.selection`)."""
        return any(ex.needs_all_rows for ex in self.executors)

    def close(self) -> None:
        """Close executors, then their components (once)."""
        if self._closed:
            return
        self._closed = True
        for ex in self.executors:
            ex.close()
        for ex in self.executors:
            ex.comp.close()

    def state(self) -> dict[str, Any]:
        """The cumulative state after a finished shard: components, executors and counters."""
        return {
            "components": [ex.comp.get_state() for ex in self.executors],
            "executors": [ex.get_state() for ex in self.executors],
            "stats": [(ex.stats.rows_in, ex.stats.rows_out, ex.stats.seconds, ex.rejected)
                      for ex in self.executors],
            "counters": [dict(ex.stats.counters) for ex in self.executors],
            "thresholds": [ex.stats.threshold for ex in self.executors],
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Put components and counters back as they were after a finished shard."""
        for ex, st in zip(self.executors, state["components"]):
            if st is not None:
                ex.comp.set_state(st)
        for ex, st in zip(self.executors, state["executors"]):
            if st is not None:
                ex.set_state(st)
        for ex, (rin, rout, secs, rej) in zip(self.executors, state["stats"]):
            ex.stats.rows_in, ex.stats.rows_out, ex.stats.seconds = rin, rout, secs
            ex.rejected = rej
        for ex, counters in zip(self.executors, state.get("counters", [])):
            ex.stats.counters = dict(counters)
        for ex, threshold in zip(self.executors, state.get("thresholds", [])):
            ex.stats.threshold = threshold
