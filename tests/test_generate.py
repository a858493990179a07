"""Several inputs, monolingual ones among them, and generate steps that fill their empty side
(back-translation, Sennrich et al. 2016; Edunov et al. 2018's decodings; Caswell et al. 2019's
tags): reading, validation errors, tags, ratios, repeats, candidates, rejected sentences,
repetition-loop counts, and a real model through both backends."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from bitextforge import Generator, Paraphraser
from bitextforge.errors import RecipeError
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe
from bitextforge.pipeline.executors import repetition_loop
from bitextforge.testing import run_recipe_with

from conftest import read_lines, read_tsv, shared
from test_resume import cli, kill_after_shards, plugin_env  # noqa: F401 - plugin_env: a fixture


class UpperGenerator(Generator):
    """A test generator: the text upper-cased, and for k > 1 also reversed word order; nothing for
    sentences containing 'fail', a loop for sentences containing 'loop'."""

    name = "upper_test.v1"

    class Config(Generator.Config):
        k: int = 1

    def generate(self, sentences):
        out = []
        for s in sentences:
            if "fail" in s:
                out.append([])
            elif "loop" in s:
                out.append([("la la la la la", -3.0)])
            else:
                cands = [(s.upper(), -0.5), (" ".join(reversed(s.split())), -1.0)]
                out.append(cands[: self.config.k])
        return out

    def describe(self):
        return f"upper_test.v1 k={self.config.k}"


@pytest.fixture
def reg(bitextforge_plugin):
    return bitextforge_plugin(UpperGenerator, name="gen-test")


@pytest.fixture
def files(tmp_path):
    (tmp_path / "b.de").write_text("eins\nzwei\ndrei\n", encoding="utf-8")
    (tmp_path / "b.en").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (tmp_path / "m.en").write_text("a dog runs\nfail here\nthe cat\nloop me\nbirds fly\n",
                                   encoding="utf-8")
    (tmp_path / "m.tsv").write_text("tgt\tdomain\nhello there\tweb\n", encoding="utf-8")
    return tmp_path


def recipe(files, inputs: str, steps: str = "", extra: str = "", reg=None):
    text = (f"name: t\ninput:\n{inputs}\nsteps:\n{steps or '  []'}\n"
            f"output: {{dir: {files / 'out'}, shard_size: null}}\nprogress: false\n{extra}")
    return parse_recipe(text, "t.yaml", registry=reg)


BT = "  - generate: upper_test.v1\n    side: src\n"


def bitext_and_mono(files) -> str:
    """The inputs most tests here read: the three pairs (name bitext) and the English lines
    (name mono)."""
    return (f"  - {{name: bitext, src: {files}/b.de, tgt: {files}/b.en}}\n"
            f"  - {{name: mono, tgt: {files}/m.en}}")


def test_inputs_stream_in_order_with_names_repeats_weights_and_ratio(files, reg):
    r = recipe(files, f"""  - {{name: bitext, src: {files}/b.de, tgt: {files}/b.en, repeat: 2, weight: 2}}
  - {{name: mono, tgt: {files}/m.en, max_ratio: 0.5}}""", BT, reg=reg)
    res = run_recipe(r)
    rows = read_tsv(files / "out" / "corpus.tsv")
    assert [r["origin"] for r in rows] == ["bitext"] * 6 + ["mono"] * 2
    assert [r["id"] for r in rows] == ["0", "1", "2", "3", "4", "5", "6", "8"]  # fresh ids
    assert [r["weight"] for r in rows] == ["2"] * 6 + ["1"] * 2
    # max_ratio 0.5 of the 6 two-sided rows read before it: the first 3 monolingual lines, of
    # which the generator gave no text for one (rejected, with the step's name)
    assert [r["tgt"] for r in rows[6:]] == ["a dog runs", "the cat"]
    assert [r["tgt"] for r in read_tsv(files / "out" / "rejected.tsv")] == ["fail here"]
    inputs = res.manifest["input"]["inputs"]
    assert [(i["name"], i["rows"], i["side"]) for i in inputs] == [("bitext", 6, "both"),
                                                                   ("mono", 3, "tgt")]


def test_generate_fills_only_empty_sides_tags_and_rejects_with_reason(files, reg):
    steps = BT + "    tag: <BT>\n    with: {k: 2}\n"
    r = recipe(files, bitext_and_mono(files), steps, reg=reg)
    res = run_recipe(r)
    rows = read_tsv(files / "out" / "corpus.tsv")
    bitext = [r for r in rows if r["origin"] == "bitext"]
    assert [r["src"] for r in bitext] == ["eins", "zwei", "drei"]  # real pairs untouched
    assert {r["generated_by"] for r in bitext} == {""}
    mono = [r for r in rows if r["origin"] == "mono"]
    assert [(r["id"], r["variant"], r["src"]) for r in mono[:2]] == [
        ("3", "0", "<BT> A DOG RUNS"), ("3", "1", "<BT> runs dog a")]
    assert all(r["generated_by"] == "upper_test.v1 k=2 tag=<BT>" for r in mono)
    assert all(r["src"].startswith("<BT> ") for r in mono)
    rejected = read_tsv(files / "out" / "rejected.tsv")
    assert [(r["tgt"], r["rejected_by"]) for r in rejected] == [
        ("fail here", "steps[0]:upper_test.v1: no output")]
    step = res.manifest["steps"][0]
    assert step["counts"]["sentences"] == 5 and step["counts"]["without_output"] == 1
    assert step["counts"]["repetition_loops"] == 1
    assert any("repetition loop" in w for w in res.manifest["warnings"])


def test_later_steps_score_generated_text_without_its_tag(files, reg):
    """The tag goes in front of the written text only: a filter after a tagged generate step
    measures the sentence itself (a 3-word back-translation passes max 3 words, which it would
    not with the tag counted), and the written corpus carries the tag and the src_tag column."""
    steps = BT + ("    tag: <BT>\n  - filter: length.v1\n    with: {side: src}\n"
                  "    origins: [mono]\n    keep: {max: 3}\n")
    r = recipe(files, bitext_and_mono(files), steps, reg=reg)
    run_recipe(r)
    rows = read_tsv(files / "out" / "corpus.tsv")
    mono = [(r["src"], r["src_tag"]) for r in rows if r["origin"] == "mono"]
    assert mono == [("<BT> A DOG RUNS", "<BT>"), ("<BT> THE CAT", "<BT>"),
                    ("<BT> BIRDS FLY", "<BT>")]
    assert {r["src_tag"] for r in rows if r["origin"] == "bitext"} == {""}
    src_lines = (files / "out" / "corpus.src").read_text(encoding="utf-8").splitlines()
    assert "<BT> A DOG RUNS" in src_lines and "eins" in src_lines
    rejected = read_tsv(files / "out" / "rejected.tsv")
    assert ("<BT> la la la la la", "steps[1]:length.v1") in [
        (r["src"], r["rejected_by"].split(" ")[0]) for r in rejected]


def test_an_input_tag_marks_that_input_s_rows_on_its_side(files, reg):
    """`tag: {tgt: <LEX>}` on one input puts the token in front of that input's English in the
    written corpus (both files and the tgt_tag column), not in front of the other input's rows,
    and not in what the steps score (a 3-word filter on tgt keeps a 3-word tagged sentence); the
    side the generate step fills gets no tag. A tag with a space is refused with its key."""
    inputs = (f"  - {{name: bitext, src: {files}/b.de, tgt: {files}/b.en}}\n"
              f"  - {{name: mono, tgt: {files}/m.en, tag: {{tgt: <LEX>}}}}")
    steps = BT + "  - filter: length.v1\n    with: {side: tgt}\n    keep: {max: 3}\n"
    run_recipe(recipe(files, inputs, steps, reg=reg))
    rows = read_tsv(files / "out" / "corpus.tsv")
    mono = [(r["src"], r["tgt"], r["tgt_tag"]) for r in rows if r["origin"] == "mono"]
    assert ("A DOG RUNS", "<LEX> a dog runs", "<LEX>") in mono
    assert all(t == "<LEX>" and not s.startswith("<") for s, _, t in mono)
    assert {(r["tgt_tag"], r["tgt"].startswith("<")) for r in rows
            if r["origin"] == "bitext"} == {("", False)}
    tgt_lines = (files / "out" / "corpus.tgt").read_text(encoding="utf-8").splitlines()
    assert "<LEX> a dog runs" in tgt_lines and "one" in tgt_lines
    with pytest.raises(RecipeError, match=r"input\[1\]\.tag\.tgt: String should match") as exc:
        recipe(files, inputs.replace("<LEX>", "'<L X>'"), steps, reg=reg)
    # only the entry's error: not the one-mapping branch's "should be a valid dictionary"
    assert len(str(exc.value).splitlines()) == 1


def test_monolingual_tsv_and_random_sample(files, reg):
    r = recipe(files, f"""  - {{name: web, path: {files}/m.tsv, side: tgt, header: true}}
  - {{name: mono, tgt: {files}/m.en, limit: 2, sample: random}}""", BT, reg=reg)
    run_recipe(r)
    rows = read_tsv(files / "out" / "corpus.tsv")
    assert rows[0]["tgt"] == "hello there" and rows[0]["domain"] == "web"
    assert rows[0]["src"] == "HELLO THERE"
    sample = [r["tgt"] for r in rows[1:]]
    assert len(sample) == 2 and set(sample) <= set((files / "m.en").read_text().splitlines())
    run_recipe(r)  # the same seed draws the same sample
    assert [r["tgt"] for r in read_tsv(files / "out" / "corpus.tsv")[1:]] == sample


def test_skip_and_limit_slice_an_input(files, reg):
    r = recipe(files, f"  {{src: {files}/b.de, tgt: {files}/b.en, skip: 1, limit: 1}}", reg=reg)
    run_recipe(r)
    assert (files / "out" / "corpus.src").read_text() == "zwei\n"


@pytest.mark.parametrize("inputs, message", [
    ("  - {{src: {f}/b.de, tgt: {f}/b.en}}",
     "input[0].name: required field missing"),
    ("  - {{name: a, src: {f}/b.de, tgt: {f}/b.en}}\n  - {{name: a, tgt: {f}/m.en}}",
     "input[1].name: 'a' is also the name of input[0]"),
    ("  - {{name: a, src: {f}/b.de, tgt: {f}/b.en}}\n  - {{name: mono, tgt: {f}/m.en}}",
     "input[1]: input 'mono' holds tgt text only, and no generate step fills its empty src"),
    ("  {{tgt: {f}/m.en}}", "input: input 'input' holds tgt text only"),
])
def test_validation_refuses_unfillable_and_unnamed_inputs(files, reg, inputs, message):
    with pytest.raises(RecipeError) as exc:
        recipe(files, inputs.format(f=files), reg=reg)
    assert message in str(exc.value)
    assert str(exc.value).startswith("t.yaml: ")


def test_generate_must_fill_the_side_that_is_empty(files, reg):
    """A generate step filling tgt does not fill a target-monolingual input's empty src."""
    with pytest.raises(RecipeError, match="no generate step fills its empty src"):
        recipe(files, f"  - {{name: mono, tgt: {files}/m.en}}",
               "  - generate: upper_test.v1\n    side: tgt\n", reg=reg)


