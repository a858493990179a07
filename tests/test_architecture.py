"""The house's contracts: the plugin surface (one hook for every kind, abstract base classes, the
public API) and the import structure (core's floors run one way, no import circles, plugins
import only the public API). The import checks read the source with ``ast`` and run in well
under a second."""

from __future__ import annotations

import ast
import types
from pathlib import Path

import pytest

import bitextforge
from bitextforge import Filter, Paraphraser, RegistryError, Trainer
from bitextforge.components.registry import Registry


class _Agreement(Filter):
    """Scores every pair 1."""

    name = "arch_agreement.v1"

    def score(self, batch):
        return [1.0] * len(batch["src"])


class _Echo(Paraphraser):
    """Offers the sentence itself."""

    name = "arch_echo.v1"

    def paraphrase(self, sentences, side=None):
        return [[(s, 0.0)] for s in sentences]


class _Incomplete(Filter):
    """Forgets to score."""

    name = "arch_incomplete.v1"


def _plugin(**hooks):
    return types.SimpleNamespace(**{name: bitextforge.hookimpl(fn) for name, fn in hooks.items()})


def test_register_components_files_each_class_under_its_own_kind():
    def register_components(register):
        register(_Agreement)
        register(_Echo)

    reg = Registry()
    reg.add_plugin(_plugin(register_components=register_components), name="mixed")
    assert reg.names("filter") == ["arch_agreement.v1"]
    assert reg.names("paraphraser") == ["arch_echo.v1"]
    assert reg.registration("filter", "arch_agreement.v1").plugin == "mixed"


def test_the_kinds_own_hooks_keep_working_beside_it():
    def register_filters(register):
        register(_Agreement)

    def register_components(register):
        register(_Echo)

    reg = Registry()
    reg.add_plugin(_plugin(register_filters=register_filters), name="old")
    reg.add_plugin(_plugin(register_components=register_components), name="new")
    assert reg.names("filter") == ["arch_agreement.v1"]
    assert reg.names("paraphraser") == ["arch_echo.v1"]


def test_a_kinds_own_hook_still_refuses_another_kind():
    def register_filters(register):
        register(_Echo)

    reg = Registry()
    reg.add_plugin(_plugin(register_filters=register_filters), name="wrong")
    with pytest.raises(RegistryError, match="as a filter, but it does not subclass "
                                            "bitextforge.Filter"):
        reg.names("filter")


def test_register_components_refuses_what_is_no_component():
    def register_components(register):
        register(dict)

    reg = Registry()
    reg.add_plugin(_plugin(register_components=register_components), name="odd")
    with pytest.raises(RegistryError) as err:
        reg.names("filter")
    assert str(err.value).startswith("plugin 'odd' registered <class 'dict'>, which subclasses "
                                     "none of bitextforge.Splitter")
    assert "\n" not in str(err.value)


def test_an_incomplete_component_is_refused_at_registration_in_one_line():
    def register_components(register):
        register(_Incomplete)

    reg = Registry()
    reg.add_plugin(_plugin(register_components=register_components), name="half")
    with pytest.raises(RegistryError) as err:
        reg.names("filter")
    assert str(err.value) == ("plugin 'half': _Incomplete does not implement score(), which "
                              "bitextforge.Filter declares abstract")


def test_an_incomplete_component_cannot_be_built_either():
    with pytest.raises(TypeError, match="abstract"):
        _Incomplete()


def test_every_kinds_work_is_abstract_on_its_base():
    from bitextforge.components.kinds import COMPONENT_KINDS

    work = {"splitter": {"split"}, "paraphraser": {"paraphrase"}, "cleaner": {"clean"},
            "generator": {"generate"}, "filter": {"score"}, "weighter": {"weight"},
            "evaluator": {"evaluate"}, "trainer": {"train"}}
    assert {k.name: set(k.base.__abstractmethods__) for k in COMPONENT_KINDS} == work
    assert Trainer.__abstractmethods__ == frozenset({"train"})


def test_a_misspelled_hook_suggests_register_components():
    def register_component(register):
        register(_Agreement)

    with pytest.raises(RegistryError, match="register_component is not a bitextforge hook; "
                                            "did you mean register_components\\?"):
        Registry().add_plugin(_plugin(register_component=register_component), name="typo")


