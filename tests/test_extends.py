"""Layered recipes (issue #34, item 4): ``extends:`` merges a base recipe under the one the user
runs; errors name the file and key path where a bad value was written; the WMT-style defaults in
recipes/defaults/ run when a recipe of the user's extends them."""

import json
import re
from pathlib import Path

import pytest

from bitextforge import RecipeError
from bitextforge.cli.main import main
from bitextforge.recipe.load import load_recipe, recipe_data

from conftest import ROOT, SHARED, shared

BASE = """name: base
input: {src: data/base.de, tgt: data/base.en}
steps:
  - filter: dedupe.v1
  - filter: length_ratio.v1
    with: {unit: chars}
    keep: {max: 2.0}
  - filter: length.v1
    with: {unit: chars, combine: longer}
    keep: {max: 300}
output: {dir: runs/base, formats: [plain, tsv]}
seed: 7
"""


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (folders created) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def errors_of(path: Path) -> list[str]:
    """The lines of the RecipeError that loading ``path`` raises."""
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    return str(err.value).splitlines()


def test_extends_merges_mappings_replaces_lists_and_keeps_paths_relative_to_cwd(tmp_path):
    base = write(tmp_path / "defaults" / "base.yaml", BASE)
    child = write(tmp_path / "mine" / "child.yaml", """extends: ../defaults/base.yaml
name: child
input: {src: data/mine.de}            # merges: tgt stays the base's
output: {formats: [plain]}            # a list: replaced whole
steps[1]:
  keep: {max: 1.5}                    # one step's decision, the rest of it from the base
steps[-1]:
  with: {unit: tokens}
steps+:
  - filter: length.v1
    keep: {min: 2}
    as: shortest
""")
    r = load_recipe(child)
    filled = r.filled()
    assert "extends" not in filled and r.name == "child" and r.seed == 7
    assert r.source == str(child)
    # input and output paths are not moved to the base's or the child's folder
    assert (r.input.src, r.input.tgt) == ("data/mine.de", "data/base.en")
    assert filled["output"] == {**filled["output"], "dir": "runs/base", "formats": ["plain"]}
    assert [s.component for s in r.steps] == ["dedupe.v1", "length_ratio.v1", "length.v1",
                                              "length.v1"]
    assert filled["steps"][1]["with"] == {"unit": "chars"}
    assert filled["steps"][1]["keep"]["max"] == 1.5
    assert filled["steps"][2]["with"] == {"unit": "tokens", "side": "both", "combine": "longer"}
    assert filled["steps"][2]["keep"]["max"] == 300
    assert filled["steps"][3]["keep"]["min"] == 2
    # a list given whole replaces the base's list
    write(child, "extends: ../defaults/base.yaml\nsteps:\n  - filter: dedupe.v1\n")
    assert [s.component for s in load_recipe(child).steps] == ["dedupe.v1"]
    assert recipe_data(child)["name"] == "base"
    assert base.exists()


