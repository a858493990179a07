"""The plugin hooks of bitextforge: one for components, one for CLI commands.

A plugin module implements them with ``@bitextforge.hookimpl`` and calls ``register(...)`` once
per thing it adds (the callback style of simonw/llm and datasette). ``register_components`` takes
components of every kind: each is registered as the kind its base class states (``cls.kind``).
The hooks of one kind each (``register_filters`` ...) are those plugins implemented before it, and
keep working; the table of kinds (:mod:`.kinds`) names them.
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("bitextforge")
hookimpl = pluggy.HookimplMarker("bitextforge")


@hookspec
def register_components(register):
    """Register component classes of any kind (Filter, Paraphraser, Trainer, ... subclasses):
    call ``register(cls)`` for each."""


@hookspec
def register_splitters(register):
    """Register Splitter classes (a recipe's ``split:`` steps): call ``register(cls)`` for each."""


@hookspec
def register_paraphrasers(register):
    """Register Paraphraser classes: call ``register(cls)`` for each."""


@hookspec
def register_cleaners(register):
    """Register Cleaner classes (a recipe's ``clean:`` steps): call ``register(cls)`` for each."""


@hookspec
def register_generators(register):
    """Register Generator classes (a recipe's ``generate:`` steps, e.g. back-translation of
    monolingual text): call ``register(cls)`` for each."""


@hookspec
def register_filters(register):
    """Register Filter classes: call ``register(cls)`` for each."""


@hookspec
def register_weighters(register):
    """Register Weighter classes: call ``register(cls)`` for each."""


@hookspec
def register_evaluators(register):
    """Register Evaluator classes: call ``register(cls)`` for each."""


@hookspec
def register_trainers(register):
    """Register Trainer classes (model builders for a recipe's ``prepare:``): call
    ``register(cls)`` for each."""


@hookspec
def register_commands(register):
    """Register CLI subcommands: call ``register(name, help, setup)`` for each, where
    ``setup(parser)`` adds arguments and returns ``handler(args) -> int``. The hook runs when the
    plugin loads; ``setup`` only when its command is called (or its help shown). A name that a
    built-in command has is refused, and the built-in kept."""
