"""The score cache key (bitextforge.cache.scores) and the content identity it shares with the resume
check (bitextforge.cache.identity): a KenLM model retrained at the same path gives new scores, a changed
row is the only one computed again, a changed ``with:`` option computes every row again, and a
file rewritten in place is never taken for what it was."""

import os
import sqlite3

import pytest

from bitextforge.cache.identity import ABSENT, declared_paths, path_identity, sidecar_path
from bitextforge.plugins.quality.lm import find_tool
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import SMALL_DE, SMALL_EN, read_tsv

needs_lmplz = pytest.mark.skipif(find_tool("lmplz") is None,
                                 reason="KenLM lmplz not built (run make env)")

# two small English corpora with little in common: models trained on them score SMALL_EN apart
TEXT_A = ["the dog is sleeping in the garden .", "i like to drink coffee in the morning .",
          "where is the train station ?", "the weather is very nice today ."] * 3
TEXT_B = ["a cat runs over the red roof .", "she has three cats and two dogs .",
          "we are going for a walk .", "hello , how are you doing today ?"] * 3


def train_lm(text, out):
    """A real order-2 KenLM model of ``text`` written to ``out`` (replacing what is there)."""
    from bitextforge.plugins.quality.trainers import KenlmTrainer

    src = out.with_name(out.name + ".txt")
    src.write_text("".join(t + "\n" for t in text), encoding="utf-8")
    KenlmTrainer(KenlmTrainer.Config(text=str(src), output=str(out), order=2,
                                     memory="64M")).train()


def lm_recipe(s, t, out, model, extra_with=""):
    return (f"name: cached\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\n"
            f"progress: false\nbatch_size: 3\nsteps:\n"
            f"  - filter: kenlm_perplexity.v1\n    with: {{model: '{model}'{extra_with}}}\n"
            f"    cache: true\n    as: ppl\n    keep: {{max: 1.0e+12}}\n")


def run(text):
    """Run a recipe; its step's score_cache counters and its rows' scores."""
    res = run_recipe(parse_recipe(text, "r.yaml"))
    info = res.manifest["steps"][0]["info"]["score_cache"]
    rows = read_tsv(res.output_dir / "corpus.tsv")
    return (info["hits"], info["computed"]), [float(r["ppl"]) for r in rows]