def test_generate_steps_can_fill_some_origins_only(files, reg):
    """One English text read twice and back-translated two ways (Edunov et al. 2018's beam and
    samples mixed): each generate step with `origins:` fills its input's rows only and leaves
    the other's empty rows to the next step; the real pairs pass both."""
    inputs = bitext_and_mono(files) + f"\n  - {{name: mono2, tgt: {files}/m.en}}"
    steps = (BT + "    origins: [mono]\n" + BT + "    origins: [mono2]\n    as: upper2_score\n"
             "    with: {k: 2}\n")
    run_recipe(recipe(files, inputs, steps, reg=reg))
    rows = read_tsv(files / "out" / "corpus.tsv")
    assert [r["src"] for r in rows if r["origin"] == "bitext"] == ["eins", "zwei", "drei"]
    first = [r for r in rows if r["origin"] == "mono"]
    second = [r for r in rows if r["origin"] == "mono2"]
    assert [r["src"] for r in first] == ["A DOG RUNS", "THE CAT", "la la la la la", "BIRDS FLY"]
    assert {r["generated_by"] for r in first} == {"upper_test.v1 k=1"}
    assert [r["src"] for r in second][:2] == ["A DOG RUNS", "runs dog a"]
    assert {r["generated_by"] for r in second} == {"upper_test.v1 k=2"}
    rejected = [r["rejected_by"] for r in read_tsv(files / "out" / "rejected.tsv")]
    assert rejected == ["steps[0]:upper_test.v1: no output", "steps[1]:upper_test.v1: no output"]


