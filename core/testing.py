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

:func:`run_recipe_with` runs a recipe in-process with a plugin registered (a file or a dict),
as ``bitextforge run`` would, and returns what the run produced.

It also holds the readers of shared test data that the project's tests and its benchmarks
(benchmarks/) both use, so that a benchmark never imports a test module: the MQM-TED split of the
reference classifier and the gold ERG profile items of the ERG plugin.
"""

from __future__ import annotations

import importlib
import re
import types
from collections import defaultdict
from pathlib import Path
from typing import Mapping, Sequence

import pytest

from .components import registry as _registry
from .components.base import Component
from .components.hookspecs import hookimpl
from .components.kinds import HOOK_FOR_KIND as _HOOKS


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


def _register(reg, plugin, more: tuple, name: str | None, who: str) -> str | None:
    """Register ``plugin`` (a module, its import name, or component classes) in ``reg``; return
    the name to remove it by, or None when it was registered already (pip-installed)."""
    if isinstance(plugin, type):
        plugin = plugin_module(plugin, *more)
    elif more:
        raise TypeError(f"{who}: several arguments must all be component classes")
    if isinstance(plugin, str):
        plugin = importlib.import_module(plugin)
    reg.load_builtin(getattr(plugin, "__name__", ""))
    if reg.pm.is_registered(plugin):  # pip-installed: its entry point registered it already
        return None
    return reg.add_plugin(plugin, name=name)


@pytest.fixture
def bitextforge_plugin():
    """Return ``add(plugin, name=None) -> Registry``; every plugin added is unregistered after.
    ``plugin`` is a module (or its import name), or one or more component classes."""
    reg = _registry.get_registry()
    added: list[str] = []

    def add(plugin, *more, name: str | None = None):
        got = _register(reg, plugin, more, name, "bitextforge_plugin")
        if got is not None:
            added.append(got)
        return reg

    yield add
    for name in added:
        reg.remove_plugin(name)


def run_recipe_with(plugin, recipe, out_dir, *more, overrides: Sequence[str] = (),
                    name: str | None = None):
    """Run ``recipe`` in this process with ``plugin`` registered, then unregister it; return
    the run's :class:`~bitextforge.run.RunResult` (``rows_in``, ``rows_out``,
    ``rejected``, ``manifest``, ``reports``; the files are in ``out_dir``).

    ``plugin`` is what :func:`bitextforge_plugin` takes (a module, its import name, or component
    classes, more of them in ``more``); ``recipe`` is a recipe file's path or a recipe as a dict
    (relative paths in it are relative to the current directory); ``out_dir`` replaces the
    recipe's output directory (a recipe dict may leave ``output`` out); ``overrides`` are
    ``--set`` values (``["steps[0].keep.min=2"]``). A mistake in the recipe raises the
    :class:`~bitextforge.RecipeError` that ``bitextforge run`` prints::

        def test_my_filter_in_a_recipe(tmp_path):
            res = run_recipe_with(my_plugin, {"name": "t", "input": {"src": "a.de", "tgt":
                                  "a.en"}, "steps": [{"filter": "my_filter.v1"}]}, tmp_path / "o")
            assert res.rows_out == 2
    """
    import yaml

    from .run import run_recipe
    from .recipe.load import load_recipe, parse_recipe

    reg = _registry.get_registry()
    added = _register(reg, plugin, more, name, "run_recipe_with")
    try:
        if isinstance(recipe, Mapping):
            data = {"output": {"dir": str(out_dir)}, **recipe}
            loaded = parse_recipe(yaml.safe_dump(data, sort_keys=False), "<recipe dict>",
                                  list(overrides))
        else:
            loaded = load_recipe(recipe, list(overrides))
        return run_recipe(loaded, progress=False, output_dir=str(out_dir))
    finally:
        if added is not None:
            reg.remove_plugin(added)


# ------------------------------------------------------------------ shared test data readers

#: ERG gold items whose generation answers tests/fixtures/erg holds (i-id -> sentence)
ERG_GEN_ITEMS = {11: "It rained.", 421: "The dog couldn't bark.", 451: "The dog probably barked.",
                 681: "Browne squeezed in the cat.", 1011: "Somebody chased Abrams."}


def erg_gold_items(profile: str | Path, derivations: bool = False) -> dict:
    """``{i-id: (sentence, top gold MRS text[, derivation])}`` of a gold [incr tsdb()] profile
    directory (read with pydelphin's ``delphin.itsdb``)."""
    from delphin import itsdb

    ts = itsdb.TestSuite(str(profile))
    return {int(r["i-id"]): (r["i-input"], r["results"][0]["mrs"]) + (
                (r["results"][0]["derivation"],) if derivations else ())
            for r in ts.processed_items() if r["results"] and r["results"][0]["mrs"]}


def erg_pred_key(mrs_text: str) -> str:
    """The sorted predicates of a SimpleMRS text: how the ACE stand-in finds a generation
    answer."""
    from delphin.codecs import simplemrs

    return " ".join(sorted(ep.predicate for ep in simplemrs.decode(mrs_text).rels))


def mqm_split(path: str | Path) -> tuple[tuple[list[str], list[str]], tuple[list[str], list[str]]]:
    """Human references ("ref") and MT outputs of MQM-TED en-de (``mqm_ted_ende.tsv``), split by
    talk: every 4th talk is held out, so no source sentence is shared between training and test.
    Returns ``((train refs, train MT), (test refs, test MT))``."""
    from .io.corpus import read_lines

    tag = re.compile(r"</?v>")
    segs: dict = defaultdict(dict)
    docs = {}
    for line in read_lines(path)[1:]:
        f = line.split("\t")
        segs[int(f[3])].setdefault(f[0], tag.sub("", f[6]).strip())
        docs[int(f[3])] = f[1]
    test_docs = set(sorted(set(docs.values()))[::4])
    out: dict = {True: ([], []), False: ([], [])}
    for seg, systems in segs.items():
        refs, mts = out[docs[seg] in test_docs]
        for name, text in systems.items():
            (refs if name == "ref" else mts).append(text)
    return out[False], out[True]
