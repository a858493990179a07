"""End-to-end runs of the local runner on small texts written for these tests."""

import json

import pytest

import bitextforge
from bitextforge import BitextforgeError, Filter, Paraphraser
from bitextforge.errors import StepError
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import SMALL_DE, SMALL_EN, read_tsv


def recipe_text(s, t, out, steps, extra=""):
    return (f"name: test\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\n"
            f"progress: false\nbatch_size: 3\n{extra}steps:\n{steps}")


FILTERS = """\
  - filter: dedupe.v1
  - filter: length.v1
    with: {combine: shorter}
    keep: {min: 1}
    as: len_min
  - filter: length_ratio.v1
    keep: {max: 2.5}
"""


def test_filters_outputs_and_manifest(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    out = tmp_path / "run"
    res = run_recipe(parse_recipe(recipe_text(s, t, out, FILTERS), "r.yaml"))
    assert (res.rows_in, res.rows_out, res.rejected) == (8, 5, 3)
    src = (out / "corpus.src").read_text(encoding="utf-8").splitlines()
    assert src == [SMALL_DE[i] for i in (0, 1, 3, 5, 7)]
    assert (out / "corpus.tgt").read_text(encoding="utf-8").splitlines() == [SMALL_EN[i] for i in (0, 1, 3, 5, 7)]
    assert not (out / "corpus.weights").exists()  # all weights are 1
    rows = read_tsv(out / "corpus.tsv")
    assert list(rows[0]) == ["id", "variant", "origin", "src", "tgt", "weight", "dedupe", "len_min", "length_ratio"]
    rej = {r["id"]: (r["rejected_by"], r["rejected_score"]) for r in read_tsv(out / "rejected.tsv")}
    assert rej == {"2": ("steps[0]:dedupe.v1", "0"), "4": ("steps[1]:length.v1", "0"),
                   "6": ("steps[2]:length_ratio.v1", "12")}
    m = json.loads((out / "manifest.json").read_text())
    assert [(st["component"], st["rows_in"], st["rows_out"]) for st in m["steps"]] == [
        ("dedupe.v1", 8, 7), ("length.v1", 7, 6), ("length_ratio.v1", 6, 5)]
    assert m["input"]["rows"] == 8 and m["output"]["rows"] == 5
    assert m["versions"]["pydantic"] and m["signature"] == res.signature
    assert (out / "signature.txt").read_text().strip() == res.signature
    filled = (out / "recipe.filled.yaml").read_text()
    assert "combine: shorter" in filled and "letters_only: false" in filled
    assert (out / "report.html").exists()


def test_top_and_words_are_global(pair_files, tmp_path):
    src = [f"w{i} " * (i + 1) for i in range(10)]
    s, t = pair_files([x.strip() for x in src], [x.strip() for x in src])
    steps = "  - filter: length.v1\n    with: {side: src}\n    keep: {top: 0.3}\n"
    res = run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "a", steps), "r.yaml"))
    kept = [int(r["length"]) for r in read_tsv(tmp_path / "a" / "corpus.tsv")]
    assert kept == [8, 9, 10] and res.rejected == 7  # input order kept
    steps = ("  - filter: length.v1\n    with: {side: src}\n"
             "    keep: {words: 12, order: lowest, words_side: src}\n")
    run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "b", steps), "r.yaml"))
    kept = [int(r["length"]) for r in read_tsv(tmp_path / "b" / "corpus.tsv")]
    assert kept == [1, 2, 3, 4]  # 1+2+3+4 = 10 <= 12, +5 would exceed
    rej = read_tsv(tmp_path / "b" / "rejected.tsv")
    assert rej[0]["rejected_by"] == "steps[0]:length.v1 (words 12)"


class Echo(Paraphraser):
    """Test paraphraser: two candidates per sentence, with a provenance and an extra column."""

    name = "echo_test.v1"
    extra_columns = ("pivot",)

    def paraphrase(self, sentences):
        return [[(s[::-1], -0.1, {"pivot": "xx", "provenance": "xx"}), (s + " !", -0.7)]
                for s in sentences]


@pytest.fixture
def echo_plugin(bitextforge_plugin):
    return bitextforge_plugin(Echo, name="echo")


def test_paraphrase_filter_weight(echo_plugin, pair_files, tmp_path):
    s, t = pair_files(["eins", "zwei"], ["one", "two"])
    steps = """\
  - paraphrase: echo_test.v1
    side: tgt
    read: tgt
  - filter: length.v1
    with: {unit: chars, side: tgt}
    keep: {max: 4}
    apply_to: paraphrases
  - weight: distributed.v1
    with: {n: 3}
"""
    out = tmp_path / "p"
    res = run_recipe(parse_recipe(recipe_text(s, t, out, steps), "r.yaml"))
    rows = read_tsv(out / "corpus.tsv")
    got = [(r["id"], r["variant"], r["origin"], r["tgt"], r["tgt_original"]) for r in rows]
    # "one !" (5 chars) is rejected; only originals are never filtered; d.3 with m=1: e0 e1 e0 e1
    assert got[:4] == [("0", "0", "input", "one", "one"), ("0", "1", "echo_test.v1:xx", "eno", "one"),
                       ("0", "0", "input", "one", "one"), ("0", "1", "echo_test.v1:xx", "eno", "one")]
    assert rows[1]["pivot"] == "xx" and rows[0]["pivot"] == "" and rows[1]["echo_test_score"] == "-0.1"
    assert res.rows_out == 8 and res.rejected == 2