def test_validation_refuses_an_input_no_generate_step_takes(files, reg):
    """An input that every generate step's `origins:` leaves out would keep its empty side."""
    inputs = bitext_and_mono(files) + f"\n  - {{name: mono2, tgt: {files}/m.en}}"
    with pytest.raises(RecipeError) as exc:
        recipe(files, inputs, BT + "    origins: [mono]\n", reg=reg)
    assert str(exc.value) == (
        "t.yaml: input[2]: input 'mono2' holds tgt text only, and no generate step fills its "
        "empty src side (the generate steps that fill src have `origins:` without 'mono2'), so "
        "the output would hold rows with an empty side")
    with pytest.raises(RecipeError, match=r"steps\[0\] \(\w+\)\.origins: 'mono3' is not the name of "
                       r"an input"):
        recipe(files, inputs, BT + "    origins: [mono, mono2, mono3]\n", reg=reg)


def test_one_input_recipes_keep_their_filled_form(files, reg):
    """Options added for several inputs stay out of a one-input recipe's filled copy while they
    hold their defaults, so the signatures of existing recipes do not change."""
    r = recipe(files, f"  {{src: {files}/b.de, tgt: {files}/b.en}}", reg=reg)
    assert set(r.filled()["input"]) == {"format", "src", "tgt", "path", "columns", "header",
                                        "extra_fields", "extra_fields_policy",
                                        "on_invalid_utf8", "limit"}


