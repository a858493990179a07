"""The kinds of component a plugin can register: one row each, and nothing else names them.

A :class:`ComponentKind` ties the registry's kind (``"filter"``) to the base class a plugin
subclasses, the title the reference and listings give its section, and the kind's own
registration hook, which plugins written before ``register_components`` implement. Everything
else that lists kinds derives from :data:`COMPONENT_KINDS`: the registry's hooks, the base class
of each kind (:data:`KINDS`), the reference's sections, ``bitextforge plugins KIND``. The recipe
steps that run components of a kind are the step kinds of :mod:`bitextforge.recipe.kinds`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import (Cleaner, Component, Evaluator, Filter, Generator, Paraphraser, Splitter,
                   Trainer, Weighter)


@dataclass(frozen=True)
class ComponentKind:
    """One kind of component."""

    base: type[Component]       # what a plugin's class subclasses
    title: str                  # the heading of its section in listings and the reference
    hook: str                   # its own registration hook (``register_components`` takes all)

    @property
    def name(self) -> str:
        """The registry kind: what the base class says it is (``Filter.kind``)."""
        return self.base.kind


COMPONENT_KINDS: tuple[ComponentKind, ...] = (
    ComponentKind(Splitter, "Splitters", "register_splitters"),
    ComponentKind(Paraphraser, "Paraphrasers", "register_paraphrasers"),
    ComponentKind(Cleaner, "Cleaners", "register_cleaners"),
    ComponentKind(Generator, "Generators", "register_generators"),
    ComponentKind(Filter, "Filters", "register_filters"),
    ComponentKind(Weighter, "Weighters", "register_weighters"),
    ComponentKind(Evaluator, "Evaluators", "register_evaluators"),
    ComponentKind(Trainer, "Trainers", "register_trainers"),
)

#: the base class of each kind, by registry kind, in table order
KINDS: dict[str, type[Component]] = {k.name: k.base for k in COMPONENT_KINDS}
#: each kind's own registration hook
HOOK_FOR_KIND: dict[str, str] = {k.name: k.hook for k in COMPONENT_KINDS}
#: each kind's section title
KIND_TITLES: dict[str, str] = {k.name: k.title for k in COMPONENT_KINDS}


def kind_of_class(cls: type) -> ComponentKind | None:
    """The kind whose base class ``cls`` subclasses (None for anything else)."""
    if isinstance(cls, type):
        for kind in COMPONENT_KINDS:
            if issubclass(cls, kind.base):
                return kind
    return None