def test_sentence_weights_file(echo_plugin, pair_files, tmp_path):
    s, t = pair_files(["eins"], ["one"])
    steps = "  - paraphrase: echo_test.v1\n    side: tgt\n  - weight: sentence_weights.v1\n"
    out = tmp_path / "w"
    run_recipe(parse_recipe(recipe_text(s, t, out, steps), "r.yaml"))
    w = [float(x) for x in (out / "corpus.weights").read_text().split()]
    assert len(w) == 3 and sum(w) == pytest.approx(1.0, abs=1e-5)


class Exploding(Filter):
    """Fails on the second batch, to test that no partial output appears."""

    name = "exploding_test.v1"
    default_keep = {"min": 0}

    def __init__(self, config=None):
        super().__init__(config)
        self.calls = 0

    def score(self, batch):
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("boom")
        return [1.0] * len(batch["src"])


def test_crash_leaves_no_partial_output(bitextforge_plugin, pair_files, tmp_path):
    bitextforge_plugin(Exploding, name="exploding")
    s, t = pair_files(SMALL_DE, SMALL_EN)
    out = tmp_path / "x"
    with pytest.raises(StepError) as err:
        run_recipe(parse_recipe(recipe_text(s, t, out, "  - filter: exploding_test.v1\n"), "r.yaml"))
    # one line naming the step and the rows of the failing batch; the exception is the cause
    assert str(err.value) == ("steps[0]:exploding_test.v1: score() failed on rows with id 3-5: "
                              "RuntimeError: boom")
    assert isinstance(err.value.__cause__, RuntimeError)
    # nothing was finished before the error, so nothing is left: the rerun starts cleanly
    assert not out.exists()


def test_unequal_input_fails_before_output(pair_files, tmp_path):
    s, t = pair_files(["a", "b"], ["A"])
    out = tmp_path / "u"
    with pytest.raises(BitextforgeError, match="line counts differ"):
        run_recipe(parse_recipe(recipe_text(s, t, out, FILTERS), "r.yaml"))
    assert not out.exists()


def test_unwritable_output_dir(pair_files, tmp_path):
    s, t = pair_files(["a"], ["A"])
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(BitextforgeError, match="not writable"):
        run_recipe(parse_recipe(recipe_text(s, t, blocker / "sub", FILTERS), "r.yaml"))


class CountTgtWords(bitextforge.Evaluator):
    """Test evaluator: words on the target side, per item and in total."""

    name = "count_words_test.v1"

    def evaluate(self, corpus):
        per = [len(t.split()) for t in corpus.column("tgt")]
        return bitextforge.Report(numbers={"words": sum(per)}, items={"words": per},
                                  summary=f"{sum(per)} target words")


def test_evaluator_reads_final_corpus(bitextforge_plugin, pair_files, tmp_path):
    bitextforge_plugin(CountTgtWords, name="count")
    s, t = pair_files(SMALL_DE, SMALL_EN)
    out = tmp_path / "e"
    text = recipe_text(s, t, out, FILTERS).replace("steps:", "evaluate: [count_words_test.v1]\nsteps:")
    res = run_recipe(parse_recipe(text, "r.yaml"))
    kept = [SMALL_EN[i] for i in (0, 1, 3, 5, 7)]
    assert res.reports["count_words_test.v1"]["numbers"]["words"] == sum(len(k.split()) for k in kept)
    rep = json.loads((out / "reports" / "count_words_test.v1.json").read_text())
    assert rep["items"]["words"] == [len(k.split()) for k in kept]
    m = json.loads((out / "manifest.json").read_text())
    assert m["evaluations"]["count_words_test.v1"]["summary"].endswith("target words")


class KeepLongest(bitextforge.Weighter):
    """Test weighter: only the variant with the longest target, with weight 2."""

    name = "keep_longest_test.v1"

    def weight(self, group):
        best = max(range(len(group)), key=lambda i: len(group[i]["tgt"]))
        return [(best, 2.0)]


def test_third_party_weighter(echo_plugin, bitextforge_plugin, pair_files, tmp_path):
    bitextforge_plugin(KeepLongest, name="longest")
    s, t = pair_files(["eins", "zwei"], ["one", "two"])
    steps = "  - paraphrase: echo_test.v1\n    side: tgt\n  - weight: keep_longest_test.v1\n"
    out = tmp_path / "k"
    run_recipe(parse_recipe(recipe_text(s, t, out, steps), "r.yaml"))
    assert (out / "corpus.tgt").read_text().splitlines() == ["one !", "two !"]
    assert (out / "corpus.weights").read_text().split() == ["2", "2"]