@needs_lmplz
def test_model_retrained_at_the_same_path_is_scored_again(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    model = tmp_path / "lm.binary"
    train_lm(TEXT_A, model)
    counts, old = run(lm_recipe(s, t, tmp_path / "a1", model))
    assert counts == (0, 8)
    counts, again = run(lm_recipe(s, t, tmp_path / "a2", model))
    assert counts == (8, 0) and again == old

    train_lm(TEXT_B, model)  # the same path, another model
    counts, new = run(lm_recipe(s, t, tmp_path / "b1", model))
    assert counts == (0, 8)
    assert new != old
    # exactly the scores of the new model: what it gives without any cache
    uncached = run_recipe(parse_recipe(lm_recipe(s, t, tmp_path / "b2", model)
                                       .replace("cache: true", "cache: false"), "r.yaml"))
    assert [float(r["ppl"]) for r in read_tsv(uncached.output_dir / "corpus.tsv")] == new
    counts, _ = run(lm_recipe(s, t, tmp_path / "b3", model))
    assert counts == (8, 0)


@needs_lmplz
def test_changed_row_alone_is_computed_and_changed_option_computes_all(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    model = tmp_path / "lm.binary"
    train_lm(TEXT_A, model)
    counts, first = run(lm_recipe(s, t, tmp_path / "r1", model))
    assert counts == (0, 8)

    changed = SMALL_EN[:3] + ["Where is the bus station?"] + SMALL_EN[4:]
    s2, t2 = pair_files(SMALL_DE, changed, name="changed")
    counts, second = run(lm_recipe(s2, t2, tmp_path / "r2", model))
    assert counts == (7, 1)
    assert second[:3] == first[:3] and second[4:] == first[4:] and second[3] != first[3]

    # lang: en is what the model's own .json says: the same scores, yet another configuration
    counts, third = run(lm_recipe(s, t, tmp_path / "r3", model, ", lang: en"))
    assert counts == (0, 8) and third == first


def test_file_rewritten_in_place_with_same_size_and_time_changes_identity(tmp_path):
    f = tmp_path / "model.bin"
    f.write_bytes(b"aaaa")
    before = os.stat(f)
    first = path_identity(f)
    with open(f, "r+b") as fh:  # the same inode, the same size
        fh.write(b"bbbb")
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the old modification time
    assert os.stat(f).st_ino == before.st_ino and os.stat(f).st_mtime_ns == before.st_mtime_ns
    assert path_identity(f) != first
    f.write_bytes(b"aaaa")
    assert path_identity(f) == first  # content identity: the same bytes are the same file


def test_sidecar_remembers_settled_files_and_forgets_changed_ones(tmp_path, monkeypatch):
    """A file whose stat signature is unchanged is not read again (the sidecar's hash is
    trusted), and one whose signature changed is."""
    import bitextforge.cache.identity as identity

    f = tmp_path / "model.bin"
    f.write_bytes(b"weights")
    fresh = path_identity(f)
    with sqlite3.connect(sidecar_path()) as db:  # too recent to be remembered
        assert db.execute("SELECT count(*) FROM f").fetchone()[0] == 0
    monkeypatch.setattr(identity, "RACY_SECONDS", -1.0)
    assert path_identity(f) == fresh
    with sqlite3.connect(sidecar_path()) as db:
        db.execute("UPDATE f SET sha256 = 'remembered'")
    assert path_identity(f) == "sha256:remembered"  # not read again
    f.write_bytes(b"weights, retrained")
    assert path_identity(f) not in (fresh, "sha256:remembered")


def test_directory_identity_covers_every_file_inside(tmp_path):
    d = tmp_path / "nmt-model"
    (d / "sub").mkdir(parents=True)
    (d / "config.json").write_text("{}")
    (d / "sub" / "weights.bin").write_bytes(b"\0\1")
    first = path_identity(d)
    assert first.startswith("dir:")
    (d / ".ct2-tmp").mkdir()  # a conversion in progress is not part of the model
    (d / ".ct2-tmp" / "x").write_bytes(b"partial")
    assert path_identity(d) == first
    (d / "sub" / "weights.bin").write_bytes(b"\0\2")
    second = path_identity(d)
    assert second != first
    (d / "sub" / "more.bin").write_bytes(b"")
    assert path_identity(d) != second
    assert path_identity(tmp_path / "nothing") == ABSENT


def test_declared_paths_flattens_lists_and_mappings():
    class Fake:
        @classmethod
        def input_paths(cls, config):
            return {"model": "m", "reverse": None, "tests": [["a", "b"], ["c", "d"]],
                    "files": {"train": "t", "dev": None}}

    assert declared_paths(Fake, None) == [
        ("model", "m"), ("tests[0][0]", "a"), ("tests[0][1]", "b"), ("tests[1][0]", "c"),
        ("tests[1][1]", "d"), ("files.train", "t")]


def test_no_built_in_filter_caches_by_default():
    """docs/guide.md says every built-in filter leaves the cache off; a built-in turning it on
    would have to be listed there (lexical_translation.v1 did, undocumented and with its tables
    outside the key)."""
    from bitextforge.components.registry import get_registry

    reg = get_registry()
    built_in = [reg.get("filter", n) for n in reg.names("filter")]
    built_in = [c for c in built_in if c.__module__.startswith("bitextforge.")]
    assert len(built_in) >= 19
    assert [c.name for c in built_in if c.cache_scores] == []


BATCH_DEPENDENT = [
    # (filter, its with:, what the refusal names)
    ("multilingual_embedding.v1", "{}", "measure margin takes each row's neighbours"),
    ("multilingual_embedding.v1", "{measure: csls}", "measure csls takes each row's neighbours"),
    ("bilingual_similarity.v1", "{model: m, measure: margin}", "from the other rows of its batch"),
    ("lexical_coverage.v1", "{dictionary: d.tsv}", "IDF weights come from the other rows"),
    ("lexical_translation.v1", "{tables: t, margin: 2}", "random other rows of its batch"),
    ("dedupe.v1", "{}", "depend on earlier rows"),
]


def _filter_recipe(name, with_, cache="true"):
    return (f"name: c\ninput: {{src: s.txt, tgt: t.txt}}\noutput: {{dir: out}}\nsteps:\n"
            f"  - filter: length.v1\n    keep: {{min: 1}}\n"
            f"  - filter: {name}\n    with: {with_}\n    cache: {cache}\n"
            f"    keep: {{min: -.inf}}\n")


@pytest.mark.parametrize("name, with_, why", BATCH_DEPENDENT)
def test_a_score_that_depends_on_other_rows_cannot_be_cached(name, with_, why):
    """Such a score, cached, would come back for the same row in another batch or corpus: the
    step's cache: true is one line naming its key path and why."""
    from bitextforge import RecipeError

    with pytest.raises(RecipeError) as err:
        parse_recipe(_filter_recipe(name, with_), "r.yaml")
    msg = str(err.value)
    assert len(msg.splitlines()) == 1
    assert msg.startswith(f"r.yaml: steps[1] ({name.split('.')[0]}).cache: {name} with these options cannot be cached: ")
    assert why in msg
    # without the cache the same step is fine
    parse_recipe(_filter_recipe(name, with_, cache="false"), "r.yaml")


def test_options_that_make_a_score_row_alone_can_be_cached():
    """cosine needs no neighbours; indexes (whose content enters the key) replace the batch's."""
    for with_ in ("{measure: cosine}", "{measure: margin, index_src: a.faiss, index_tgt: b.faiss}",
                  "{tables: t}"):
        name = "lexical_translation.v1" if "tables" in with_ else "multilingual_embedding.v1"
        parse_recipe(_filter_recipe(name, with_), "r.yaml")


def test_cross_fitted_scores_are_cached_by_row_id(tmp_path):
    """A cross-fitted model scores a training row by the fold of its id: the same text at another
    id (another corpus, or the rows in another order) is another score, so the id is part of the
    cache key; every score equals the uncached one."""
    from bitextforge.cache.scores import ScoreCache
    from bitextforge.plugins.quality.regressor import (SentenceRegressorFilter,
                                                       SentenceRegressorTrainer)

    texts = [f"The {animal} sleeps in the garden number {i}." if i % 2 else
             f"The bank reported lower profit in quarter {i}." for i, animal in
             enumerate(["dog", "cat", "horse", "goat", "duck"] * 4)]
    data = tmp_path / "qe.tsv"
    data.write_text("text\tscore\n" + "".join(f"{t}\t{1 if i % 2 else -1}\n"
                                              for i, t in enumerate(texts)), encoding="utf-8")
    model = tmp_path / "m.json"
    SentenceRegressorTrainer(SentenceRegressorTrainer.Config(
        data=str(data), text="text", label="score", folds=4, precision="fp32",
        output=str(model))).train()
    f = SentenceRegressorFilter(SentenceRegressorFilter.Config(model=str(model),
                                                                precision="fp32"))
    try:
        first = {"id": list(range(8)), "src": texts[:8]}
        moved = {"id": [100 + i for i in range(8)], "src": texts[:8]}  # not training rows
        cache = ScoreCache(f, "predicted", tmp_path / "cache")
        cached_first = cache.score(first, f.score)
        cached_moved = cache.score(moved, f.score)
        assert (cache.hits, cache.misses) == (0, 16)
        assert cache.score(first, f.score) == cached_first and cache.hits == 8
        cache.close()
        assert cached_first == pytest.approx(f.score(first), abs=1e-12)
        assert cached_moved == pytest.approx(f.score(moved), abs=1e-12)
        assert cached_moved != pytest.approx(cached_first, abs=1e-6)  # own fold against the mean
    finally:
        f.close()


def test_pair_classifier_caches_only_when_its_feature_filters_can(tmp_path):
    """pair_classifier.v1's features are the filters its model names (``<model>.json``): one
    batch-dependent feature makes its score batch-dependent too."""
    import json

    model = tmp_path / "pc.joblib"
    facts = tmp_path / "pc.joblib.json"
    recipe = _filter_recipe("pair_classifier.v1", f"{{model: '{model}'}}")
    from bitextforge import RecipeError

    with pytest.raises(RecipeError, match=r"steps\[1\] \(\w+\)\.cache: .*unknown until the model"):
        parse_recipe(recipe, "r.yaml")
    feature = {"filter": "lexical_coverage.v1", "with": {"dictionary": "d.tsv"}}
    facts.write_text(json.dumps({"features": [feature]}), encoding="utf-8")
    with pytest.raises(RecipeError, match=r"feature 0 \(lexical_coverage.v1\) cannot be cached: "
                                          r"its IDF weights"):
        parse_recipe(recipe, "r.yaml")
    feature = {"filter": "lexical_translation.v1", "with": {"tables": "t"}}
    facts.write_text(json.dumps({"features": [feature]}), encoding="utf-8")
    parse_recipe(recipe, "r.yaml")


def test_cache_info_lists_files_and_prune_removes_those_unused_for_days(pair_files, tmp_path,
                                                                        capsys):
    """The cache never shrank: ``cache info`` shows each file's rows, size and last use, and
    ``cache prune --older-than DAYS`` removes the files no run opened in DAYS days. A rerun that
    only hits (writes nothing) still counts as a use."""
    import time

    from bitextforge.cache.scores import cache_dir
    from bitextforge.cli.main import main

    s, t = pair_files(SMALL_DE, SMALL_EN)

    def cached_run(out, side):
        recipe = (f"name: c\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\n"
                  f"progress: false\nsteps:\n  - filter: length.v1\n    with: {{side: {side}}}\n"
                  f"    cache: true\n    keep: {{min: 0}}\n")
        res = run_recipe(parse_recipe(recipe, "r.yaml"))
        return res.manifest["steps"][0]["info"]["score_cache"]

    kept = cached_run(tmp_path / "a", "src")
    old = cached_run(tmp_path / "b", "tgt")
    month_ago = time.time() - 31 * 86400
    for name in (kept["file"], old["file"]):
        os.utime(name, (month_ago, month_ago))
    assert cached_run(tmp_path / "c", "src") == {**kept, "hits": 8, "computed": 0}

    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"score cache: {cache_dir()}: 2 file(s), " + out[0].rsplit(", ", 1)[1]
    names = [line.split()[-1] for line in out[2:]]
    assert names == [os.path.basename(old["file"]), os.path.basename(kept["file"])]

    def rows(name):
        with sqlite3.connect(f"file:{name}?mode=rw", uri=True) as db:
            n = db.execute("SELECT count(*) FROM s").fetchone()[0]
        db.close()
        return str(n)

    assert out[2].split()[2:4] == ["31", rows(old["file"])]
    assert out[3].split()[2:4] == ["0", rows(kept["file"])]

    assert main(["cache", "prune", "--older-than", "30", "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith(f"would remove {os.path.basename(old['file'])} (")
    assert os.path.exists(old["file"])
    assert main(["cache", "prune", "--older-than", "30"]) == 0
    assert "removed 1 file(s) unused for 30 days" in capsys.readouterr().out
    assert not os.path.exists(old["file"]) and os.path.exists(kept["file"])
    assert sorted(os.listdir(cache_dir())) == [os.path.basename(kept["file"])]

    assert main(["cache", "prune"]) == 2
    assert capsys.readouterr().err == ("bitextforge: error: cache prune: --older-than DAYS is "
                                       "required (a number of days, 0 or more)\n")


def test_everything_kept_across_runs_lives_under_one_root(tmp_path, monkeypatch):
    """Score caches, remembered file hashes and CTranslate2 conversions share cache_root():
    $BITEXTFORGE_CACHE, else $XDG_CACHE_HOME/bitextforge (two conversion paths once ignored
    XDG_CACHE_HOME)."""
    from bitextforge.cache import cache_root
    from bitextforge.cache.identity import sidecar_path
    from bitextforge.cache.scores import cache_dir
    from bitextforge.plugins.quality.embeddings import ct2_cache_dir

    monkeypatch.delenv("BITEXTFORGE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "xdg" / "bitextforge"
    assert cache_root() == root
    assert cache_dir() == root / "scores" and sidecar_path() == root / "identities.sqlite"
    assert ct2_cache_dir(str(tmp_path / "model"), "int8").parent == root / "ct2"
    monkeypatch.setenv("BITEXTFORGE_CACHE", str(tmp_path / "own"))
    assert cache_dir() == tmp_path / "own" / "scores"
    assert ct2_cache_dir(str(tmp_path / "model"), "int8").parent == tmp_path / "own" / "ct2"