# ------------------------------------------------------------------------------ import contract
# Core's floors from the top; a module may import its own floor and those below, never above.
# The package's faces stand on top: the public API plugins import, and the testing fixture.
ROOT = Path(__file__).resolve().parents[1]
FLOORS = {
    "api": 8, "testing": 8,
    "cli": 7,
    # the whole run: the pipeline's stages, then the run's reports and its page (report/)
    "run": 6,
    "serve": 5, "report": 5,
    "pipeline": 4,
    "recipe": 3, "io": 3, "cache": 3,
    "components": 2, "": 2,  # "": the package's __init__ (the base classes, errors, hookimpl)
    "errors": 1, "log": 1, "hardware": 1, "text_facts": 1, "processes": 1,
}
#: what core may import of the built-in plugins: the index of what each registers, which lets the
#: registry import a built-in plugin only when a recipe names one of its components
CORE_MAY_IMPORT = {"bitextforge.plugins"}
#: what a plugin may import of bitextforge besides its own package
PUBLIC = {"bitextforge", "bitextforge.api"}


def _modules(folder: str, package: str) -> dict[str, Path]:
    """Every module under ``folder`` by its import name."""
    out = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([package, *parts])] = path
    return out


CORE = _modules("core", "bitextforge")
PLUGINS = _modules("plugins", "bitextforge.plugins")
EVERY = {**CORE, **PLUGINS}


def _imports(name: str, path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every bitextforge module ``name`` imports, at its top or inside a
    function; ``from pkg import mod`` counts as importing ``pkg.mod`` when that is a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in EVERY]
            found += [(node.lineno, m) for m in subs] or [(node.lineno, base)]
    return [(line, m) for line, m in found if m == "bitextforge" or m.startswith("bitextforge.")]


def _floor(module: str) -> int:
    """The floor of the longest entry of :data:`FLOORS` that ``module`` lies in."""
    parts = module.removeprefix("bitextforge").lstrip(".").split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in FLOORS:
            return FLOORS[".".join(parts[:n])]
    return FLOORS[""]


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {name: {m for _, m in _imports(name, path) if m in modules and m != name}
            for name, path in modules.items()}


def test_every_core_module_stands_on_a_floor():
    """A new top-level module or folder of core is given its floor here."""
    assert [m for m in CORE if m.removeprefix("bitextforge").lstrip(".").split(".")[0]
            not in FLOORS] == []


def test_core_imports_no_higher_floor():
    climbs = []
    for name, path in CORE.items():
        for line, target in _imports(name, path):
            if target.startswith("bitextforge.plugins"):
                if target not in CORE_MAY_IMPORT:
                    climbs.append(f"{path.relative_to(ROOT)}:{line}: {target} (a plugin)")
            elif _floor(target) > _floor(name):
                climbs.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert climbs == []


def test_core_has_no_import_circle():
    assert _circles(_graph(CORE)) == []


def test_plugins_have_no_import_circle():
    assert _circles(_graph(PLUGINS)) == []


def test_plugins_import_only_the_public_api():
    reaching = []
    for name, path in PLUGINS.items():
        for line, target in _imports(name, path):
            if target not in PUBLIC and not target.startswith("bitextforge.plugins"):
                reaching.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert reaching == []


