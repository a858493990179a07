"""Docs are part of the contract: the recipe reference is generated from the code and must be
current; every hook is documented with its exact signature and exercised by a test."""

import re

from bitextforge import hookspecs
from bitextforge.docgen import render_reference
from bitextforge.registry import Registry

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
    from bitextforge.components import KINDS

    assert len(HOOKS) == len(KINDS) + 1  # one per component kind, and register_commands
    for hook in HOOKS:
        assert f"### `{hook}(register)`" in text, hook
        assert f"def {hook}(register):" in text, hook


def test_every_hook_exercised_by_a_test():
    tests = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("test_*.py")
                      if p.name != "test_docs.py")
    for hook in HOOKS:
        assert re.search(rf"def {hook}\(register\)", tests), f"no test implements {hook}"


def test_every_shipped_recipe_validates():
    """Each recipe in recipes/ is a valid recipe for the built-in components (validated, not run:
    some need ../shared/data or train models first)."""
    from bitextforge.recipe import load_recipe

    recipes = sorted((ROOT / "recipes").glob("*.yaml"))
    assert len(recipes) >= 8
    reg = builtin_registry()
    for path in recipes:
        recipe = load_recipe(path, registry=reg)
        assert recipe.steps or recipe.evaluate or recipe.prepare, path
