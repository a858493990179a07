"""paraphrastic_embeddings.v1: WORD / TRIGRAM embeddings trained on real paraphrase pairs correlate
with similarity judgements, trained on shuffled pairs they do not; the STS Benchmark and SICK
readers; errors naming the file and line."""

from __future__ import annotations

import pytest

from bitextforge import InputError
from bitextforge.plugins.evaluation.paraphrastic import read_similarity_set, trigrams
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import shared

# Word pairs of (near-)equal meaning. Training pairs say the same thing with either word; the
# similarity set pairs a word with its synonym (gold 5) or with another group's word (gold 1), in
# one shared context, so only what training taught about the words can separate the two.
SYNONYMS = [("car", "automobile"), ("big", "large"), ("quick", "fast"), ("sofa", "couch"),
            ("child", "kid"), ("shop", "store"), ("happy", "glad"), ("film", "movie"),
            ("road", "street"), ("doctor", "physician"), ("gift", "present"), ("rock", "stone")]
CONTEXTS = ["i saw the", "she likes the", "we need a", "there is a", "look at that",
            "he talked about the"]


def _write_sts(path, rows):
    path.write_text("".join(f"g\tf\ty\t{i:04d}\t{s}\t{a}\t{b}\n" for i, (s, a, b) in
                            enumerate(rows)), encoding="utf-8")


def _recipe(tmp_path, src, tgt, sts, **extra):
    (tmp_path / "a.txt").write_text("".join(x + "\n" for x in src), encoding="utf-8")
    (tmp_path / "b.txt").write_text("".join(x + "\n" for x in tgt), encoding="utf-8")
    opts = {"benchmarks": {"toy": str(sts)}, "dim": 50, "epochs": 30, "batch_size": 10,
            "megabatch": 3, "seed": 7, **extra}
    return parse_recipe(f"""
name: pe
input: {{src: '{tmp_path / "a.txt"}', tgt: '{tmp_path / "b.txt"}'}}
evaluate:
  - evaluator: paraphrastic_embeddings.v1
    with: {opts}
output: {{dir: '{tmp_path / "run"}', formats: [tsv]}}
progress: false
""", "pe.yaml")


@pytest.mark.parametrize("model", ["word", "trigram"])
def test_paraphrase_pairs_beat_shuffled_pairs(tmp_path, model):
    src = [f"{c} {a}" for a, _ in SYNONYMS for c in CONTEXTS]
    tgt = [f"{c} {b}" for _, b in SYNONYMS for c in CONTEXTS]
    rows = [(5.0, f"my {a} is here", f"my {b} is here") for a, b in SYNONYMS]
    rows += [(1.0, f"my {a} is here", f"my {SYNONYMS[(i + 3) % len(SYNONYMS)][1]} is here")
             for i, (a, _) in enumerate(SYNONYMS)]
    sts = tmp_path / "toy-sts.csv"
    _write_sts(sts, rows)
    res = run_recipe(_recipe(tmp_path, src, tgt, sts, models=[model], shuffled_baseline=True))
    nums = res.reports["paraphrastic_embeddings.v1"]["numbers"]
    assert nums["pairs"] == len(src)
    # synonyms learned: clearly correlated; shuffled pairs teach nothing about them
    assert nums[f"{model}.toy"] > 0.6, nums
    assert nums[f"shuffled.{model}.toy"] < 0.3, nums
    assert nums[f"delta.{model}.toy"] == pytest.approx(nums[f"{model}.toy"]
                                                       - nums[f"shuffled.{model}.toy"])


def test_same_seed_same_numbers_and_max_pairs(tmp_path):
    src = [f"{c} {a}" for a, _ in SYNONYMS for c in CONTEXTS]
    tgt = [f"{c} {b}" for _, b in SYNONYMS for c in CONTEXTS]
    sts = tmp_path / "toy-sts.csv"
    _write_sts(sts, [(5.0, f"a {a}", f"a {b}") for a, b in SYNONYMS]
               + [(0.0, f"a {a}", f"a {SYNONYMS[i - 1][1]}") for i, (a, _) in enumerate(SYNONYMS)])
    one = run_recipe(_recipe(tmp_path, src, tgt, sts, models=["word"], max_pairs=30,
                             epochs=3)).reports["paraphrastic_embeddings.v1"]["numbers"]
    two = run_recipe(_recipe(tmp_path, src, tgt, sts, models=["word"], max_pairs=30,
                             epochs=3)).reports["paraphrastic_embeddings.v1"]["numbers"]
    assert one["pairs"] == 30
    assert one["word.toy"] == two["word.toy"]


