"""The recipe shelf and the lab kept apart, checked mechanically: recipes/ holds what a user starts
from (few files, short headers, shallow extends:, an index), the studies under benchmarks/studies/
hold the rest, a recipe that moved fails with one line naming its new place, and the docs stay
small enough to read."""

import ast
import re

import pytest
import yaml

from conftest import ROOT, SHARED

SHELF = ROOT / "recipes"
STUDIES = ROOT / "benchmarks" / "studies"
SHELF_RECIPES = sorted(SHELF.glob("*.yaml"))
#: a top-level key of a recipe: where a header (the comment lines above it) ends
TOP_KEY = re.compile(r"^[A-Za-z_][\w+\[\]-]*:")


def _header(path):
    """The comment lines above a recipe's first key."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if TOP_KEY.match(line):
            return lines[:i]
    return lines


def test_the_shelf_holds_at_most_15_files_and_the_defaults():
    files = [p for p in SHELF.iterdir() if p.is_file()]
    dirs = {p.name for p in SHELF.iterdir() if p.is_dir()}
    assert len(files) <= 15, sorted(p.name for p in files)
    assert dirs <= {"defaults", "data"}, dirs
    assert len(SHELF_RECIPES) >= 8  # the jobs and the five papers


@pytest.mark.parametrize("path", SHELF_RECIPES, ids=lambda p: p.name)
def test_every_shelf_header_is_short_and_says_what_a_user_needs(path):
    """At most 20 lines: what it does, what it needs, its time on 2 cores, how to run it, the
    figure to expect and the study behind it (or the shelf's index)."""
    head = _header(path)
    assert 0 < len(head) <= 20, f"{path.name}: header of {len(head)} lines"
    text = "\n".join(head)
    assert "Needs" in text or "needs" in text, path.name
    assert "Time" in text or "time" in text, path.name
    assert "Run:" in text, path.name
    assert "Expect" in text, path.name
    named = re.findall(r"(benchmarks/studies/[\w-]+/README\.md|recipes/README\.md)", text)
    assert named, f"{path.name}: names no study"
    for ref in named:
        assert (ROOT / ref).is_file(), f"{path.name}: {ref} does not exist"
    for line in head:
        assert not re.search(r"issue #?\d+|\w+th round\b|\brule [A-Z]{1,2}\b", line), \
            f"{path.name}: lab history in the header: {line}"


def _extends_chain(path):
    """The files a recipe reads through extends:, itself first."""
    chain = [path]
    while True:
        data = yaml.safe_load(chain[-1].read_text(encoding="utf-8")) or {}
        ref = data.get("extends") if isinstance(data, dict) else None
        if not ref:
            return chain
        chain.append((chain[-1].parent / ref).resolve())


@pytest.mark.parametrize("path", SHELF_RECIPES, ids=lambda p: p.name)
def test_a_shelf_recipe_extends_at_most_one_other_file(path):
    chain = _extends_chain(path)
    assert len(chain) <= 2, " -> ".join(p.name for p in chain)
    for base in chain[1:]:
        assert SHELF in base.parents, f"{path.name} extends {base}, outside the shelf"


def test_the_shelf_index_lists_every_recipe_with_its_needs_time_output_and_figure():
    text = (SHELF / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.yaml)\)", text))
    assert linked == {p.name for p in SHELF_RECIPES}
    header = ("| job | recipe | what it needs | time on 2 cores | what it writes "
              "| the figure to expect |")
    assert header in text


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs the shared data the recipes read")
@pytest.mark.parametrize("path", SHELF_RECIPES, ids=lambda p: p.name)
def test_every_shelf_recipe_validates(path, capsys, monkeypatch):
    """``bitextforge validate`` passes, or misses only what another shelf recipe's run writes
    (runs/..., models/...: wieting-filters.yaml reads wieting-classifier-data.yaml's run)."""
    from bitextforge.cli.main import main

    monkeypatch.chdir(ROOT)
    rc = main(["validate", str(path.relative_to(ROOT))])
    err = capsys.readouterr().err
    if rc != 0:
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines and all(re.search(r": (runs|models)/\S+: no such file", line)
                             for line in lines), err


MOVED_EXAMPLE = "recipes/bt-multi30k-best.yaml"


def test_every_moved_recipe_has_a_new_place_and_no_old_one():
    from bitextforge.recipe.moved import MOVED

    assert len(MOVED) >= 30
    for old, new in MOVED.items():
        assert not (ROOT / old).exists(), f"{old} is still on the shelf"
        assert (ROOT / new).is_file(), f"{old} -> {new}: no such file"
        assert new.startswith("benchmarks/studies/"), new


def test_a_moved_recipe_fails_with_one_line_naming_its_new_place(capsys, monkeypatch):
    from bitextforge.cli.main import main

    monkeypatch.chdir(ROOT)
    for cmd in ("validate", "run", "prepare"):
        rc = main([cmd, MOVED_EXAMPLE])
        err = capsys.readouterr().err
        assert rc == 2
        assert err.strip().splitlines() == [
            "bitextforge: error: recipes/bt-multi30k-best.yaml moved to "
            "benchmarks/studies/bt-multi30k/recipes/best.yaml (the recipe shelf: "
            "recipes/README.md)"], err


