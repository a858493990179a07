"""What the recipe loader refuses so that nothing unsafe reaches a run or the terminal: non-finite
numbers, files that are not recipes named by ``extends:``, errors blown up by aliased values, and
``extends:`` chains past their stated depth."""

import math

import pytest

from bitextforge import RecipeError
from bitextforge.cli.main import main
from bitextforge.recipe.load import MAX_EXTENDS_DEPTH, load_recipe, parse_recipe

RECIPE = """name: t
input: {src: a.de, tgt: a.en}
output: out/
steps:
  - filter: length.v1
    keep: {max: 50}
"""


def error_of(text: str, source: str = "r.yaml") -> str:
    """The message of the RecipeError that parsing ``text`` raises."""
    with pytest.raises(RecipeError) as err:
        parse_recipe(text, source)
    return str(err.value)


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "-1"])
def test_a_weight_that_is_not_a_finite_non_negative_number_is_refused(value):
    """An infinite weight reached corpus.weights, Marian's --data-weighting file, on every line."""
    text = RECIPE.replace("a.en}", f"a.en, weight: {value}}}")
    message = error_of(text)
    assert message.startswith("r.yaml: input.weight: ") and "\n" not in message
    assert ("finite" in message) == (value != "-1")
    with pytest.raises(RecipeError, match=r"^--set input.weight=\.inf: input.weight: .*finite"):
        parse_recipe(RECIPE, "r.yaml", [f"input.weight=.inf"])


@pytest.mark.parametrize("key,text", [
    ("input[1].max_ratio", "input:\n  - {name: a, src: a.de, tgt: a.en}\n"
                           "  - {name: b, src: b.de, tgt: b.en, max_ratio: .inf}\n"),
    ("steps[0].keep.top", "keep: {top: .inf}"),
    ("steps[0].keep.top", "keep: {top: .nan}"),
    ("steps[0].resources.num_cpus", "resources: {num_cpus: .inf}"),
    ("steps[0].resources.num_gpus", "resources: {num_gpus: .nan}"),
])
def test_other_recipe_numbers_refuse_nan_and_infinity(key, text):
    """``top: .inf`` crashed with an OverflowError traceback; the others were taken as given."""
    if text.startswith("input:"):
        recipe = RECIPE.replace("input: {src: a.de, tgt: a.en}\n", text)
    elif text.startswith("keep:"):
        recipe = RECIPE.replace("keep: {max: 50}", text)
    else:
        recipe = RECIPE + f"    {text}\n"
    message = error_of(recipe)
    assert message.startswith(f"r.yaml: {key}".replace("steps[0]", "steps[0] (length)"))
    assert "finite" in message, message


def test_keep_bounds_may_still_be_infinite():
    """An infinite bound means no bound; only NaN, which compares false to everything, is not."""
    r = parse_recipe(RECIPE.replace("{max: 50}", "{min: -.inf, max: .inf}"), "r.yaml")
    assert r.steps[0].keep.max == math.inf


def test_extends_refuses_a_file_that_is_not_a_yaml_recipe(tmp_path):
    """``extends: /etc/shadow`` printed each of its entries as an unknown field."""
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$SECRETHASH:19000:0:99999:7:::\nalice:$6$OTHER:1:0:9:7:::\n")
    child = tmp_path / "child.yaml"
    child.write_text(f"extends: {secret}\nname: x\n")
    with pytest.raises(RecipeError) as err:
        load_recipe(child)
    message = str(err.value)
    assert message == (f"{child}: extends: {secret}: not a recipe file (extends names a YAML "
                       f"recipe, a .yaml or .yml file)")
    # a YAML file that holds no recipe keys is refused without printing its keys or values
    other = tmp_path / "compose.yaml"
    other.write_text("services: {db: {password: hunter2-SECRET}}\nversion: '3'\n")
    child.write_text("extends: compose.yaml\nname: x\n")
    with pytest.raises(RecipeError) as err:
        load_recipe(child)
    message = str(err.value)
    assert "SECRET" not in message and "services" not in message and "\n" not in message
    assert message.startswith(f"{child}: extends: compose.yaml: not a recipe")
    other.write_text("- root\n- alice\n")
    with pytest.raises(RecipeError, match="a recipe is a YAML mapping") as err:
        load_recipe(child)
    assert "alice" not in str(err.value)