def test_filled_recipe_of_a_run_is_the_merged_recipe(tmp_path, pair_files, monkeypatch):
    src, tgt = pair_files(["ein kleines Haus", "ja", "ein Haus"],
                          ["a small house", "yes it is a very long answer", "a house"])
    monkeypatch.chdir(tmp_path)  # the input paths below are relative to where the run starts
    write(tmp_path / "defaults" / "base.yaml", BASE.replace("data/base.de", src.name)
          .replace("data/base.en", tgt.name))
    child = write(tmp_path / "mine" / "child.yaml",
                  "extends: ../defaults/base.yaml\nname: child\noutput: {dir: out}\n")
    assert main(["run", str(child)]) == 0
    filled = (tmp_path / "out" / "recipe.filled.yaml").read_text(encoding="utf-8")
    assert "extends" not in filled and "name: child" in filled and "max: 2.0" in filled
    assert (tmp_path / "out" / "corpus.src").read_text(encoding="utf-8").splitlines() == [
        "ein kleines Haus", "ein Haus"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert len(manifest["steps"]) == 3


def test_extends_chain_nearest_layer_wins(tmp_path):
    write(tmp_path / "a" / "grand.yaml", BASE)
    write(tmp_path / "a" / "b" / "mid.yaml", "extends: ../grand.yaml\nname: mid\nseed: 8\n"
          "steps[1]:\n  keep: {max: 2.5}\n")
    child = write(tmp_path / "child.yaml", "extends: a/b/mid.yaml\nname: child\n"
                  "steps[1]:\n  with: {unit: tokens}\n")
    r = load_recipe(child)
    assert (r.name, r.seed) == ("child", 8)
    filled = r.filled()
    assert filled["steps"][1]["keep"]["max"] == 2.5
    assert filled["steps"][1]["with"] == {"unit": "tokens"}
    assert filled["input"]["src"] == "data/base.de"


def test_extends_cycle_is_refused(tmp_path):
    a = write(tmp_path / "a.yaml", "extends: sub/b.yaml\nname: a\n")
    write(tmp_path / "sub" / "b.yaml", "extends: ../a.yaml\nname: b\n")
    assert errors_of(a) == [f"{tmp_path / 'sub' / 'b.yaml'}: extends: ../a.yaml makes a cycle "
                            f"(a.yaml -> b.yaml -> a.yaml)"]
    me = write(tmp_path / "me.yaml", "extends: me.yaml\nname: me\n")
    assert errors_of(me) == [f"{me}: extends: me.yaml makes a cycle (me.yaml -> me.yaml)"]


def test_bad_value_names_the_file_and_key_path_where_it_was_written(tmp_path):
    base = write(tmp_path / "defaults" / "base.yaml", BASE.replace("{unit: chars}",
                                                                   "{unit: charz}"))
    child = write(tmp_path / "child.yaml", """extends: defaults/base.yaml
output: {formats: [plian]}
steps[-1]:
  keep: {max: -1, min: 3}
steps+:
  - filter: length.v1
    with: {unti: chars}
    keep: {min: 1}
""")
    lines = errors_of(child)
    assert f"{base}: steps[1].with.unit: Input should be 'tokens' or 'chars' (got 'charz')" \
        in lines
    assert any(ln.startswith(f"{child}: output.formats[0]: ") for ln in lines), lines
    assert any(ln.startswith(f"{child}: steps[-1].keep: ") and "min (3.0) is greater" in ln
               for ln in lines), lines
    assert f"{child}: steps+[0].with.unti: unknown field; did you mean unit?" in lines
    assert len(lines) == 4, lines
    # a required field nobody wrote is the user's recipe's to give
    write(base, BASE.replace("input: {src: data/base.de, tgt: data/base.en}\n", ""))
    write(child, "extends: defaults/base.yaml\n")
    assert errors_of(child) == [f"{child}: input: required field missing (a recipe with steps "
                                f"or evaluate needs an input and an output)"]


def test_bad_extends_entries(tmp_path):
    write(tmp_path / "base.yaml", BASE)
    cases = {
        "extends: nothere.yaml\n": "extends: nothere.yaml: no such recipe file",
        "extends: [base.yaml]\n": "extends: expected the path of a recipe file",
        "extends: base.yaml\nsteps[3]: {keep: {max: 1}}\n":
            "steps[3]: the base's steps has 3 items (0 to 2, or -1 for the last)",
        "extends: base.yaml\nseed+: [1]\n": "seed+: ",
        "extends: base.yaml\nsteps+: {filter: dedupe.v1}\n": "steps+: expected a list",
        "extends: base.yaml\nsteps: []\nsteps+: []\n": "steps+: steps is also given whole",
    }
    for text, expected in cases.items():
        child = write(tmp_path / "child.yaml", text)
        lines = errors_of(child)
        assert len(lines) == 1 and lines[0].startswith(f"{child}: {expected}"), (text, lines)
    write(tmp_path / "list.yaml", "- a\n- b\n")
    child = write(tmp_path / "child.yaml", "extends: list.yaml\n")
    assert errors_of(child) == [f"{tmp_path / 'list.yaml'}: a recipe is a YAML mapping "
                                f"(extended by {child})"]


def test_cli_error_names_the_base_file_and_writes_nothing(tmp_path, capsys):
    base = write(tmp_path / "base.yaml", BASE.replace("keep: {max: 2.0}", "keep: {maks: 2.0}"))
    child = write(tmp_path / "child.yaml", f"extends: base.yaml\noutput: {{dir: {tmp_path}/o}}\n")
    assert main(["run", str(child)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bitextforge: error: {base}: steps[1].keep.maks: unknown field; did you "
                   f"mean max?"]
    assert not (tmp_path / "o").exists()


DEFAULTS = sorted((ROOT / "recipes" / "defaults").glob("*.yaml"))


@pytest.mark.parametrize("default", DEFAULTS, ids=[p.stem for p in DEFAULTS])
def test_each_default_runs_as_its_header_says_on_a_slice(default, tmp_path, monkeypatch):
    """The example in each default's header, with the shared data where this machine has it, on
    the first 400 rows: it validates, runs, and writes a merged filled recipe."""
    pytest.importorskip("ftfy")
    header = re.search(r"^#   # my-\S+\.yaml.*?\n(.*?)\n#\n#   bitextforge run", default.read_text(
        encoding="utf-8"), re.S | re.M)
    assert header, f"{default}: no runnable example in the header"
    example = "\n".join(ln[4:] for ln in header.group(1).splitlines())
    assert "extends: recipes/defaults/" in example and "../shared/data/" in example
    shared(re.search(r"\.\./shared/data/(\S+)", example).group(1))
    monkeypatch.chdir(ROOT)  # as the header says: run from the repository root
    text = (example.replace("../shared/data/", f"{SHARED}/")
            .replace("dir: runs/", f"dir: {tmp_path}/runs/")
            .replace("extends: recipes/", f"extends: {ROOT}/recipes/"))
    child = write(tmp_path / "my.yaml", text)
    recipe = load_recipe(child, ["input.limit=400"])
    assert recipe.steps[-1].component == "language_id.v1"
    assert recipe.steps[-1].keep.words and recipe.name.startswith("my-")
    assert main(["run", str(child), "--set", "input.limit=400"]) == 0
    out = tmp_path / "runs" / recipe.name
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    kept = (out / "corpus.src").read_text(encoding="utf-8").splitlines()
    assert 0 < len(kept) < 400 and manifest["steps"][5]["component"] == "hardrules.v1"
    filled = (out / "recipe.filled.yaml").read_text(encoding="utf-8")
    assert "extends" not in filled and "hardrules.v1" in filled


#: pair -> hand-made clean pairs that name brands and people written in CamelCase, and one pair
#: with a glued navigation menu on the English side
NAMES = {
    "de-en": [("Der Sänger hat am Montag ein neues Video auf YouTube veröffentlicht.",
               "The singer published a new video on YouTube on Monday."),
              ("Raymond McCord sagte, er werde das Urteil mit seinen Anwälten prüfen.",
               "Raymond McCord said he would study the ruling with his lawyers."),
              ("Sie hat in der Stadt eine neue Küchenmaschine von KitchenAid gekauft.",
               "She bought a new KitchenAid food processor in the town.")],
    "en-fr": [("The singer published a new video on YouTube on Monday.",
               "Le chanteur a publié lundi une nouvelle vidéo sur YouTube."),
              ("Raymond McCord said he would study the ruling with his lawyers.",
               "Raymond McCord a déclaré qu'il étudierait le jugement avec ses avocats."),
              ("She bought a new KitchenAid food processor in the town.",
               "Elle a acheté un nouveau robot de cuisine KitchenAid en ville.")],
    "en-cs": [("The singer published a new video on YouTube on Monday.",
               "Zpěvák v pondělí zveřejnil na YouTube nové video."),
              ("Raymond McCord said he would study the ruling with his lawyers.",
               "Raymond McCord řekl, že rozsudek prostuduje se svými právníky."),
              ("She bought a new KitchenAid food processor in the town.",
               "Ve městě si koupila nový kuchyňský robot KitchenAid.")],
    "en-ja": [("The singer published a new video on YouTube on Monday.",
               "その歌手は月曜日にYouTubeで新しい動画を公開した。"),
              ("Raymond McCord said he would study the ruling with his lawyers.",
               "レイモンド・マッコード氏は、判決を弁護士と検討するつもりだと述べた。"),
              ("She bought a new KitchenAid food processor in the town.",
               "彼女は町でKitchenAidの新しいフードプロセッサーを買った。")],
    "ja-en": [("その歌手は月曜日にYouTubeで新しい動画を公開した。",
               "The singer published a new video on YouTube on Monday."),
              ("レイモンド・マッコード氏は、判決を弁護士と検討するつもりだと述べた。",
               "Raymond McCord said he would study the ruling with his lawyers."),
              ("彼女は町でKitchenAidの新しいフードプロセッサーを買った。",
               "She bought a new KitchenAid food processor in the town.")],
}
MENU = {"de-en": ("Willkommen auf unserer Seite, schön, dass Sie da sind.",
                  "Welcome to our page HomeAboutContactImprint today."),
        "en-fr": ("Welcome to our page HomeAboutContactImprint today.",
                  "Bienvenue sur notre page, nous sommes heureux de vous voir."),
        "en-cs": ("Welcome to our page HomeAboutContactImprint today.",
                  "Vítejte na naší stránce, jsme rádi, že jste tady."),
        "en-ja": ("Welcome to our page HomeAboutContactImprint today.",
                  "私たちのページへようこそ。お越しいただきありがとうございます。"),
        "ja-en": ("私たちのページへようこそ。お越しいただきありがとうございます。",
                  "Welcome to our page HomeAboutContactImprint today.")}


@pytest.mark.parametrize("default", DEFAULTS, ids=[p.stem for p in DEFAULTS])
def test_each_default_keeps_names_written_in_camel_case(default, tmp_path):
    """Run on the whole shared files, bicleaner-hardrules 2.10.8's glued_words rejected clean
    news and captions for a name such as YouTube, McCord or KitchenAid (0.14 % of Multi30k
    en-cs, 1-2.5 % of WMT newstest en-ja); the defaults ask for three glued words, so hand-made
    pairs naming them are kept and a glued menu is still rejected, by glued_words.v1."""
    pytest.importorskip("ftfy")
    rows = NAMES[default.stem] + [MENU[default.stem]]
    data = write(tmp_path / "pairs.tsv", "".join(f"{s}\t{t}\n" for s, t in rows))
    child = write(tmp_path / "my.yaml", f"extends: {default}\nname: my\n"
                  f"input: {{path: {data}, format: tsv, columns: [src, tgt]}}\n"
                  f"output: {{dir: {tmp_path}/out}}\n")
    assert main(["run", str(child)]) == 0
    kept = (tmp_path / "out" / "corpus.src").read_text(encoding="utf-8").splitlines()
    assert kept == [s for s, _ in NAMES[default.stem]]
    rejected = (tmp_path / "out" / "rejected.tsv").read_text(encoding="utf-8").splitlines()
    assert len(rejected) == 2 and "glued_words.v1" in rejected[1].split("\t")[-2]


PARACRAWL = [p for p in DEFAULTS if "paracrawl-human-eval" in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("default", PARACRAWL, ids=[p.stem for p in PARACRAWL])
def test_the_other_files_a_header_names_run_with_its_set_lines(default, tmp_path, monkeypatch):
    """The en-fr and en-cs headers name the 8-column ParaCrawl files (v6, v6-2, v7) and the
    ``--set`` lines they need; without them the run stops at line 1 (8 fields, expected 9).
    The header's example plus those lines runs on the first 200 rows of the file named."""
    pytest.importorskip("ftfy")
    text = default.read_text(encoding="utf-8")
    example = "\n".join(ln[4:] for ln in re.search(
        r"^#   # my-\S+\.yaml.*?\n(.*?)\n#\n#   bitextforge run", text, re.S | re.M
    ).group(1).splitlines())
    sets = [s.strip().strip("'") for s in re.findall(r"^#   --set (.+)$", text, re.M)]
    assert sets and any(s.startswith("input.columns=") for s in sets)
    shared(re.search(r"\.\./shared/data/(\S+)", " ".join(sets)).group(1))
    sets = [s.replace("../shared/data/", f"{SHARED}/") for s in sets]
    monkeypatch.chdir(ROOT)
    child = write(tmp_path / "my.yaml", example.replace("dir: runs/", f"dir: {tmp_path}/runs/")
                  .replace("extends: recipes/", f"extends: {ROOT}/recipes/"))
    args = ["run", str(child), "--set", "input.limit=200"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    out = next((tmp_path / "runs").iterdir())
    assert 0 < len((out / "corpus.src").read_text(encoding="utf-8").splitlines()) < 200