def test_paraphrase_rows_are_the_pairs(tmp_path):
    """With a paraphrased side, pairs are (<side>_original, <side>) of the paraphrase rows."""
    from bitextforge.io.corpus import CorpusView
    from bitextforge.plugins.evaluation.paraphrastic import ParaphrasticEmbeddingsEvaluator

    tsv = tmp_path / "corpus.tsv"
    tsv.write_text("id\tvariant\torigin\tsrc\ttgt\ttgt_original\tweight\n"
                   "0\t0\tinput\tx\tthe car\tthe car\t1\n"
                   "0\t1\trt\tx\tthe automobile\tthe car\t1\n"
                   "1\t0\tinput\ty\ta big dog\ta big dog\t1\n"
                   "1\t1\trt\ty\ta large dog\ta big dog\t1\n", encoding="utf-8")
    ev = ParaphrasticEmbeddingsEvaluator(ParaphrasticEmbeddingsEvaluator.Config())
    assert ev._pairs(CorpusView(tsv)) == [("the car", "the automobile"), ("a big dog", "a large dog")]


def test_trigrams_cover_word_boundaries():
    assert trigrams(["a", "cat"]) == [" a ", "a c", " ca", "cat", "at "]


def test_reads_the_shared_sts_benchmark_and_sick():
    dev = read_similarity_set(str(shared("stsbenchmark", "sts-dev.csv")))
    test = read_similarity_set(str(shared("stsbenchmark", "sts-test.csv")))
    sick = read_similarity_set(str(shared("sick2014", "SICK_test_annotated.txt")))
    assert [len(x[2]) for x in (dev, test, sick)] == [1500, 1379, 4927]
    assert dev[0][0] == "A man with a hard hat is dancing." and dev[2][0] == 5.0
    assert sick[1][0] == "A group of kids is playing in a yard and an old man is standing in the background"
    assert min(sick[2]) >= 1.0 and max(sick[2]) <= 5.0


def test_bad_benchmark_line_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("g\tf\ty\t1\t4.0\ta\tb\ng\tf\ty\t2\tnot-a-score\ta\tb\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.csv:2: expected an STS Benchmark row"):
        read_similarity_set(str(bad))
    with pytest.raises(InputError, match="no such file"):
        read_similarity_set(str(tmp_path / "missing.csv"))


def _scored_corpus(tmp_path, rows):
    """A corpus.tsv of paraphrase rows (variant 1) with a score column ``overlap``."""
    tsv = tmp_path / "corpus.tsv"
    tsv.write_text("id\tvariant\torigin\tsrc\ttgt\ttgt_original\tweight\toverlap\n" + "".join(
        f"{i}\t1\tbt\tx\t{b}\t{a}\t1\t{s}\n" for i, (a, b, s) in enumerate(rows)),
        encoding="utf-8")
    return tsv


