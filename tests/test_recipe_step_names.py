"""A step addressed by its name: ``--set 'steps[length_ratio].keep.max=1.5'`` keeps meaning the
same step when steps are added before it (the guide's ``steps[2]`` came to mean another filter
when the quick start gained a step), and errors about a step say which step it is."""

import re
import shlex

import pytest

from bitextforge import RecipeError
from bitextforge.recipe.load import load_recipe, parse_recipe

from conftest import ROOT

RECIPE = """name: t
input: {src: a.de, tgt: a.en}
output: out/
steps:
  - filter: dedupe.v1
  - filter: length.v1
    keep: {min: 1}
    as: shortest
  - filter: length.v1
    keep: {max: 60}
    as: longest
  - filter: length_ratio.v1
    with: {unit: chars}
    keep: {max: 2.0}
evaluate:
  - corpus_stats.v1
"""


@pytest.mark.parametrize("key", ["steps[length_ratio]", "steps[length_ratio.v1]", "steps[3]",
                                 "steps.3"])
def test_a_step_is_found_by_component_name_with_or_without_version_or_by_index(key):
    r = parse_recipe(RECIPE, "r.yaml", [f"{key}.keep.max=1.5"])
    assert r.steps[3].keep.max == 1.5
    assert [s.keep.max for s in r.steps[:3]] == [None, None, 60]


def test_a_step_is_found_by_its_as_name_and_other_lists_by_their_names():
    r = parse_recipe(RECIPE, "r.yaml", ["steps[longest].keep.max=40",
                                        "evaluate[corpus_stats].with.columns=[src]"])
    assert r.steps[2].keep.max == 40 and r.steps[1].keep.min == 1
    assert r.eval_configs[0].columns == ["src"]


def test_an_ambiguous_or_unknown_name_is_refused_with_the_candidates():
    with pytest.raises(RecipeError) as err:
        parse_recipe(RECIPE, "r.yaml", ["steps[length].keep.max=3"])
    assert str(err.value) == ("--set steps[length].keep.max: 'length' names 2 items of steps: "
                              "steps[1] (shortest), steps[2] (longest); give the index of one, "
                              "or its as: name")
    with pytest.raises(RecipeError) as err:
        parse_recipe(RECIPE, "r.yaml", ["steps[lenght_ratio].keep.max=3"])
    assert str(err.value) == ("--set steps[lenght_ratio].keep.max: no item of steps is called "
                              "'lenght_ratio' (its names: dedupe, shortest, longest, "
                              "length_ratio); did you mean length_ratio?")
    # a name is only for a list: a mapping's key in brackets is refused as before
    with pytest.raises(RecipeError, match="not an index"):
        parse_recipe(RECIPE, "r.yaml", ["steps.length_ratio.keep.max=3"])


def test_errors_about_a_step_give_its_name():
    with pytest.raises(RecipeError) as err:
        parse_recipe(RECIPE, "r.yaml", ["steps[length_ratio].keep.mx=1.5"])
    assert str(err.value) == ("--set steps[length_ratio].keep.mx=1.5: steps[3] (length_ratio)"
                              ".keep.mx: unknown field; did you mean max?")
    with pytest.raises(RecipeError) as err:
        parse_recipe(RECIPE.replace("{unit: chars}", "{unti: chars}").replace(
            "keep: {max: 60}", "keep: {max: 60, mn: 2}"), "r.yaml")
    assert str(err.value).splitlines() == [
        "r.yaml: steps[2] (longest).keep.mn: unknown field; did you mean min?",
        "r.yaml: steps[3] (length_ratio).with.unti: unknown field; did you mean unit?"]


#: a ``--set`` that the docs show against the quick start, and the step the text says it changes
DOCUMENTED = {"README.md": "length_ratio", "docs/guide.md": "length_ratio"}


@pytest.mark.parametrize("doc", sorted(DOCUMENTED))
def test_the_documented_set_examples_change_the_step_they_mean(doc):
    """The guide's ``--set 'steps[2].keep.max=1.5'`` was written for the length-ratio filter and,
    once the quick start had five steps, tightened the length filter instead (2 of 320 rows
    kept). Every ``--set`` of a quick-start command in these docs is applied here, and the step
    it lands on must be the one meant."""
    quickstart = ROOT / "recipes" / "quickstart.yaml"
    commands = [line for line in (ROOT / doc).read_text(encoding="utf-8").splitlines()
                if "recipes/quickstart.yaml" in line and "--set" in line and "steps[" in line]
    assert commands, f"{doc} shows no --set of a quick-start step"
    for command in commands:
        words = shlex.split(command.split("#")[0])
        sets = [words[i + 1] for i, w in enumerate(words) if w == "--set"]
        steps = [s for s in sets if s.startswith("steps[")]
        assert steps and all(not re.match(r"steps\[\d+\]", s) for s in steps), (
            f"{doc}: {command!r} names a step by index; name it (steps[length_ratio])")
        before = load_recipe(quickstart)
        after = load_recipe(quickstart, sets)
        changed = [i for i, (a, b) in enumerate(zip(before.steps, after.steps)) if a != b]
        assert [after.steps[i].score_column() for i in changed] == [DOCUMENTED[doc]], command
        assert after.steps[changed[0]].keep.max == 1.5


def test_a_negative_index_counts_from_the_end():
    r = parse_recipe(RECIPE, "r.yaml", ["steps[-1].keep.max=1.25"])
    assert r.steps[3].keep.max == 1.25
    with pytest.raises(RecipeError, match=r"'-9' is not an index of steps, a list of 4 \(0 to 3, "
                                          r"or -1 for the last\)"):
        parse_recipe(RECIPE, "r.yaml", ["steps[-9].keep.max=1"])
