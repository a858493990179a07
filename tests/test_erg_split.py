"""Nichols et al.'s section 5.2 bitext sentence splitting: the pure functions, the component's
batch interface and the ``bitextforge nichols-split`` command, on small texts written here (and
the first lines of the shared Tanaka corpus when present)."""

import gzip

import pytest

from bitextforge.cli.main import main
from bitextforge.plugins.erg import NicholsSplit, split_pair, split_sentences

from conftest import read_lines, shared


def test_split_on_final_punctuation_and_rejoin_titles():
    assert split_sentences("Mr. Smith came. He sat down! Did he?") == [
        "Mr. Smith came.", "He sat down!", "Did he?"]
    assert split_sentences("Ask Dr. Jones and Mrs. Brown. Ms. Lee agrees.") == [
        "Ask Dr. Jones and Mrs. Brown.", "Ms. Lee agrees."]
    assert split_sentences("It costs 3.5 dollars. Really?!  \"Yes.\" OK") == [
        "It costs 3.5 dollars.", "Really?!", "\"Yes.\"", "OK"]
    assert split_sentences("雨が降った。寒かった！本当？") == ["雨が降った。", "寒かった！", "本当？"]
    assert split_sentences("i met mr . smith . he smiled .") == ["i met mr . smith .",
                                                                  "he smiled ."]
    assert split_sentences("   ") == [] and split_sentences("No end") == ["No end"]
    # a title the user did not list is an ordinary sentence end
    assert split_sentences("Ask Prof. Kim.") == ["Ask Prof.", "Kim."]
    assert split_sentences("Ask Prof. Kim.", titles=["Prof."]) == ["Ask Prof. Kim."]


def test_pairs_split_only_with_equal_counts():
    assert split_pair("雨が降った。寒かった。", "It rained. It was cold.") == [
        ("雨が降った。", "It rained."), ("寒かった。", "It was cold.")]
    whole = ("雨が降って寒かった。", "It rained. It was cold.")
    assert split_pair(*whole) == [whole]
    assert split_pair("Mr. Smith came.", "Mr. Smith kam.") == [("Mr. Smith came.",
                                                                "Mr. Smith kam.")]


def test_component_split_batch_and_refused_paraphrase_step():
    from bitextforge import RecipeError, Splitter
    from bitextforge.recipe.load import parse_recipe

    comp = NicholsSplit()
    assert isinstance(comp, Splitter)
    batch = {"src": ["A. B.", "C."], "tgt": ["a. b.", "c. d."]}
    assert comp.split(batch) == [[("A.", "a."), ("B.", "b.")], [("C.", "c. d.")]]
    # a splitter is not a paraphraser: naming it in a paraphrase step fails validation
    text = """name: s
input: {src: a, tgt: b}
output: o
steps:
  - paraphrase: nichols_split.v1
    side: tgt
"""
    with pytest.raises(RecipeError, match=r"steps\[0\] \(nichols_split\).paraphrase: unknown "
                       r"paraphraser 'nichols_split.v1'"):
        parse_recipe(text, "r.yaml")


def test_cli_splits_files(tmp_path, capsys):
    src, tgt = tmp_path / "a.ja", tmp_path / "a.en.gz"
    src.write_text("雨が降った。寒かった。\n一文だけ。\n", encoding="utf-8")
    with gzip.open(tgt, "wt", encoding="utf-8") as fh:
        fh.write("It rained. It was cold.\nOne sentence. Two here.\n")
    rc = main(["nichols-split", str(src), str(tgt), str(tmp_path / "o.ja"),
               str(tmp_path / "o.en")])
    assert rc == 0
    assert (tmp_path / "o.ja").read_text(encoding="utf-8").splitlines() == [
        "雨が降った。", "寒かった。", "一文だけ。"]
    assert (tmp_path / "o.en").read_text(encoding="utf-8").splitlines() == [
        "It rained.", "It was cold.", "One sentence. Two here."]
    assert "2 pairs read, 1 split, 3 pairs written" in capsys.readouterr().out
    (tmp_path / "short.en").write_text("one\n", encoding="utf-8")
    rc = main(["nichols-split", str(src), str(tmp_path / "short.en"), str(tmp_path / "x"),
               str(tmp_path / "y")])
    assert rc == 2 and "line-aligned" in capsys.readouterr().err


def test_tanaka_is_mostly_split_already():
    # the paper: "most of the data in the Tanaka Corpus has already been split"
    en = read_lines(shared("small_parallel_enja", "train.en"), 2000)
    ja = read_lines(shared("small_parallel_enja", "train.ja"), 2000)
    split = sum(len(split_pair(j, e)) > 1 for j, e in zip(ja, en))
    assert split < 0.05 * len(en)


def test_split_step_in_a_recipe(tmp_path):
    """The core's split: step replaces rows by their pieces, with fresh ids and source_id."""
    from bitextforge.recipe.load import parse_recipe
    from bitextforge.api import run_recipe

    (tmp_path / "a.ja").write_text("雨が降った。寒かった。\n一文だけ。\n犬だ。\n", encoding="utf-8")
    (tmp_path / "a.en").write_text("It rained. It was cold.\nOne sentence. Two here.\n"
                                   "A dog.\n", encoding="utf-8")
    text = f"""name: split
input: {{src: '{tmp_path}/a.ja', tgt: '{tmp_path}/a.en'}}
output: '{tmp_path}/out'
progress: false
steps:
  - split: nichols_split.v1
  - filter: length.v1
    keep: {{max: 3}}
"""
    res = run_recipe(parse_recipe(text, "r.yaml"))
    rows = [ln.split("\t") for ln in (tmp_path / "out" / "corpus.tsv").read_text(
        encoding="utf-8").splitlines()]
    head = rows[0]
    got = [dict(zip(head, r)) for r in rows[1:]]
    assert [(r["id"], r["source_id"], r["origin"], r["tgt"]) for r in got] == [
        ("0", "0", "nichols_split.v1", "It rained."), ("1", "0", "nichols_split.v1", "It was cold."),
        ("3", "2", "input", "A dog.")]
    assert res.rejected == 1  # "One sentence. Two here." stayed whole and is too long


def test_split_step_must_come_first():
    from bitextforge import RecipeError
    from bitextforge.recipe.load import parse_recipe

    text = """name: s
input: {src: a, tgt: b}
output: o
steps:
  - weight: distributed.v1
  - split: nichols_split.v1
"""
    with pytest.raises(RecipeError, match=r"steps\[1\] \(nichols_split\): split steps must come before"):
        parse_recipe(text, "r.yaml")
    with pytest.raises(RecipeError, match=r"steps\[0\] \(erg\).split: unknown splitter 'erg.v1'"):
        parse_recipe(text.replace("  - weight: distributed.v1\n", "").replace(
            "nichols_split.v1", "erg.v1"), "r.yaml")