def test_core_modules_take_no_private_name_of_another():
    """A name another module needs has a public home; ``_name`` stays in its module."""
    taken = []
    for name, path in CORE.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                taken += [f"{path.relative_to(ROOT)}:{node.lineno}: {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert taken == []


def test_the_contract_sees_a_climb_and_a_circle():
    """The checks above cannot pass by reading nothing."""
    plan = "bitextforge.pipeline.plan"
    assert "bitextforge.components.registry" in {m for _, m in _imports(plan, CORE[plan])}
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _floor("bitextforge.cli.main") > _floor("bitextforge.run") > _floor(
        "bitextforge.report.run_reports") > _floor("bitextforge.pipeline.driver")


# ---------------------------------------------------------------------------------- step kinds
def test_every_step_kind_is_one_row_that_one_executor_runs():
    """The run's table of step kinds is the recipe's, row for row and in its order, each with the
    executor that states it runs that kind."""
    from bitextforge.pipeline import kinds as run_kinds
    from bitextforge.recipe import kinds as recipe_kinds

    assert list(run_kinds.STEP_KINDS) == list(recipe_kinds.STEP_KINDS)
    for key, kind in run_kinds.STEP_KINDS.items():
        assert kind.executor.kind == key
        row = recipe_kinds.STEP_KINDS[key]
        assert (kind.model, kind.component, kind.before) == (row.model, row.component, row.before)
    assert len({ex for ex, _ in run_kinds.EXECUTORS}) == len(run_kinds.EXECUTORS)


def test_a_step_kind_that_no_executor_runs_is_refused():
    import dataclasses

    from bitextforge.pipeline.kinds import EXECUTORS, running
    from bitextforge.recipe.kinds import STEP_KINDS

    new_row = dict(STEP_KINDS, align=dataclasses.replace(STEP_KINDS["filter"], key="align"))
    with pytest.raises(LookupError, match="^step kind 'align' has 0 executors, not one$"):
        running(new_row, EXECUTORS)
    without_filter = {k: v for k, v in STEP_KINDS.items() if k != "filter"}
    with pytest.raises(LookupError, match="^FilterExec runs 'filter', which is no step kind$"):
        running(without_filter, EXECUTORS)


# -------------------------------------------------------------------------------- benchmarks
#: what the benchmarks take of core that ``bitextforge.api`` does not offer, and why; any other
#: name they need comes from the public API, as a plugin's does
BENCHMARK_INTERNALS = {
    "bitextforge.pipeline.prepare": "options_changed: retrain a study's model only when its "
                                    "options changed",
    "bitextforge.pipeline.decide": "StreamingSelection: the scale study measures the selection",
    "bitextforge.serve.data": "load_run: the serve load study re-decides the page's table",
    "bitextforge.testing": "the ERG and MQM test sets kept beside the plugin fixture",
    "bitextforge.cli.main": "main: a study runs the command line in-process, with a clock patched",
    "bitextforge.pipeline.runners": "local: the scale study runs one step at a time to time it in "
                                    "CPU seconds",
}


def test_benchmarks_take_core_through_the_public_api():
    reaching = []
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            reaching += [f"{path.relative_to(ROOT)}:{node.lineno}: {m}" for m in names
                         if m.startswith("bitextforge.") and m not in PUBLIC
                         and not m.startswith("bitextforge.plugins")
                         and m not in BENCHMARK_INTERNALS]
    assert reaching == []


# ------------------------------------------------------------------------------------- runners
def test_the_runner_table_is_what_recipes_and_the_cli_accept():
    import argparse
    from typing import get_args

    from bitextforge.cli.main import _builtin_parser
    from bitextforge.recipe.models import Recipe
    from bitextforge.recipe.runners import RUNNERS

    assert get_args(Recipe.model_fields["runner"].annotation) == tuple(RUNNERS)
    _, sub = _builtin_parser()
    run = sub.choices["run"]
    [flag] = [a for a in run._actions if isinstance(a, argparse.Action) and "--runner" in
              a.option_strings]
    assert list(flag.choices) == list(RUNNERS)


def test_a_runner_is_its_module_and_a_row(monkeypatch):
    """What adding a runner takes: a module implementing the Runner protocol, and its row."""
    import sys

    from bitextforge.pipeline.runners import get_runner
    from bitextforge.recipe import runners

    module = types.ModuleType("arch_runner")
    module.run = lambda source, executors, recipe=None: iter(())
    module.close = lambda: None
    monkeypatch.setitem(sys.modules, "arch_runner", module)
    row = runners.RunnerKind("arch", "arch_runner", "a test")
    monkeypatch.setitem(runners.RUNNERS, "arch", row)
    assert get_runner("arch") is module
    for kind in runners.RUNNERS.values():
        if kind.name != "ray":  # its library is an extra; its module is checked by its own tests
            runner = get_runner(kind.name)
            assert callable(runner.run) and callable(runner.close)


def test_an_unknown_runner_lists_the_table():
    from bitextforge import RecipeError
    from bitextforge.pipeline.runners import get_runner

    with pytest.raises(RecipeError, match="unknown runner 'dask'; available: local, ray"):
        get_runner("dask")


# ---------------------------------------------------------------------------------- public API
def test_docs_list_exactly_the_public_api():
    import re

    import bitextforge.api as api

    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("## What a plugin may import: `bitextforge.api`")[1].split("\n## ")[0]
    rows = [line.split("|")[2] for line in section.splitlines() if line.startswith("| ")][1:]
    listed = set(re.findall(r"`(\w+)`", "\n".join(rows)))
    assert listed == set(dir(api))


def test_every_public_name_loads_and_says_what_it_is():
    import bitextforge.api as api

    for name in dir(api):
        value = getattr(api, name)
        if getattr(value, "__origin__", None) is None:  # a type alias (Precision) has no docstring
            assert getattr(value, "__doc__", None), name
    with pytest.raises(AttributeError, match="has no attribute 'Plan'"):
        api.Plan  # noqa: B018 - an internal name is not public


def test_an_installed_incomplete_component_is_one_line_from_the_cli(tmp_path):
    import subprocess
    import sys

    from conftest import fake_distribution

    env = fake_distribution(tmp_path, "half_plugin", (
        "import bitextforge\n\n"
        "class NumberAgreementFilter(bitextforge.Filter):\n"
        "    '''Forgets to score.'''\n"
        "    name = 'half_agreement.v1'\n\n"
        "@bitextforge.hookimpl\n"
        "def register_components(register):\n"
        "    register(NumberAgreementFilter)\n"))
    res = subprocess.run([sys.executable, "-m", "bitextforge.cli", "plugins"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        "bitextforge: error: plugin 'half_plugin': NumberAgreementFilter does not implement "
        "score(), which bitextforge.Filter declares abstract"]


# ------------------------------------------------------------ the eight hooks of one kind each
class _Split(bitextforge.Splitter):
    """Keeps every row whole."""

    name = "arch_split.v1"

    def split(self, batch):
        return [[] for _ in batch["src"]]


class _Clean(bitextforge.Cleaner):
    """Changes nothing."""

    name = "arch_clean.v1"

    def clean(self, texts, side):
        return list(texts)


class _Generate(bitextforge.Generator):
    """Copies the sentence."""

    name = "arch_generate.v1"

    def generate(self, sentences):
        return [[(s, 0.0)] for s in sentences]


class _Weigh(bitextforge.Weighter):
    """Weight 1 for each row."""

    name = "arch_weigh.v1"

    def weight(self, group):
        return [(i, 1.0) for i in range(len(group))]


class _Evaluate(bitextforge.Evaluator):
    """Reports nothing."""

    name = "arch_evaluate.v1"

    def evaluate(self, corpus):
        return bitextforge.Report()


class _Train(bitextforge.Trainer):
    """Writes nothing."""

    name = "arch_train.v1"

    def train(self):
        return {}


def test_the_hooks_of_one_kind_each_keep_working():
    """Plugins written before register_components implement these; each still registers."""
    def register_splitters(register):
        register(_Split)

    def register_paraphrasers(register):
        register(_Echo)

    def register_cleaners(register):
        register(_Clean)

    def register_generators(register):
        register(_Generate)

    def register_filters(register):
        register(_Agreement)

    def register_weighters(register):
        register(_Weigh)

    def register_evaluators(register):
        register(_Evaluate)

    def register_trainers(register):
        register(_Train)

    hooks = {fn.__name__: fn for fn in (
        register_splitters, register_paraphrasers, register_cleaners, register_generators,
        register_filters, register_weighters, register_evaluators, register_trainers)}
    reg = Registry()
    reg.add_plugin(_plugin(**hooks), name="old_style")
    found = {kind: reg.names(kind) for kind in ("splitter", "paraphraser", "cleaner", "generator",
                                                "filter", "weighter", "evaluator", "trainer")}
    assert found == {"splitter": ["arch_split.v1"], "paraphraser": ["arch_echo.v1"],
                     "cleaner": ["arch_clean.v1"], "generator": ["arch_generate.v1"],
                     "filter": ["arch_agreement.v1"], "weighter": ["arch_weigh.v1"],
                     "evaluator": ["arch_evaluate.v1"], "trainer": ["arch_train.v1"]}


def test_a_star_import_of_the_api_needs_no_pytest():
    import subprocess
    import sys

    code = ("import sys; sys.modules['pytest'] = None\n"
            "from bitextforge.api import *\n"
            "print(within_bounds.__name__, 'bitextforge_plugin' in dir())")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["within_bounds", "False"]
