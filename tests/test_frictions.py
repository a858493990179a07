"""What a new user tripped over, each fixed and held here: ``doctor`` lists every extra of the
package, every built-in component declares the extra whose libraries it imports, an evaluator's
time is in the manifest and on the terminal, and the set-up script says what it installs and how
long that takes, leaving no temporary file behind."""

from __future__ import annotations

import ast
import functools
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
import time
import types
from importlib import metadata

import pytest

import bitextforge
from conftest import ROOT, SMALL_DE, SMALL_EN, run_cli

_REQ_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(dist: str, extra: str | None) -> set[str]:
    """The distributions ``dist`` requires (with ``extra``: only those of that extra; with None:
    only the unconditional ones), normalised."""
    out = set()
    for req in metadata.distribution(dist).requires or []:
        spec, _, marker = req.partition(";")
        found = _EXTRA.search(marker)
        if (found.group(1) if found else None) != extra:
            continue
        if "extra" not in marker and marker.strip() and extra is None:
            continue  # a platform marker: not what every install has
        out.add(_normal(_REQ_NAME.match(spec).group(1)))
    return out


@functools.lru_cache(maxsize=None)
def _extra_closure(extra: str) -> frozenset:
    """Everything ``extra`` of bitextforge brings, as installed here."""
    return frozenset(_closure(_requirements("bitextforge", extra)))


def _closure(names: set[str]) -> set[str]:
    """``names`` and everything they require, as installed here."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            todo += _requirements(name, None)
        except metadata.PackageNotFoundError:
            pass
    return seen


def _imported_modules(obj, seen: set, out: set) -> None:
    """The top-level names of the modules that ``obj``'s source imports (in the class or function
    itself, in the module-level code of its module), followed through the plugin functions and
    classes it names, its plugin base classes included."""
    if obj in seen:
        return
    seen.add(obj)
    module = inspect.getmodule(obj)
    if module is None or not module.__name__.startswith("bitextforge.plugins"):
        return
    out |= _module_level_imports(module.__name__)  # what importing the module runs
    imports, named = _own_code(obj)
    out |= imports
    for target in named:
        _imported_modules(target, seen, out)


@functools.lru_cache(maxsize=None)
def _module_tree(name: str) -> tuple[frozenset, dict]:
    """A plugin module parsed once: the modules it imports at its top level, and its classes and
    functions by qualified name (``Outer.Inner``)."""
    tree = ast.parse(inspect.getsource(sys.modules[name]))
    top: set = set()
    for node in tree.body:
        _imports_of(node, top)
    defs: dict = {}

    def index(body, prefix):
        for node in body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                defs[prefix + node.name] = node
                index(node.body, f"{prefix}{node.name}.")

    index(tree.body, "")
    return frozenset(top), defs


def _module_level_imports(name: str) -> frozenset:
    """The modules a plugin module imports at its top level."""
    return _module_tree(name)[0]


@functools.lru_cache(maxsize=None)
def _own_code(obj) -> tuple[frozenset, tuple]:
    """What ``obj``'s own source imports, and the plugin classes and functions it names (with
    its base classes)."""
    module = inspect.getmodule(obj)
    imports: set = set()
    named = list(obj.__mro__[1:]) if isinstance(obj, type) else []
    node = _module_tree(module.__name__)[1].get(getattr(obj, "__qualname__", ""))
    if node is None:  # made at run time (plugin_module's hooks): no source of its own
        return frozenset(), tuple(named)
    for node in ast.walk(node):
        _imports_of(node, imports)
        if isinstance(node, ast.Name):
            target = vars(module).get(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            holder = vars(module).get(node.value.id)
            target = getattr(holder, node.attr, None) if isinstance(holder, types.ModuleType) \
                else None
        else:
            continue
        if isinstance(target, (type, types.FunctionType)):
            named.append(target)
    return frozenset(imports), tuple(named)


def _imports_of(node, out: set) -> None:
    """Add the top-level module names an import statement ``node`` names (relative imports
    stay inside the plugin package, whose code is followed, not counted)."""
    if isinstance(node, ast.Import):
        out.update(alias.name.split(".")[0] for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
        out.add(node.module.split(".")[0])


def _chosen_extras(cls) -> set[str]:
    """The extras a component's options may choose: those named in its own ``extras``
    classmethod (language_id.v1's lingua backend), which the listings cannot show."""
    from bitextforge.components.base import Component

    if cls.extras.__func__ is Component.extras.__func__:
        return set()
    declared = set(metadata.metadata("bitextforge").get_all("Provides-Extra"))
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.extras)))
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in declared}