class CountingFilter(Filter):
    """Test filter that counts the rows it really scores (an expensive, pure filter)."""

    name = "counting_test.v1"
    cache_scores = True
    scored = 0

    def score(self, batch):
        CountingFilter.scored += len(batch["src"])
        return [float(len(t)) for t in batch["tgt"]]


def test_score_cache_skips_recomputation(bitextforge_plugin, pair_files, tmp_path):
    bitextforge_plugin(CountingFilter, name="counting")
    s, t = pair_files(SMALL_DE, SMALL_EN)
    steps = "  - filter: counting_test.v1\n    keep: {max: 40}\n"
    CountingFilter.scored = 0
    first = run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "c1", steps), "r.yaml"))
    assert CountingFilter.scored == 8
    second = run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "c2", steps.replace("40", "30")),
                                     "r.yaml"))
    assert CountingFilter.scored == 8  # nothing rescored
    assert first.rows_out == 6 and second.rows_out == 3
    info = second.manifest["steps"][0]["info"]["score_cache"]
    assert info["hits"] == 8 and info["computed"] == 0
    # the cache is keyed by the row's content: a changed row is scored again
    s2, t2 = pair_files(SMALL_DE, SMALL_EN[:-1] + ["She has three cats."], name="changed")
    run_recipe(parse_recipe(recipe_text(s2, t2, tmp_path / "c3", steps), "r.yaml"))
    assert CountingFilter.scored == 9


def test_stateful_filter_cannot_be_cached(pair_files, tmp_path):
    from bitextforge import RecipeError

    with pytest.raises(RecipeError, match=r"steps\[0\] \(dedupe\).cache: dedupe.v1 with these options cannot be "
                                          r"cached: its scores depend on earlier rows"):
        parse_recipe(recipe_text("a", "b", tmp_path, "  - filter: dedupe.v1\n    cache: true\n"), "r.yaml")


class ThreadNoting(Filter):
    """Scores the source length and notes which thread scored each batch."""

    name = "thread_noting_test.v1"
    default_keep = {"min": 2}
    releases_gil = True
    threads: list[str] = []

    def score(self, batch):
        import threading

        ThreadNoting.threads.append(threading.current_thread().name)
        return [float(len(s.split())) for s in batch["src"]]


class ExplodingNative(Exploding):
    """Exploding, run in a thread of its own."""

    name = "exploding_native_test.v1"
    releases_gil = True


def test_a_step_that_releases_the_gil_runs_in_a_thread_with_the_same_output(
        bitextforge_plugin, pair_files, tmp_path):
    bitextforge_plugin(ThreadNoting, ExplodingNative, name="threads")
    s, t = pair_files(SMALL_DE, SMALL_EN)
    steps = FILTERS + "  - filter: thread_noting_test.v1\n  - filter: dedupe.v1\n    as: dd2\n"
    outs = {}
    for gil in (True, False):
        ThreadNoting.releases_gil, ThreadNoting.threads = gil, []
        out = tmp_path / f"gil-{gil}"
        run_recipe(parse_recipe(recipe_text(s, t, out, steps), "r.yaml"))
        outs[gil] = {f: (out / f).read_bytes() for f in ("corpus.tsv", "rejected.tsv")}
        assert len(ThreadNoting.threads) == 3  # batch_size 3: 8 rows, 3 batches
        assert all((name == "MainThread") != gil for name in ThreadNoting.threads)
    ThreadNoting.releases_gil = True
    assert outs[True] == outs[False]
    # an error in the step's thread reaches the caller as the same one-line error, no output left
    out = tmp_path / "x"
    with pytest.raises(StepError) as err:
        run_recipe(parse_recipe(recipe_text(s, t, out, "  - filter: exploding_native_test.v1\n"),
                                "r.yaml"))
    assert str(err.value) == ("steps[0]:exploding_native_test.v1: score() failed on rows with id "
                              "3-5: RuntimeError: boom")
    assert not out.exists()


def test_ahead_keeps_order_and_stops_its_producer_when_the_consumer_stops():
    import threading

    from bitextforge.pipeline.runners.stream import ahead

    produced = []
    done = threading.Event()

    def numbers():
        try:
            for i in range(1000):
                produced.append(i)
                yield i
        finally:
            done.set()

    it = ahead(numbers(), depth=4)
    assert [next(it) for _ in range(10)] == list(range(10))
    it.close()
    assert done.wait(5)  # the producer left its loop instead of reading all 1,000
    assert len(produced) < 1000


def test_an_infinite_keep_bound_gives_a_finite_histogram(pair_files, tmp_path):
    import warnings

    s, t = pair_files(SMALL_DE, SMALL_EN)
    out = tmp_path / "inf"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # NumPy warned on linspace to infinity
        run_recipe(parse_recipe(recipe_text(s, t, out, "  - filter: length_ratio.v1\n"
                                            "    keep: {max: .inf}\n"), "r.yaml"))
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "histogram of length_ratio" in html and "nan" not in html.lower().replace("nano", "")
