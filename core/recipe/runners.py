"""The runners a recipe can choose (``runner: local`` or ``ray``, ``--runner``): one row each.

A :class:`RunnerKind` names the module that implements the runner (the
:class:`~bitextforge.pipeline.runners.Runner` protocol; imported only when a run chooses it, as
Ray is an optional extra), the extra that installs its library, and whether its workers may run
where the driver does not (on other nodes, with other devices). The recipe's ``runner`` type, the
CLI's ``--runner`` choices and :func:`bitextforge.pipeline.runners.get_runner` derive from
:data:`RUNNERS`: a new runner is its module and a row here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class RunnerKind:
    """One runner."""

    name: str                 # what a recipe's ``runner:`` says
    module: str               # the module implementing the Runner protocol
    description: str          # one line for the reference and ``--help``
    extra: str | None = None  # the extra of bitextforge that installs its library
    #: steps run in workers of their own, possibly on nodes without the driver's devices: the
    #: driver's copy of a step that asks for GPUs builds its component on the CPU
    remote_workers: bool = False


RUNNERS: dict[str, RunnerKind] = {r.name: r for r in (
    RunnerKind("local", "bitextforge.pipeline.runners.local", "streaming, in-process"),
    RunnerKind("ray", "bitextforge.pipeline.runners.ray", "Ray Data", extra="ray",
               remote_workers=True),
)}

#: the type of a recipe's ``runner``: one of the names of :data:`RUNNERS`
RunnerName = Literal[tuple(RUNNERS)]  # type: ignore[valid-type]
#: what the recipe reference says of ``runner``
RUNNER_HELP = "Execution backend: " + " or ".join(
    f"{r.name} ({r.description})" for r in RUNNERS.values()) + "."