def test_selections_train_each_filter_at_equal_size(tmp_path):
    """A selection trains on the pairs its bounds accept: the synonym pairs (overlap 0.5) teach
    the synonyms, the copies (overlap 1.0) and unrelated pairs (0.0) do not; every selection is
    sampled to the same max_pairs, and the numbers do not depend on workers."""
    from bitextforge.io.corpus import CorpusView
    from bitextforge.plugins.evaluation.paraphrastic import ParaphrasticEmbeddingsEvaluator

    rows = [(f"{c} {a}", f"{c} {b}", 0.5) for a, b in SYNONYMS for c in CONTEXTS]
    rows += [(f"{c} {a}", f"{c} {a}", 1.0) for a, _ in SYNONYMS for c in CONTEXTS]
    rows += [(f"{c} {a}", f"{d} {SYNONYMS[(i + 3) % len(SYNONYMS)][1]}", 0.0)
             for i, (a, _) in enumerate(SYNONYMS) for c, d in zip(CONTEXTS, CONTEXTS[1:])]
    sts = tmp_path / "toy-sts.csv"
    _write_sts(sts, [(5.0, f"my {a} is here", f"my {b} is here") for a, b in SYNONYMS]
               + [(1.0, f"my {a} is here", f"my {SYNONYMS[(i + 3) % len(SYNONYMS)][1]} is here")
                  for i, (a, _) in enumerate(SYNONYMS)])
    corpus = CorpusView(_scored_corpus(tmp_path, rows), numeric=["overlap"])
    cfg = dict(benchmarks={"toy": str(sts)}, models=["word"], dim=50, epochs=30, batch_size=10,
               megabatch=3, seed=7, max_pairs=60,
               selections={"random": {}, "middle": {"overlap": {"min": 0.2, "max": 0.8}},
                           "copies": {"overlap": {"min": 0.9}}})
    ev = ParaphrasticEmbeddingsEvaluator(ParaphrasticEmbeddingsEvaluator.Config(**cfg))
    nums = ev.evaluate(corpus).numbers
    assert [nums[f"{s}.pairs"] for s in ("random", "middle", "copies")] == [60, 60, 60]
    assert nums["middle.word.toy"] > 0.6, nums
    assert nums["copies.word.toy"] < 0.3, nums
    assert nums["middle.word.toy"] > nums["random.word.toy"] > nums["copies.word.toy"], nums
    # seeds 7 and 8 in two worker processes: seed 7's numbers are those of the run above
    cfg = {**cfg, "seeds": [7, 8], "workers": 2}
    del cfg["seed"]
    par = ParaphrasticEmbeddingsEvaluator(ParaphrasticEmbeddingsEvaluator.Config(**cfg))
    report = par.evaluate(corpus)
    both = report.numbers
    for key in ("random.word.toy", "middle.word.toy", "copies.word.toy"):
        assert both[f"{key}.seed7"] == nums[key]
        assert both[key] == pytest.approx((both[f"{key}.seed7"] + both[f"{key}.seed8"]) / 2)
        assert both[f"{key}.min"] <= both[key] <= both[f"{key}.max"]
    assert both["middle.word.toy.seed8"] != both["middle.word.toy.seed7"]
    assert "seeds 7, 8 (mean, min-max)" in report.summary


def test_selection_mistakes_name_the_column_or_selection(tmp_path):
    from bitextforge.io.corpus import CorpusView
    from bitextforge.plugins.evaluation.paraphrastic import ParaphrasticEmbeddingsEvaluator

    corpus = CorpusView(_scored_corpus(tmp_path, [("a b", "a c", 0.5), ("d e", "d f", 0.4)]),
                        numeric=["overlap"])
    sts = tmp_path / "toy-sts.csv"
    _write_sts(sts, [(5.0, "a", "b"), (1.0, "c", "d"), (3.0, "e", "f")])

    def run(selections):
        ev = ParaphrasticEmbeddingsEvaluator(ParaphrasticEmbeddingsEvaluator.Config(
            benchmarks={"toy": str(sts)}, models=["word"], dim=8, epochs=1,
            selections=selections))
        return ev.evaluate(corpus)

    with pytest.raises(InputError, match=r"columns \['overlp'\] that are not in the corpus"):
        run({"x": {"overlp": {"max": 0.7}}})
    with pytest.raises(InputError, match=r"selections.strict: 0 pairs lie within its bounds"):
        run({"strict": {"overlap": {"min": 0.9}}})
    with pytest.raises(ValueError, match="give min, max, top or several"):
        ParaphrasticEmbeddingsEvaluator.Config(selections={"x": {"overlap": {}}})


def test_bounds_top_selects_the_best_share_in_either_order():
    from bitextforge.plugins.evaluation.paraphrastic import Bounds

    scores = [0.9, float("nan"), 0.1, 0.5, 0.7, 0.3]
    assert Bounds(top=0.4).accepted(scores) == [True, False, False, False, True, False]
    assert Bounds(top=0.4, order="lowest").accepted(scores) == [False, False, True, False,
                                                                False, True]
    # min/max and top combine: the best half of all candidates, then at most 0.8
    assert Bounds(top=0.5, max=0.8).accepted(scores) == [False, False, False, True, True, False]
