"""Execution backends. ``local`` streams batches through the steps in this process, ``ray`` runs
them on Ray Data. A runner is a module with ``run(source, executors, recipe) -> Iterator[Packet]``
that yields :class:`~bitextforge.pipeline.runners.stream.Packet` objects in input order and adds every
step's counters to the driver's executors (see :mod:`bitextforge.pipeline.runners.local`); a runner
that keeps workers from one ``run`` call to the next (ray, across a sharded run's shards) also has
``close()``, which the driver calls once at the end of the run."""

from __future__ import annotations

import importlib

from ...errors import RecipeError

RUNNERS = {"local": "bitextforge.pipeline.runners.local", "ray": "bitextforge.pipeline.runners.ray"}


def get_runner(name: str):
    """The runner module called ``name``; a clear error when its library is not installed."""
    if name not in RUNNERS:
        raise RecipeError(f"runner: unknown runner {name!r}; available: {', '.join(RUNNERS)}")
    try:
        return importlib.import_module(RUNNERS[name])
    except ImportError as exc:
        from ...components.extras import install_hint

        raise RecipeError(f"runner: {name} needs a library that is not installed ({exc.name}); "
                          f"{install_hint('bitextforge', name)}") from None
