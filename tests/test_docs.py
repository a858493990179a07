"""Docs are part of the contract: the recipe reference is generated from the code and must be
current; every hook is documented with its exact signature and exercised by a test."""

import re

from bitextforge.components import hookspecs
from bitextforge.cli.docgen import render_reference
from bitextforge.components.registry import Registry

from conftest import ROOT, benchmark

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
    from bitextforge.components.kinds import KINDS

    # register_components, one per component kind, and register_commands
    assert len(HOOKS) == len(KINDS) + 2
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
    assert set(by_hook) == set(HOOKS) - {"register_commands", "register_components"}
    for hook in HOOKS:
        base = by_hook.get(hook, "").capitalize()
        assert re.search(rf"def {hook}\(register\)", tests) or (
            base and re.search(rf"class \w+\((bitextforge\.)?{base}\):", tests)), \
            f"no test implements {hook}"


def test_every_shipped_recipe_validates():
    """Each recipe in recipes/ and benchmarks/studies/ is a valid recipe for the built-in
    components (validated, not run: some need ../shared/data or train models first)."""
    from bitextforge.recipe.load import load_recipe

    recipes = sorted((ROOT / "recipes").glob("*.yaml")) \
        + sorted((ROOT / "benchmarks" / "studies").glob("*/recipes/*.yaml"))
    assert len(recipes) >= 8
    reg = builtin_registry()
    for path in recipes:
        recipe = load_recipe(path, registry=reg)
        assert recipe.steps or recipe.evaluate or recipe.prepare, path


# ------------------------------------------------------------------ links, benchmarks and their scripts

LINK = re.compile(r"\]\(([^)\s]+)\)")
#: what a figure's command may name: a benchmark script or a shipped recipe
SCRIPT = re.compile(r"\b(benchmarks/[\w./-]+\.(?:py|sh|yaml)|recipes/[\w.-]+\.yaml)\b")


def _slugs(path):
    """The anchors GitHub gives the headings of a markdown file (duplicates get -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _user_docs():
    return sorted((ROOT / "docs").glob("*.md")) \
        + [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]


def test_relative_links_and_anchors_resolve():
    """Every relative link of the docs points at a file that exists, and an anchor at a heading
    of it (moving a section must move its links)."""
    bad = []
    for doc in _user_docs() + sorted((ROOT / "benchmarks" / "studies").rglob("*.md")):
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (doc.parent / file).resolve() if file else doc
            if not dest.exists():
                bad.append(f"{doc.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _slugs(dest):
                bad.append(f"{doc.name}: {target} (no such heading)")
    assert not bad, bad


def test_every_figure_names_a_script_that_exists():
    """Each row of a figure table on the benchmarks page (a table whose last column is the
    command) names the benchmarks/ script or recipe that reproduces it, or says "no script";
    every script named there exists. The page stays today's figures, not a lab notebook."""
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400, "docs/benchmarks.md: today's figures only; " \
        "older runs go to the studies' history (benchmarks/studies/)"
    rows = 0
    in_table = False
    for line in text.splitlines():
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not in_table:
            in_table = cells[-1] == "command"
            continue
        if set(cells[0]) <= {"-"}:
            continue
        rows += 1
        named = SCRIPT.findall(cells[-1])
        assert named or "no script" in cells[-1], f"names no script: {line}"
        for path in named:
            assert (ROOT / path).is_file(), f"{path} does not exist: {line}"
    assert rows >= 40


def test_benchmark_index_and_named_scripts_exist():
    """benchmarks/README.md lists every script of benchmarks/ (the index `make bench` reads),
    each listed script exists, and every benchmarks/ path the docs, recipes and tests name
    exists."""
    common = benchmark("_common")
    listed = {script for script, *_ in common.index().values()}
    scripts = {p.name for p in (ROOT / "benchmarks").iterdir()
               if p.suffix in (".py", ".sh") and not p.name.startswith("_")}
    helpers = {"handloop.py", "gpu_check.py"}  # run by core and gpu-check, not on their own
    assert listed == scripts - helpers
    sources = _user_docs() + sorted((ROOT / "recipes").glob("*.yaml")) \
        + sorted((ROOT / "benchmarks" / "studies").rglob("*.yaml")) \
        + sorted((ROOT / "tests").glob("*.py"))
    missing = [f"{p.name}: {m}" for p in sources
               for m in re.findall(r"\bbenchmarks/[\w./-]+\.(?:py|sh|yaml|md)\b",
                                   p.read_text(encoding="utf-8"))
               if not (ROOT / m).is_file()]
    assert not missing, missing


def test_reference_names_a_nested_option_by_its_class():
    from pydantic import BaseModel

    from bitextforge.cli.docgen import type_label

    class Inner(BaseModel):
        """Options inside an option."""

        x: int = 1

    assert type_label(Inner | None) == "Inner | None"
    assert type_label(list[str] | None) == "list[str] | None"


def test_ci_runs_both_tiers_and_make_test_only_the_quick_one():
    """`make test` (the README's test command) leaves out the tests marked ``long``, `make
    test-long` runs exactly those, and .ci/run runs both: no test is left out of CI."""
    ci = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in ci and "make test-long" in ci
    make = (ROOT / "Makefile").read_text()
    quick = re.search(r"^test: env\n\t(.*)$", make, re.M).group(1)
    long_ = re.search(r"^test-long: env\n\t(.*)$", make, re.M).group(1)
    assert '-m "not long"' in quick and re.search(r"-m long\b", long_)
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"^make test\b", readme, re.M) and "make test-long" in readme
