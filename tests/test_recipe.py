"""Recipe validation: the whole tree before anything runs, errors with file and key path."""

import pytest

from bitextforge import RecipeError
from bitextforge.recipe.load import parse_recipe

BASE = """
name: t
input: {src: a.de, tgt: a.en}
output: out/
steps:
  - filter: length.v1
    keep: {max: 50}
  - filter: length_ratio.v1
    with: {unit: chars}
    keep: {max: 3}
  - weight: distributed.v1
    with: {n: 2}
"""


def test_valid_recipe_fills_defaults():
    r = parse_recipe(BASE, "base.yaml")
    filled = r.filled()
    assert filled["steps"][0]["with"] == {"unit": "tokens", "side": "both", "combine": "longer"}
    assert filled["steps"][1]["with"]["unit"] == "chars"
    assert filled["steps"][2]["with"] == {"n": 2}
    assert filled["output"]["dir"] == "out/"
    assert filled["input"]["format"] == "plain"
    assert r.signature("0.1.0").startswith("bitextforge:0.1.0|recipe:t|steps:length.v1+length_ratio.v1+distributed.v1|seed:1234|config:")


def test_misspelled_parameter_names_key_path_and_suggests():
    bad = BASE.replace("{unit: chars}", "{unti: chars}")
    with pytest.raises(RecipeError) as err:
        parse_recipe(bad, "r.yaml")
    assert str(err.value) == ("r.yaml: steps[1] (length_ratio).with.unti: unknown field; did you "
                              "mean unit?")


def test_wrong_type_and_unknown_component_reported_together():
    bad = BASE.replace("{n: 2}", "{n: lots}").replace("length.v1", "lenght.v1")
    with pytest.raises(RecipeError) as err:
        parse_recipe(bad, "r.yaml")
    lines = str(err.value).splitlines()
    assert lines[0].startswith("r.yaml: steps[0] (lenght).filter: unknown filter 'lenght.v1'; "
                              "did you mean length.v1")
    assert lines[1].startswith("r.yaml: steps[2] (distributed).with.n: Input should be a valid "
                              "integer")


def test_bad_with_and_bad_keep_of_one_step_are_both_reported():
    """Issue #35: a step with a misspelt with: key and a misspelt keep: key reported only the
    keep: one, so the user fixed it, ran again and only then met the second."""
    bad = BASE.replace("{unit: chars}", "{unti: chars}").replace("{max: 3}", "{mx: 3}")
    with pytest.raises(RecipeError) as err:
        parse_recipe(bad, "r.yaml")
    assert str(err.value).splitlines() == [
        "r.yaml: steps[1] (length_ratio).keep.mx: unknown field; did you mean max?",
        "r.yaml: steps[1] (length_ratio).with.unti: unknown field; did you mean unit?"]


def test_unknown_top_level_key_and_keep_key():
    with pytest.raises(RecipeError, match=r"r.yaml: ouptut: unknown field; did you mean output"):
        parse_recipe(BASE + "ouptut: x\n", "r.yaml")
    with pytest.raises(RecipeError, match=r"steps\[0\] \(length\).keep.mx: unknown field; did you mean max"):
        parse_recipe(BASE.replace("{max: 50}", "{mx: 50}"), "r.yaml")


def test_keep_required_unless_default():
    with pytest.raises(RecipeError, match=r"steps\[0\] \(length\).keep: required field missing"):
        parse_recipe(BASE.replace("    keep: {max: 50}\n", "", 1), "r.yaml")
    r = parse_recipe(BASE + "  - filter: dedupe.v1\n", "r.yaml")
    assert r.steps[3].keep.min == 1


def test_keep_needs_a_bound_and_min_le_max():
    with pytest.raises(RecipeError, match="give at least one of min, max, top, words"):
        parse_recipe(BASE.replace("{max: 50}", "{}"), "r.yaml")
    with pytest.raises(RecipeError, match="min .* is greater than max"):
        parse_recipe(BASE.replace("{max: 50}", "{min: 9, max: 2}"), "r.yaml")


