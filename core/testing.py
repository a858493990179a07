"""Helpers for plugin authors' tests: the ``bitextforge_plugin`` pytest fixture registers a plugin
in-process and removes it afterwards.

It works whether or not the plugin under test is also pip-installed: a module that the registry
already loaded through its entry point is used as it is (and left registered afterwards).

Enable it in a ``conftest.py`` with ``pytest_plugins = ["bitextforge.testing"]``, then::

    def test_my_filter(bitextforge_plugin):
        registry = bitextforge_plugin(my_plugin_module)
        assert "my_filter.v1" in registry.names("filter")
"""

from __future__ import annotations

import importlib

import pytest

from . import registry as _registry


@pytest.fixture
def bitextforge_plugin():
    """Return ``add(plugin, name=None) -> Registry``; every plugin added is unregistered after."""
    reg = _registry.get_registry()
    added: list[str] = []

    def add(plugin, name: str | None = None):
        if isinstance(plugin, str):
            plugin = importlib.import_module(plugin)
        if reg.pm.is_registered(plugin):  # pip-installed: its entry point registered it already
            return reg
        added.append(reg.add_plugin(plugin, name=name))
        return reg

    yield add
    for name in added:
        reg.remove_plugin(name)