def test_every_builtin_component_declares_the_extra_it_imports():
    """A component whose code imports a library that the core install lacks names the extra that
    holds it; otherwise ``plugins``, ``describe``, ``doctor`` and ``validate`` call it usable in a
    core install and it fails at its first batch."""
    from bitextforge.components.registry import get_registry

    provides = metadata.packages_distributions()
    core = _closure(_requirements("bitextforge", None))
    wrong = []
    for kind, r in get_registry().registrations():
        if r.package != "bitextforge":
            continue
        mods: set[str] = set()
        _imported_modules(r.cls, set(), mods)
        allowed = set(core)
        for extra in set(r.cls.extras(None)) | _chosen_extras(r.cls):
            allowed |= _extra_closure(extra)
        needs = {_normal(d) for m in mods for d in provides.get(m, ())
                 if m not in sys.stdlib_module_names and m != "bitextforge"}
        beyond = needs - allowed
        if beyond:
            wrong.append(f"{r.cls.name} (declares {r.cls.extras(None) or 'no extra'}) imports "
                         f"{sorted(beyond)}")
    assert not wrong, "\n".join(wrong)


def test_doctor_lists_every_extra_of_the_package():
    declared = metadata.metadata("bitextforge").get_all("Provides-Extra")
    assert {"serve", "langid", "ray"} <= set(declared)
    res = run_cli("doctor")
    listed = {m.group(1) for m in re.finditer(r"^\[(?:ok  |MISSING)\] bitextforge\[([^\]]+)\]",
                                              res.stdout, re.M)}
    assert listed == set(declared), set(declared) ^ listed
    assert re.search(r"^\[(ok  |MISSING)\] bitextforge\[serve\]: .*for bitextforge serve$",
                     res.stdout, re.M)
    assert re.search(r"^\[(ok  |MISSING)\] bitextforge\[ray\]: .*for --runner ray$",
                     res.stdout, re.M)


class SlowEvaluator(bitextforge.Evaluator):
    """Test evaluator that takes a measurable while: the rows it read."""

    name = "slow_eval_test.v1"

    def evaluate(self, corpus):
        time.sleep(0.3)
        return bitextforge.Report(numbers={"rows": len(corpus.column("src"))},
                                  summary="read every row")


def test_evaluator_seconds_are_in_the_manifest_and_on_the_terminal(bitextforge_plugin,
                                                                   pair_files, tmp_path):
    bitextforge_plugin(SlowEvaluator, name="slow")
    s, t = pair_files(SMALL_DE, SMALL_EN)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: t\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: '{tmp_path / 'o'}'\n"
                      f"progress: false\nsteps:\n  - filter: dedupe.v1\n"
                      f"evaluate: [slow_eval_test.v1]\n")
    res = run_cli("run", recipe)
    assert res.returncode == 0, res.stderr
    m = json.loads((tmp_path / "o" / "manifest.json").read_text())
    took = m["evaluations"]["slow_eval_test.v1"]["seconds"]
    assert 0.3 <= took < m["seconds"]
    assert f"slow_eval_test.v1 ({took:.1f} s): read every row" in res.stdout.splitlines()


class ShortScores(bitextforge.Filter):
    """Test filter with a bug: one score for a whole batch."""

    name = "short_scores_test.v1"
    default_keep = {"min": 0.0}

    def score(self, batch):
        return [1.0]


def test_a_filter_with_the_wrong_number_of_scores_is_named_with_its_step(bitextforge_plugin,
                                                                          pair_files, tmp_path):
    bitextforge_plugin(ShortScores, name="short")
    s, t = pair_files(SMALL_DE, SMALL_EN)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: t\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: '{tmp_path / 'o'}'\n"
                      f"progress: false\nsteps:\n  - filter: dedupe.v1\n"
                      f"  - filter: short_scores_test.v1\n")
    res = run_cli("run", recipe)
    assert res.returncode == 2
    assert res.stderr.splitlines()[-1].startswith(
        "bitextforge: error: steps[1]:short_scores_test.v1: score() returned 1 scores for 7 rows")


def _fake_env(tmp_path):
    """A virtual environment whose python only records the commands it is given, with KenLM's
    binaries in place, and a PATH that has chromium: what ``setup-env.sh`` runs, without pip."""
    venv, fake_bin, tmp = tmp_path / "venv", tmp_path / "fakebin", tmp_path / "tmp"
    for d in (venv / "bin", fake_bin, tmp):
        d.mkdir(parents=True)
    for path, body in ((venv / "bin" / "python", f'echo "$@" >> {tmp_path / "calls"}'),
                       (venv / "bin" / "lmplz", ""), (venv / "bin" / "build_binary", ""),
                       (fake_bin / "chromium", "")):
        path.write_text(f"#!/bin/sh\n{body}\nexit 0\n")
        path.chmod(0o755)
    env = dict(os.environ, TMPDIR=str(tmp), PATH=f"{fake_bin}:{os.environ['PATH']}")
    return venv, tmp, env