def test_python_object_tag_is_refused():
    evil = BASE + "extra: !!python/object/apply:os.system ['echo pwned']\n"
    with pytest.raises(RecipeError, match=r"r.yaml:\d+: invalid YAML: .*refused"):
        parse_recipe(evil, "r.yaml")


def test_step_must_name_one_kind():
    with pytest.raises(RecipeError, match=r"steps\[3\]: a step names exactly one of"):
        parse_recipe(BASE + "  - fliter: length.v1\n", "r.yaml")


def test_set_overrides():
    r = parse_recipe(BASE, "r.yaml", ["steps[1].keep.max=2.5", "steps.2.with.n=8", "seed=7"])
    assert r.steps[1].keep.max == 2.5 and r.configs[2].n == 8 and r.seed == 7
    with pytest.raises(RecipeError, match="not an index"):
        parse_recipe(BASE, "r.yaml", ["steps[9].keep.max=1"])


def test_a_bad_set_path_names_the_set_not_the_recipe_file():
    """Issue #35: an error caused by ``--set`` named the recipe file, whose text was fine."""
    with pytest.raises(RecipeError) as err:
        parse_recipe(BASE, "r.yaml", ["steps[1].keep.mx=2.5", "steps.2.with.n=lots"])
    assert str(err.value).splitlines() == [
        "--set steps[1].keep.mx=2.5: steps[1] (length_ratio).keep.mx: unknown field; did you "
        "mean max?",
        "--set steps.2.with.n=lots: steps[2] (distributed).with.n: Input should be a valid "
        "integer, unable to "
        "parse string as an integer (got 'lots')"]
    with pytest.raises(RecipeError) as err:
        parse_recipe(BASE, "r.yaml", ["name.x=1"])
    assert str(err.value) == ("--set name.x: cannot descend into 'x': name is 't' in r.yaml, not "
                              "a mapping")
    # a problem the recipe text itself has still names the recipe file
    with pytest.raises(RecipeError) as err:
        parse_recipe(BASE.replace("{n: 2}", "{n: lots}"), "r.yaml", ["steps[1].keep.max=2"])
    assert str(err.value).startswith("r.yaml: steps[2] (distributed).with.n: ")


def test_duplicate_score_columns_need_as():
    two = BASE + "  - filter: length.v1\n    keep: {min: 1}\n"
    with pytest.raises(RecipeError, match="score column 'length' is already written"):
        parse_recipe(two, "r.yaml")
    parse_recipe(two + "    as: length_min\n", "r.yaml")


def test_input_needs_files():
    with pytest.raises(RecipeError, match="input: .*give src and tgt files"):
        parse_recipe(BASE.replace("{src: a.de, tgt: a.en}", "{}"), "r.yaml")


def test_an_input_error_is_one_line_of_the_branch_the_value_took():
    """`input:` is one mapping or a list of them: a mapping that fails its own check gets that
    check's line alone (not the list branch's "should be a valid list"), and a value of neither
    type one line that names both."""
    with pytest.raises(RecipeError) as exc:
        parse_recipe(BASE.replace("{src: a.de, tgt: a.en}", "{path: a.tsv}"), "r.yaml")
    assert str(exc.value) == ("r.yaml: input: a TSV input needs columns: [...] or header: true")
    with pytest.raises(RecipeError) as exc:
        parse_recipe(BASE.replace("{src: a.de, tgt: a.en}", "a.tsv"), "r.yaml")
    assert str(exc.value) == "r.yaml: input: should be a mapping or a list (got 'a.tsv')"
    with pytest.raises(RecipeError) as exc:
        parse_recipe(BASE.replace("{src: a.de, tgt: a.en}", "{tsv: a.tsv}"), "r.yaml")
    assert str(exc.value) == ("r.yaml: input.tsv: unknown field; give the file as path: (its "
                              "format is inferred from the name)")
    with pytest.raises(RecipeError, match=r"input\.srcc: unknown field; did you mean src\?"):
        parse_recipe(BASE.replace("{src: a.de", "{srcc: a.de"), "r.yaml")