def test_every_moved_name_gives_the_hint(monkeypatch):
    from bitextforge.errors import RecipeError
    from bitextforge.recipe.load import load_recipe
    from bitextforge.recipe.moved import MOVED

    monkeypatch.chdir(ROOT)
    for old, new in MOVED.items():
        with pytest.raises(RecipeError) as exc:
            load_recipe(old)
        assert str(exc.value) == f"{old} moved to {new} (the recipe shelf: recipes/README.md)"


def test_an_extends_of_a_moved_recipe_names_its_new_place(tmp_path, monkeypatch):
    """A user's recipe that extends a moved recipe by its old path (here beside a checkout)."""
    from bitextforge.errors import RecipeError
    from bitextforge.recipe.load import load_recipe

    mine = tmp_path / "mine.yaml"
    mine.write_text(f"extends: {ROOT}/recipes/paracrawl-filter.yaml\nname: mine\n",
                    encoding="utf-8")
    with pytest.raises(RecipeError) as exc:
        load_recipe(mine)
    msg = str(exc.value)
    assert len(msg.splitlines()) == 1
    assert msg.endswith(f"recipes/paracrawl-filter.yaml moved to {ROOT}/benchmarks/studies/"
                        f"paracrawl-filter/recipes/filter.yaml (the recipe shelf: "
                        f"recipes/README.md)"), msg
    assert msg.startswith(f"{mine}: extends: "), msg


def test_an_existing_file_is_never_redirected(tmp_path, monkeypatch):
    """The table is read only for a missing file: a user's own recipes/bt-multi30k-best.yaml
    runs as written, and a missing name that never moved says no such file."""
    from bitextforge.errors import RecipeError
    from bitextforge.recipe.load import load_recipe

    monkeypatch.chdir(tmp_path)
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "bt-multi30k-best.yaml").write_text(
        "name: mine\ninput: {src: a.de, tgt: a.en}\nsteps:\n  - filter: dedupe.v1\n"
        "output: {dir: out}\n",
        encoding="utf-8")
    for side in ("a.de", "a.en"):
        (tmp_path / side).write_text("x\n", encoding="utf-8")
    assert load_recipe("recipes/bt-multi30k-best.yaml").name == "mine"
    with pytest.raises(RecipeError, match=r"^recipes/never-was\.yaml: no such recipe file$"):
        load_recipe("recipes/never-was.yaml")


# ------------------------------------------------------------------------------ the lab apart


STUDY_DIRS = sorted(p for p in STUDIES.iterdir() if p.is_dir())


@pytest.mark.parametrize("study", STUDY_DIRS, ids=lambda p: p.name)
def test_every_study_says_its_question_rule_result_and_commands(study):
    text = (study / "README.md").read_text(encoding="utf-8")
    for part in ("**Question.**", "**The rule, written before the runs.**", "**Result.**",
                 "**Commands**", "history.md"):
        assert part in text, f"{study.name}/README.md: no {part}"
    assert (study / "history.md").is_file()


def test_the_studies_do_not_link_back_to_the_docs_or_the_shelf():
    """The shelf and the docs link to the studies, never the other way: a study's record stays
    valid when the product's pages change."""
    link = re.compile(r"\]\(([^)\s]+)\)")
    bad = []
    for doc in STUDIES.rglob("*.md"):
        for target in link.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            dest = (doc.parent / target.partition("#")[0]).resolve()
            if ROOT / "benchmarks" not in dest.parents:
                bad.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not bad, bad


def test_core_and_plugins_import_nothing_from_benchmarks():
    bad = []
    for path in list((ROOT / "core").rglob("*.py")) + list((ROOT / "plugins").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{path.relative_to(ROOT)}: {n}" for n in names
                    if n == "benchmarks" or n.startswith("benchmarks.")]
    assert not bad, bad


#: docs/ without the reference may not grow past this: user text only, the studies' figures,
#: runs and rows read by hand live in benchmarks/studies/; lower it as pages are cut, never raise it
DOCS_CEILING_KB = 300


def test_the_docs_stay_readable_in_size():
    """docs/ without the generated reference stays within :data:`DOCS_CEILING_KB`; the
    benchmarks page (today's figures) and the results page hold at most 400 lines
    each."""
    docs = ROOT / "docs"
    size = sum(p.stat().st_size for p in docs.rglob("*")
               if p.is_file() and p.name != "reference.md" and "__pycache__" not in p.parts)
    assert size <= DOCS_CEILING_KB * 1024, f"docs/ is {size / 1024:.0f} KB without reference.md"
    for page in ("benchmarks.md", "results.md"):
        lines = len((docs / page).read_text(encoding="utf-8").splitlines())
        assert lines <= 400, f"docs/{page}: {lines} lines"
    assert not (docs / "experiments.md").exists() and not (docs / "benchmarks-history.md").exists()
