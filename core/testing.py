"""Helpers for plugin authors' tests: the ``bitextforge_plugin`` pytest fixture registers a plugin
in-process and removes it afterwards.

It works whether or not the plugin under test is also pip-installed: a module that the registry
already loaded through its entry point is used as it is (and left registered afterwards).

Enable it in a ``conftest.py`` with ``pytest_plugins = ["bitextforge.testing"]``, then::

    def test_my_filter(bitextforge_plugin):
        registry = bitextforge_plugin(my_plugin_module)
        assert "my_filter.v1" in registry.names("filter")

A test that defines its components in the test file itself passes the classes instead of a
module: ``bitextforge_plugin(MyFilter, MyTrainer, name="mine")`` registers each under the hook of
its kind (:func:`plugin_module` builds that module, also for a registry of one's own).
"""

from __future__ import annotations

import importlib
import types

import pytest

from . import registry as _registry
from .components import Component
from .hookspecs import hookimpl

_HOOKS = _registry.HOOK_FOR_KIND


def plugin_module(*classes: type[Component]) -> types.SimpleNamespace:
    """A plugin object whose hook implementations register ``classes``, each under the hook of
    its kind (``Filter`` subclasses under ``register_filters`` and so on), in the order given."""
    by_hook: dict[str, list[type[Component]]] = {}
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, Component)) or cls.kind not in _HOOKS:
            raise TypeError(f"plugin_module takes component classes (a Filter, Trainer, ... "
                            f"subclass), not {cls!r}")
        by_hook.setdefault(_HOOKS[cls.kind], []).append(cls)
    mod = types.SimpleNamespace()
    for hook, members in by_hook.items():
        setattr(mod, hook, hookimpl(_registering(tuple(members))))
    return mod


def _registering(members: tuple):
    # a closure per hook: pluggy reads the argument names, so no default argument may carry them
    def impl(register):
        for cls in members:
            register(cls)
    return impl


@pytest.fixture
def bitextforge_plugin():
    """Return ``add(plugin, name=None) -> Registry``; every plugin added is unregistered after.
    ``plugin`` is a module (or its import name), or one or more component classes."""
    reg = _registry.get_registry()
    added: list[str] = []

    def add(plugin, *more, name: str | None = None):
        if isinstance(plugin, type):
            plugin = plugin_module(plugin, *more)
        elif more:
            raise TypeError("bitextforge_plugin: several arguments must all be component classes")
        if isinstance(plugin, str):
            plugin = importlib.import_module(plugin)
        reg.load_builtin(getattr(plugin, "__name__", ""))
        if reg.pm.is_registered(plugin):  # pip-installed: its entry point registered it already
            return reg
        added.append(reg.add_plugin(plugin, name=name))
        return reg

    yield add
    for name in added:
        reg.remove_plugin(name)