def test_setup_says_each_stage_and_its_time_and_leaves_no_temporary_file(tmp_path):
    venv, tmp, env = _fake_env(tmp_path)
    for attempt in ("first", "rerun, everything in place"):
        res = subprocess.run(["bash", str(ROOT / "scripts" / "setup-env.sh"), str(venv)],
                             capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
        assert res.returncode == 0, res.stdout + res.stderr
        assert list(tmp.iterdir()) == [], attempt
        assert re.search(r"^\[setup\] environment ready: .* \(\d+m\d+s\)$", res.stdout, re.M)
        if attempt == "first":
            stages = [ln for ln in res.stdout.splitlines() if re.match(r"\[setup\] \d/3 ", ln)]
            assert len(stages) == 3, res.stdout
            assert all(re.search(r"\(.*(minutes?|seconds)\)$", ln) for ln in stages), stages
            assert res.stdout.count("[setup]   done in ") == 3
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 3 and all(" -q install " in c for c in calls)  # quiet without a TTY


def test_an_input_column_named_id_is_refused_and_a_renamed_one_reported(tmp_path):
    """A file's ``id`` column silently replaced the row ids (and text ids broke report.html):
    it is refused before anything is written, naming the file and how to rename it; renamed,
    its text values are an ordinary column and the report is written."""
    data = tmp_path / "in.tsv"
    data.write_text("id\tsrc\ttgt\n" + "".join(f"doc-{i}\t{s}\t{t}\n" for i, (s, t)
                                               in enumerate(zip(SMALL_DE, SMALL_EN))),
                    encoding="utf-8")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: t\ninput: {{path: '{data}', format: tsv, header: true}}\n"
                      f"output: '{tmp_path / 'o'}'\nprogress: false\n"
                      f"steps:\n  - filter: dedupe.v1\n")
    res = run_cli("run", recipe)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        f"bitextforge: error: {data}: header column 'id' is a column bitextforge makes itself "
        f"(id, variant, origin and weight are the run's own); name it otherwise in "
        f"input.columns (e.g. source_id)"]
    assert not (tmp_path / "o").exists()
    res = run_cli("run", recipe, "--set", "input.columns=[source_id, src, tgt]")
    assert res.returncode == 0, res.stderr
    assert "note:" not in res.stdout
    rows = (tmp_path / "o" / "corpus.tsv").read_text(encoding="utf-8").splitlines()
    head = rows[0].split("\t")
    assert [r.split("\t")[head.index("source_id")] for r in rows[1:3]] == ["doc-0", "doc-1"]
    assert [r.split("\t")[head.index("id")] for r in rows[1:3]] == ["0", "1"]
    assert "<html" in (tmp_path / "o" / "report.html").read_text(encoding="utf-8")


class CollapsedModel(bitextforge.Generator):
    """Test generator: a collapsed translation model, one sentence for half of its inputs."""

    name = "collapsed_test.v1"
    learned = True

    def generate(self, sentences):
        return [[("A man is walking." if i % 2 else f"Sentence {i}.", -1.0)]
                for i, _ in enumerate(sentences)]


class LoopingRules(bitextforge.Paraphraser):
    """Test paraphraser: rules that write a loop for every sentence."""

    name = "looping_rules_test.v1"
    learned = False

    def paraphrase(self, sentences):
        return [[(f"{s} very very very very", -1.0)] for s in sentences]


def test_collapsed_and_looping_output_is_warned_about_as_fits_the_component(
        bitextforge_plugin, tmp_path):
    bitextforge_plugin(CollapsedModel, LoopingRules, name="bad_output")
    mono = tmp_path / "mono.en"
    mono.write_text("".join(f"English sentence number {i}.\n" for i in range(40)))
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: t\ninput: {{tgt: '{mono}'}}\noutput: '{tmp_path / 'o'}'\n"
                      f"progress: false\nsteps:\n  - generate: collapsed_test.v1\n    side: src\n"
                      f"  - paraphrase: looping_rules_test.v1\n    side: tgt\n")
    res = run_cli("run", recipe)
    assert res.returncode == 0, res.stderr
    warnings = json.loads((tmp_path / "o" / "manifest.json").read_text())["warnings"]
    assert warnings == [
        "steps[0] collapsed_test.v1: 19 of 40 generated texts (48%) repeat a text already made "
        "for another sentence: the output collapsed towards a few sentences; the model is "
        "probably undertrained (train longer or on more data); a dedupe.v1 step removes the "
        "repeats",
        "steps[1] looping_rules_test.v1: 40 of 40 generated texts are caught in a repetition "
        "loop (a word or phrase repeated 4+ times in a row): looping_rules_test.v1 works by "
        "rules or a dictionary: they do not fit this input; filter them with a repetition.v1 "
        "step"]
    assert [f"bitextforge: warning: {w}" for w in warnings] == [
        ln for ln in res.stderr.splitlines() if ln.startswith("bitextforge: warning:")]