@pytest.mark.parametrize("text, loop", [
    ("the the the the", True), ("a man , a man , a man , a man ,", True),
    ("a dog runs in the park", False), ("no no no", False)])
def test_repetition_loop(text, loop):
    assert repetition_loop(text) is loop


# -- a real model ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reverse_model(tmp_path_factory):
    """A tiny en->de Marian model trained for a few updates (the reverse model of
    back-translation)."""
    pytest.importorskip("ctranslate2")
    from bitextforge.plugins.nmt.train import TrainOptions, train

    de = read_lines(shared("multi30k", "train.de.gz"), 300)
    en = read_lines(shared("multi30k", "train.en.gz"), 300)
    d = tmp_path_factory.mktemp("rev")
    (d / "t.de").write_text("\n".join(de) + "\n", encoding="utf-8")
    (d / "t.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    train(TrainOptions(src_train=str(d / "t.en"), tgt_train=str(d / "t.de"), src_lang="en",
                       tgt_lang="de", output=str(d / "model"), max_steps=12, vocab_size=400,
                       d_model=32, layers=1, heads=2, ffn_dim=64, batch_tokens=600, lr=3e-3,
                       warmup=5, min_warmup_steps=0, threads=1, max_len=24),
          log=lambda m: None)
    return d


@pytest.mark.parametrize("backend", ["ctranslate2", "transformers"])
@pytest.mark.parametrize("decoding", ["beam", "sample", "noised"])
def test_translate_generates_k_outputs_with_both_backends(tmp_path, reverse_model, backend,
                                                          decoding):
    d = reverse_model
    (tmp_path / "mono.en").write_text("A man is walking.\nTwo dogs play in the snow.\n")
    opts = {"beam": "{beam: 4, k: 3}", "sample": "{sampling: true, top_k: 10, k: 3}",
            "noised": "{beam: 4, k: 1, noise: {}}"}[decoding]
    with_ = dict(model=str(d / "model"), backend=backend, max_length=24, threads=1)
    with_.update(yaml.safe_load(opts))  # the decoding's options
    r = parse_recipe(f"""name: bt
input: {{tgt: {tmp_path}/mono.en}}
steps:
  - generate: translate.v1
    side: src
    with: {json.dumps(with_)}
output: {{dir: {tmp_path}/out}}
progress: false
""", "bt.yaml")
    res = run_recipe(r)
    rows = read_tsv(tmp_path / "out" / "corpus.tsv")
    per = {}
    for row in rows:
        per.setdefault(row["id"], []).append(row)
    assert set(per) == {"0", "1"}
    want = 1 if decoding == "noised" else 3
    for group in per.values():
        assert 1 <= len(group) <= want  # duplicates of an earlier output are dropped
        assert [g["variant"] for g in group] == [str(i) for i in range(len(group))]
        assert all(g["src"] and float(g["translate_score"]) <= 0 for g in group)
        assert all(g["generated_by"].startswith("translate.v1 model=model ") for g in group)
    assert res.manifest["steps"][0]["counts"]["sentences"] == 2


