"""Execution backends. ``local`` streams batches through the steps in this process, ``ray`` runs
them on Ray Data. A runner is a module that implements :class:`Runner`: it yields
:class:`~bitextforge.pipeline.runners.stream.Packet` objects in input order and adds every step's
counters to the driver's executors (see :mod:`bitextforge.pipeline.runners.local`). The runners a
recipe can choose are the rows of :data:`bitextforge.recipe.runners.RUNNERS`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Iterable, Iterator, Protocol

from ...errors import RecipeError
from ...recipe.runners import RUNNERS

if TYPE_CHECKING:
    from ...io.corpus import Batch
    from ..executors import Executor
    from .stream import Packet


class Runner(Protocol):
    """What the driver asks of a runner (a module implements it with two functions)."""

    def run(self, source: Iterable[Batch], executors: list[Executor],
            recipe=None) -> Iterator[Packet]:
        """Drive ``source``'s batches through ``executors``; yield packets in input order.
        Called once per shard of a sharded run."""

    def close(self) -> None:
        """Release what the runner kept across ``run`` calls (Ray's actors); called once at
        the end of the run."""


def get_runner(name: str) -> Runner:
    """The runner called ``name``; a clear error when its library is not installed."""
    kind = RUNNERS.get(name)
    if kind is None:
        raise RecipeError(f"runner: unknown runner {name!r}; available: {', '.join(RUNNERS)}")
    try:
        return importlib.import_module(kind.module)  # type: ignore[return-value]
    except ImportError as exc:
        from ...components.extras import install_hint

        raise RecipeError(f"runner: {name} needs a library that is not installed ({exc.name}); "
                          f"{install_hint('bitextforge', kind.extra or name)}") from None