def test_a_value_from_an_extended_file_is_quoted_short(tmp_path):
    """A base file with recipe keys may still hold long values; an error quotes them truncated."""
    (tmp_path / "base.yaml").write_text("name: [" + ", ".join(["SECRET-" + "x" * 40] * 50)
                                        + "]\n")
    child = tmp_path / "child.yaml"
    child.write_text("extends: base.yaml\ninput: {src: a, tgt: b}\noutput: out\nsteps: []\n")
    with pytest.raises(RecipeError) as err:
        load_recipe(child)
    line = str(err.value)
    assert line.startswith(f"{tmp_path / 'base.yaml'}: name: Input should be a valid string")
    assert len(line) < 300 and line.count("SECRET") <= 2 and "list of 50 items" in line


def _alias_amplifier(levels: int = 6) -> str:
    """About 400 bytes of YAML that stand for 9**levels strings."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        p = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([p] * 9)}]")
    return "\n".join(lines)


def test_an_aliased_value_of_the_wrong_type_gives_a_short_error():
    """531,441 aliased nodes under the node limit, in a string field, gave a 4.3 MB error line."""
    doc = _alias_amplifier(5)
    text = "bomb:\n" + "\n".join("  " + line for line in doc.splitlines()) + "\n"
    big = f"[{', '.join(['*a4'] * 9)}]"  # 531,441 strings
    assert len(text + big) < 500
    recipe = text + RECIPE.replace("name: t\n", f"name: {big}\n")
    message = error_of(recipe)
    assert len(message) < 1000, len(message)
    assert "r.yaml: name: Input should be a valid string (got [[[" in message
    # many wrong items of a list: a bounded number of lines, then a count of the rest
    many = "[" + ", ".join(["x"] * 500) + "]"
    message = error_of(RECIPE.replace("output: out/\n", f"output: {{dir: out, formats: {many}}}\n"))
    lines = message.splitlines()
    assert len(lines) <= 21 and lines[-1] == "r.yaml: and 480 more problems like these"


def test_a_deep_extends_chain_is_refused_at_its_stated_depth(tmp_path):
    """A chain of 1,500 files failed as 'l522.yaml: invalid YAML: nested too deeply', blaming a
    valid file; the depth is bounded and the error names where the chain starts."""
    n = MAX_EXTENDS_DEPTH + 2
    for i in range(n):
        body = f"extends: l{i + 1}.yaml\n" if i < n - 1 else RECIPE
        (tmp_path / f"l{i}.yaml").write_text(body)
    with pytest.raises(RecipeError) as err:
        load_recipe(tmp_path / "l0.yaml")
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'l0.yaml'}: extends: a chain of more than "
                              f"{MAX_EXTENDS_DEPTH} files"), message
    assert "\n" not in message
    # a chain at the limit loads
    ok = tmp_path / f"l{n - 1 - MAX_EXTENDS_DEPTH}.yaml"
    assert load_recipe(ok).name == "t"


def test_max_ratio_without_bitext_before_it_is_refused():
    """``max_ratio`` caps an input at a multiple of the two-sided inputs listed before it; on the
    only input (or the first) it was ignored without a word."""
    message = error_of(RECIPE.replace("a.en}", "a.en, max_ratio: 2}"))
    assert message.startswith("r.yaml: input.max_ratio: ") and "limit" in message
    assert "\n" not in message
    two = RECIPE.replace("input: {src: a.de, tgt: a.en}\n", "input:\n"
                         "  - {name: a, src: a.de, tgt: a.en, max_ratio: 2}\n"
                         "  - {name: b, src: b.de, tgt: b.en}\n")
    assert error_of(two).startswith("r.yaml: input[0].max_ratio: ")
    fine = two.replace(", max_ratio: 2}", "}").replace("b.en}", "b.en, max_ratio: 2}")
    assert parse_recipe(fine, "r.yaml").input[1].max_ratio == 2


@pytest.mark.parametrize("days", ["nan", "1e309", "-inf", "-1"])
def test_cache_prune_refuses_days_that_are_not_a_finite_non_negative_number(days, capsys,
                                                                          tmp_path, monkeypatch):
    monkeypatch.setenv("BITEXTFORGE_CACHE", str(tmp_path / "cache"))
    assert main(["cache", "prune", f"--older-than={days}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bitextforge: error: cache prune: --older-than") and "\n" not in err


def test_a_nan_keep_bound_is_refused():
    """Every comparison with NaN is false: ``max: .nan`` rejected every row without a word."""
    message = error_of(RECIPE.replace("{max: 50}", "{max: .nan}"))
    assert message == "r.yaml: steps[0] (length).keep.max: Input should be a number, not NaN"


@pytest.mark.parametrize("text", [
    RECIPE.replace("filter: length.v1", "filter: " + "x" * 5000),
    RECIPE + "extra: !!python/name:" + "x" * 5000 + "\n",
])
def test_a_long_name_or_tag_is_quoted_short(text):
    """A component name or YAML tag of 5,000 characters was printed whole in its error."""
    message = error_of(text)
    assert "x" * 400 not in message and len(message) < 1000, len(message)


def test_many_duplicate_keys_give_a_bounded_error():
    text = RECIPE + "extra:\n" + "".join(f"  - {{k: 1, k: 2}}\n" for _ in range(500))
    lines = error_of(text).splitlines()
    assert len(lines) == 21 and lines[-1] == "r.yaml: and 480 more duplicate keys"


def test_a_random_sample_without_limit_or_max_ratio_is_refused():
    """``sample: random`` only chooses which rows a limit or max_ratio keeps; alone it was
    ignored without a word, and the run read every row in order."""
    message = error_of(RECIPE.replace("a.en}", "a.en, sample: random}"))
    assert message.startswith("r.yaml: input.sample: random samples the rows that limit or "
                              "max_ratio lets through")
    r = parse_recipe(RECIPE.replace("a.en}", "a.en, sample: random, limit: 5}"), "r.yaml")
    assert r.input.sample == "random"


def test_quote_cuts_long_values_and_says_how_long_they_were():
    from bitextforge.errors import quote

    assert quote("short") == "'short'" and quote(3.5) == "3.5" and quote([1, 2]) == "[1, 2]"
    long = quote("y" * 5000)
    assert long.endswith("… (5,000 characters)") and len(long) < 110
    nested = [[["z"] * 9] * 9] * 9
    text = quote(nested)
    assert text.endswith("… (list of 9 items)") and len(text) < 110


def test_extends_refuses_a_huge_file_without_reading_it(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:
        fh.truncate(5 << 20)  # sparse: nothing is written, and nothing should be read
    child = tmp_path / "child.yaml"
    child.write_text("extends: big.yaml\nname: x\n")
    with pytest.raises(RecipeError) as err:
        load_recipe(child)
    assert str(err.value).startswith(f"{child}: extends: big.yaml: not a recipe file (over 4 MB")


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
def test_a_component_option_that_is_not_finite_is_refused(value, tmp_path):
    """``original_score: .inf`` made every weight of sentence_weights.v1 inf or nan."""
    from conftest import ROOT, run_cli

    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"name: t\ninput: {{src: '{ROOT}/recipes/data/quickstart.de', "
        f"tgt: '{ROOT}/recipes/data/quickstart.en'}}\noutput: {{dir: '{tmp_path / 'out'}'}}\n"
        f"steps:\n  - weight: sentence_weights.v1\n    with: {{original_score: {value}}}\n")
    res = run_cli("validate", recipe)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"bitextforge: error: {recipe}: steps[0] (sentence_weights).with.original_score: Input "
        f"should be a finite number (got {'nan' if 'nan' in value else value.replace('.', '')})"]