def test_edunov_noise_deletes_fills_and_swaps_within_the_window():
    import random

    from bitextforge.plugins.nmt.generators import Noise, add_noise

    words = [f"w{i}" for i in range(200)]
    out = add_noise(" ".join(words), Noise(), random.Random(1)).split()
    kept = [w for w in out if w != "<BLANK>"]
    assert 0.75 * 200 < len(out) < 0.95 * 200          # about 10 % deleted
    assert 0.05 * 200 < out.count("<BLANK>") < 0.2 * 200  # about 10 % replaced by the filler
    assert kept != sorted(kept, key=lambda w: int(w[1:]))  # some words swapped ...
    # ... none further than the window: a kept word's rank among the kept words moves <= 3 + gaps
    pos = {w: i for i, w in enumerate(out)}
    order = sorted(kept, key=lambda w: int(w[1:]))
    assert all(abs(pos[w] - pos[order[i]]) <= 3 + abs(pos[w] - i) for i, w in enumerate(order))
    assert add_noise("hello", Noise(delete=0.99, filler=0.0), random.Random(3)) == "hello"


def test_filters_can_decide_only_some_origins(files, reg):
    """A filter with `origins:` scores and decides the back-translated rows only; the bitext
    passes with an empty score."""
    steps = BT + ("  - filter: length.v1\n    with: {side: tgt}\n    keep: {min: 3}\n"
                  "    origins: [mono]\n")
    r = recipe(files, bitext_and_mono(files), steps, reg=reg)
    run_recipe(r)
    rows = read_tsv(files / "out" / "corpus.tsv")
    assert [r["tgt"] for r in rows if r["origin"] == "bitext"] == ["one", "two", "three"]
    assert all(r["length"] == "" for r in rows if r["origin"] == "bitext")
    assert [r["tgt"] for r in rows if r["origin"] == "mono"] == ["a dog runs"]
    rejected = {r["tgt"]: r["rejected_by"] for r in read_tsv(files / "out" / "rejected.tsv")}
    assert rejected == {"fail here": "steps[0]:upper_test.v1: no output",
                        "the cat": "steps[1]:length.v1", "loop me": "steps[1]:length.v1",
                        "birds fly": "steps[1]:length.v1"}


class ReverseParaphraser(Paraphraser):
    """A test paraphraser: the words in reverse order."""

    name = "reverse_test.v1"

    def paraphrase(self, sentences):
        return [[(" ".join(reversed(s.split())), -1.0)] for s in sentences]


def test_paraphrase_steps_can_expand_some_origins_only(files, bitextforge_plugin):
    """A paraphrase step with `origins: [bitext]` expands the real pairs and leaves the
    back-translated rows as they are (Nichols-style expansion of the bitext beside BT)."""
    reg = bitextforge_plugin(UpperGenerator, ReverseParaphraser, name="para-origins-test")
    steps = BT + "  - paraphrase: reverse_test.v1\n    side: tgt\n    origins: [bitext]\n"
    r = recipe(files, bitext_and_mono(files), steps, reg=reg)
    res = run_recipe(r)
    rows = read_tsv(files / "out" / "corpus.tsv")
    made = [(r["variant"], r["tgt"]) for r in rows if r["origin"].startswith("reverse_test.v1")]
    assert made == [("1", "one"), ("1", "two"), ("1", "three")]  # one-word targets reversed
    assert [r["variant"] for r in rows if r["origin"] == "mono"] == ["0", "0", "0", "0"]
    assert res.manifest["steps"][1]["counts"]["originals"] == 3
    unscoped = recipe(files, bitext_and_mono(files), steps.replace("    origins: [bitext]\n", ""),
                      reg=reg)
    run_recipe(unscoped)
    rows = read_tsv(files / "out" / "corpus.tsv")
    assert sum(r["origin"].startswith("reverse_test.v1") for r in rows) == 7