def test_yaml_1_2_booleans_keep_on_a_string():
    """YAML 1.1 reads the key `on` as True; recipes use YAML 1.2 booleans (true/false only)."""
    r = parse_recipe(BASE + "  - filter: dedupe.v1\n    with: {on: src}\n", "r.yaml")
    assert r.configs[3].on == "src"
    assert parse_recipe(BASE.replace("name: t", "name: t\nprogress: false"), "r.yaml").progress is False


def test_duplicate_yaml_key_is_refused_with_its_key_path():
    text = BASE.replace("    keep: {max: 50}\n", "    keep: {words: 20000}\n    keep: {max: 50}\n")
    with pytest.raises(RecipeError) as err:
        parse_recipe(text, "r.yaml")
    assert str(err.value) == ("r.yaml:8: steps[0].keep: duplicate key (also given on line 7; YAML "
                              "would keep only the last)")
    with pytest.raises(RecipeError, match=r"r.yaml:\d+: name: duplicate key"):
        parse_recipe(BASE + "name: again\n", "r.yaml")
    with pytest.raises(RecipeError, match=r"steps\[1\].with.unit: duplicate key"):
        parse_recipe(BASE.replace("{unit: chars}", "{unit: chars, unit: tokens}"), "r.yaml")


def test_duplicate_component_name_is_reported_once(bitextforge_plugin):

    import bitextforge

    class Twin(bitextforge.Filter):
        """A second length.v1."""

        name = "length.v1"

        def score(self, batch):
            """Every row scores 0."""
            return [0.0] * len(batch["src"])

    bitextforge_plugin(Twin, name="twin")
    text = BASE + "  - filter: length.v1\n    keep: {min: 1}\n    as: second\n"
    with pytest.raises(bitextforge.RegistryError) as err:
        parse_recipe(text, "r.yaml")
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and msg.count("registered twice") == 1
    assert "steps[" not in msg and "twin" in msg


def _alias_bomb(levels: int) -> str:
    """"Billion laughs": each level is a list of nine aliases of the level before (9**levels
    strings once expanded, from a few hundred bytes of YAML)."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return BASE + "\n".join(lines) + "\n"


def test_yaml_alias_bomb_is_refused_at_once(tmp_path):
    """An alias bomb kept validate and run at 100 % CPU for minutes in the duplicate-key check; the
    expanded size is now counted (each alias as often as it is used) and bounded."""
    import signal
    import time

    from bitextforge.recipe.load import load_recipe

    def too_slow(signum, frame):
        raise TimeoutError("parsing an alias bomb took more than 10 s")

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_alias_bomb(9), encoding="utf-8")  # 387,420,489 strings expanded
    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(10)
    try:
        t0 = time.perf_counter()
        with pytest.raises(RecipeError) as err:
            load_recipe(bomb)
        seconds = time.perf_counter() - t0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert str(err.value) == (f"{bomb}: invalid YAML: more than 1,000,000 nodes once its aliases "
                              f"are expanded (each *alias counts as a copy of what it names)")
    assert seconds < 1.0
    # below the bound, aliases work as before
    r = parse_recipe(BASE.replace("{unit: chars}", "&opts {unit: chars}") +
                     "  - filter: length_ratio.v1\n    with: *opts\n    keep: {max: 2}\n"
                     "    as: ratio2\n", "r.yaml")
    assert r.configs[3].unit == "chars"
    with pytest.raises(RecipeError, match=r"^r.yaml: a0: unknown field"):
        parse_recipe(_alias_bomb(5), "r.yaml")  # 59,049 strings: counted, then validated


def test_recursive_alias_and_deep_nesting_are_one_line_errors():
    with pytest.raises(RecipeError) as err:
        parse_recipe(BASE + "extra: &loop [1, *loop]\n", "r.yaml")
    assert str(err.value) == ("r.yaml:13: invalid YAML: an alias inside the node it names "
                              "(a structure without end)")
    with pytest.raises(RecipeError) as err:
        parse_recipe(BASE + "extra: " + "[" * 5000 + "]" * 5000 + "\n", "r.yaml")
    assert str(err.value) == "r.yaml: invalid YAML: nested too deeply"
