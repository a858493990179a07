"""Docs are part of the contract: the recipe reference is generated from the code and must be
current; every hook is documented with its exact signature and exercised by a test."""

import re

from bitextforge.components import hookspecs
from bitextforge.cli.docgen import render_reference
from bitextforge.components.registry import Registry

from conftest import ROOT

HOOKS = [n for n in dir(hookspecs) if n.startswith("register_")]


def builtin_registry():
    """Only the built-in plugins, so an installed third-party plugin cannot make the doc stale."""

    from importlib import metadata

    reg = Registry()
    for ep in metadata.entry_points(group="bitextforge"):
        if ep.dist is not None and ep.dist.metadata["Name"] == "bitextforge":
            reg.add_plugin(ep.load(), name=ep.name, package="bitextforge", version=ep.dist.version)
    return reg


def test_reference_is_current():
    current = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    assert current == render_reference(builtin_registry()), (
        "docs/reference.md is stale: run `bitextforge reference > docs/reference.md`")


def test_every_hook_documented_with_signature():
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    from bitextforge.components.base import KINDS

    assert len(HOOKS) == len(KINDS) + 1  # one per component kind, and register_commands
    for hook in HOOKS:
        assert f"### `{hook}(register)`" in text, hook
        assert f"def {hook}(register):" in text, hook


def test_every_hook_exercised_by_a_test():
    """Each hook is implemented by a test: by hand, or by a component class of its kind that a
    test defines and registers (``bitextforge_plugin(MyFilter)`` goes through plugin_module,
    which implements the hook of the class's kind)."""
    from bitextforge.testing import _HOOKS

    tests = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("test_*.py")
                      if p.name != "test_docs.py")
    by_hook = {hook: kind for kind, hook in _HOOKS.items()}
    assert set(by_hook) == set(HOOKS) - {"register_commands"}
    for hook in HOOKS:
        base = by_hook.get(hook, "").capitalize()
        assert re.search(rf"def {hook}\(register\)", tests) or (
            base and re.search(rf"class \w+\((bitextforge\.)?{base}\):", tests)), \
            f"no test implements {hook}"


def test_every_shipped_recipe_validates():
    """Each recipe in recipes/ is a valid recipe for the built-in components (validated, not run:
    some need ../shared/data or train models first)."""
    from bitextforge.recipe.load import load_recipe

    recipes = sorted((ROOT / "recipes").glob("*.yaml"))
    assert len(recipes) >= 8
    reg = builtin_registry()
    for path in recipes:
        recipe = load_recipe(path, registry=reg)
        assert recipe.steps or recipe.evaluate or recipe.prepare, path