def test_origins_that_name_no_input_are_refused(files, reg):
    """A misspelt origin would make the step decide no row at all: refused, with the inputs."""
    steps = BT + ("  - filter: length.v1\n    keep: {min: 3}\n    origins: [mono, mnoo]\n"
                  "  - weight: distributed.v1\n    origins: [bitext]\n")
    with pytest.raises(RecipeError) as err:
        recipe(files, bitext_and_mono(files), steps, reg=reg)
    assert str(err.value) == ("t.yaml: steps[1] (length).origins: 'mnoo' is not the name of an input "
                              "(inputs: bitext, mono)")


def test_opustrainer_configuration_loads_with_opustrainer(files, reg):
    """formats: [.., opustrainer] writes one dataset per origin and a mixing stage with the
    output's proportions; OpusTrainer's own loader reads it, and its datasets hold the corpus."""
    trainer = pytest.importorskip("opustrainer.trainer")
    r = recipe(files, f"""  - {{name: bitext, src: {files}/b.de, tgt: {files}/b.en, repeat: 2}}
  - {{name: mono, tgt: {files}/m.en}}""", BT, reg=reg)
    r.output.formats = ["plain", "tsv", "opustrainer"]
    res = run_recipe(r)
    folder = files / "out" / "opustrainer"
    config = yaml.safe_load((folder / "config.yml").read_text())
    curriculum = trainer.CurriculumV1Loader().load(config, basepath=str(folder))
    mix = {ds.name: w for ds, w in curriculum.stages["mix"].datasets}
    assert mix == pytest.approx({"bitext": 6 / 10, "mono": 4 / 10})  # 6 real, 4 generated rows
    assert curriculum.stages["mix"].until_dataset == "bitext"
    assert (folder / "bitext.tsv").read_text().splitlines()[:2] == ["eins\tone", "zwei\ttwo"]
    assert (folder / "mono.tsv").read_text().splitlines()[0] == "A DOG RUNS\ta dog runs"
    assert res.manifest["output"]["opustrainer"]["datasets"]["mono"]["rows"] == 4


def test_opustrainer_needs_tsv(files, reg):
    with pytest.raises(RecipeError, match="output.formats: opustrainer is made from corpus.tsv"):
        parse_recipe(f"name: t\ninput: {{src: {files}/b.de, tgt: {files}/b.en}}\n"
                     f"output: {{dir: {files}/o, formats: [plain, opustrainer]}}\nsteps: []\n",
                     "t.yaml", registry=reg)


