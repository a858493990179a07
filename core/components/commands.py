"""Commands that plugins add to the ``bitextforge`` CLI, as the registry collects them.

A plugin's ``register_commands`` hook calls ``register(name, help, setup)`` once per command:
``setup(parser)`` adds the arguments and returns ``handler(args) -> int``. The registry reads the
declarations when the plugin is added (:func:`collect_commands`); the setups run only when the CLI
needs a command's arguments (:mod:`bitextforge.cli.commands`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from ..errors import RegistryError

Setup = Callable[[argparse.ArgumentParser], Callable[[argparse.Namespace], int]]


@dataclass(frozen=True)
class Command:
    """One contributed subcommand."""

    name: str
    help: str
    setup: Setup
    plugin: str


def collect_commands(pm, plugin: str) -> list[Command]:
    """The commands plugin ``plugin`` declares through its ``register_commands`` hook, read once
    when it is registered; their setups run only when the CLI needs a command's arguments. A
    ``register`` call with a name that cannot be a command or a setup that cannot be called is
    refused (a :class:`RegistryError` naming it)."""
    found: list[Command] = []

    def register(name: str, help: str, setup: Setup) -> None:
        if not isinstance(name, str) or not name or name.startswith("-"):
            raise RegistryError(f"command name {name!r} is not a word")
        if not callable(setup):
            raise RegistryError(f"command {name!r}: setup {setup!r} is not callable")
        found.append(Command(name, help, setup, plugin))

    for impl in pm.hook.register_commands.get_hookimpls():
        if impl.plugin_name == plugin:
            impl.function(register=register)
    return found
