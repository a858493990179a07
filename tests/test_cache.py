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
from bitextforge.pipeline.run import run_recipe

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