@pytest.mark.long
def test_killed_generation_run_resumes_to_the_same_bytes(tmp_path, reverse_model, plugin_env):
    """Bitext plus monolingual text, sampled back-translation with translate.v1 and a slow
    filter after it, sharded: killed with SIGKILL after a few shards, the resumed run writes the
    same bytes as an uninterrupted one (sampling is seeded per batch, and shards hold whole
    batches)."""
    # 300 bitext pairs (shards 1-2) and 900 monolingual lines (shards 3-8, 1800 sampled
    # translations): the kill after 3 shards falls in the generated part, as it did with 600 and
    # 2400 lines in shards of 300, which decoded 4800 sampled translations per run
    de = read_lines(shared("multi30k", "train.de.gz"), 300)
    en = read_lines(shared("multi30k", "train.en.gz"), 1200)
    (tmp_path / "b.de").write_text("\n".join(de) + "\n", encoding="utf-8")
    (tmp_path / "b.en").write_text("\n".join(en[:300]) + "\n", encoding="utf-8")
    (tmp_path / "m.en").write_text("\n".join(en[300:]) + "\n", encoding="utf-8")
    recipe_file = tmp_path / "bt.yaml"
    recipe_file.write_text(f"""name: bt-resume
input:
  - {{name: bitext, src: '{tmp_path}/b.de', tgt: '{tmp_path}/b.en'}}
  - {{name: mono, tgt: '{tmp_path}/m.en'}}
output: {{dir: unused, shard_size: 150}}
batch_size: 75
progress: false
steps:
  - generate: translate.v1
    side: src
    tag: <BT>
    with: {{model: '{reverse_model}/model', sampling: true, top_k: 10, k: 2, max_length: 24,
            threads: 1}}
  - filter: slow_length_test.v1
    keep: {{min: 10}}
""")
    full, part = tmp_path / "full", tmp_path / "part"
    # the uninterrupted and the resumed runs in this process, which holds the model's libraries
    # already (a command's start imports them again, about 5 s of CPU); the killed run is a
    # command
    slow = importlib.util.spec_from_file_location(
        "slow_test_plugin", Path(plugin_env["PYTHONPATH"]) / "slow_test_plugin.py")
    module = importlib.util.module_from_spec(slow)
    slow.loader.exec_module(module)
    run_recipe_with(module, recipe_file, full)
    kill_after_shards(cli(plugin_env, "run", recipe_file, "-o", part), plugin_env, part)
    resumed = run_recipe_with(module, recipe_file, part)
    assert resumed.manifest["output"]["resumed_shards"] >= 3, resumed.manifest["output"]
    for name in ("corpus.src", "corpus.tgt", "corpus.tsv", "rejected.tsv"):
        assert (part / name).read_bytes() == (full / name).read_bytes(), name
    assert "<BT> " in (full / "corpus.src").read_text()


def test_several_inputs_count_their_rows_ahead_for_the_progress_bar(files):
    """The ETA of a run over several inputs: rows expected from the files (header, skip, limit,
    max_ratio and repeat applied) equal the rows read."""
    from bitextforge.io.corpus import MultiReader
    from bitextforge.recipe.load import InputSpec

    specs = [InputSpec(name="b", src=str(files / "b.de"), tgt=str(files / "b.en"), repeat=3),
             InputSpec(name="m", tgt=str(files / "m.en"), skip=1, max_ratio=0.5),
             InputSpec(name="w", path=str(files / "m.tsv"), side="tgt", header=True)]
    reader = MultiReader(specs, 2)
    rows = sum(len(b["id"]) for b in reader.batches())
    assert reader.expected_rows() == rows == 9 + 4 + 1


def test_marian_weights_cover_synthetic_rows(files, reg):
    """An input's weight reaches every row it gives, generated ones included, and the Marian
    weights file has one line per output row."""
    r = recipe(files, f"""  - {{name: bitext, src: {files}/b.de, tgt: {files}/b.en}}
  - {{name: mono, tgt: {files}/m.en, weight: 0.25}}""", BT + "    with: {k: 2}\n", reg=reg)
    run_recipe(r)
    out = files / "out"
    weights = (out / "corpus.weights").read_text().split()
    src = (out / "corpus.src").read_text().splitlines()
    assert len(weights) == len(src) == 3 + 7  # 2 outputs for 3 sentences, 1 for the loop
    assert [float(w) for w in weights] == [1.0] * 3 + [0.25] * 7


def test_weighters_can_weight_some_origins_only(files, reg):
    """sentence_weights.v1 with origins: [mono] spreads each back-translated sentence's weight
    over its outputs (1/n, Nichols et al.'s future work); the bitext passes once with its own."""
    steps = BT + "    with: {k: 2}\n  - weight: sentence_weights.v1\n    origins: [mono]\n"
    r = recipe(files, f"""  - {{name: bitext, src: {files}/b.de, tgt: {files}/b.en, weight: 3}}
  - {{name: mono, tgt: {files}/m.en}}""", steps, reg=reg)
    run_recipe(r)
    rows = read_tsv(files / "out" / "corpus.tsv")
    assert [(r["src"], r["weight"]) for r in rows if r["origin"] == "bitext"] == [
        ("eins", "3"), ("zwei", "3"), ("drei", "3")]
    mono = [r for r in rows if r["origin"] == "mono" and r["tgt"] == "a dog runs"]
    assert [float(r["weight"]) for r in mono] == [0.5, 0.5]
