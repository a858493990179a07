"""Nothing of a user's overwritten, nothing misaligned: a web app's ``manifest.json`` is not a
run's mark, line breaks inside a sentence never split an output line, a model's settings file
belongs to the identity a resume checks, a rerun leaves no file of the earlier run behind, and a
plugin raising ``KeyboardInterrupt`` by itself does not stop every command."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bitextforge import BitextforgeError
from bitextforge.errors import StepError
from bitextforge.io.corpus import CorpusView, format_value, plain_text, unescape
from bitextforge.api import run_recipe
from bitextforge.plugins.quality.lm import find_tool
from bitextforge.processes import scratch_dir, sweep_stale
from bitextforge.recipe.load import parse_recipe

from conftest import ROOT, SMALL_DE, SMALL_EN, fake_distribution, read_tsv, run_cli as cli


def listing(d):
    return {p.name: p.read_bytes() for p in d.iterdir()}


def test_a_manifest_json_of_someone_else_is_not_taken_for_a_run(pair_files, tmp_path):
    mine = tmp_path / "pwa"
    mine.mkdir()
    (mine / "manifest.json").write_text('{"name":"my-pwa"}\n')
    (mine / "corpus.src").write_text("precious\n")
    before = listing(mine)
    res = cli("run", ROOT / "recipes" / "quickstart.yaml", "-o", mine, "-q")
    assert res.returncode == 2, res.stderr
    assert "holds no bitextforge run (corpus.src, manifest.json)" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert listing(mine) == before
    # a shard folder of another tool is no mark either, and neither is a manifest of other keys
    (mine / ".shards").mkdir()
    (mine / "manifest.json").write_text('{"bitextforge": "x"}\n')
    assert cli("run", ROOT / "recipes" / "quickstart.yaml", "-o", mine, "-q").returncode == 2
    assert (mine / "corpus.src").read_text() == "precious\n"


TEXTS = ["ein\rSatz", "zwei\u2028Zeilen", "drei\u2029Absätze", "vier\x85NEL", "Back\\slash\tTab",
         "ganz normal"]


def test_line_breaks_inside_text_are_escaped_in_tsv_and_spaces_in_plain_files():
    for t in TEXTS:
        cell = format_value(t)
        assert cell.splitlines() == [cell] and "\t" not in cell
        assert unescape(cell) == t
    # a backslash written by an earlier version before such a letter stays a backslash
    assert unescape(format_value("\\x85 \\u2028 \\r")) == "\\x85 \\u2028 \\r"
    text = plain_text(TEXTS)
    assert len(text.splitlines()) == len(TEXTS)
    assert text.splitlines()[0] == "ein Satz"


def test_a_lone_cr_inside_a_sentence_keeps_every_output_file_aligned(tmp_path):
    src, tgt = tmp_path / "in.de", tmp_path / "in.en"
    de = [f"Satz {i} mit\rWagenrücklauf" if i % 3 == 0 else f"Satz {i}\u2028weiter"
          for i in range(20)]
    en = [f"sentence {i}" + ("\u2029x" if i % 4 == 0 else "") for i in range(20)]
    src.write_bytes(("\n".join(de) + "\n").encode())
    tgt.write_bytes(("\n".join(en) + "\n").encode())
    out = tmp_path / "out"
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"name: cr\ninput: {{src: '{src}', tgt: '{tgt}'}}\n"
        f"output: {{dir: '{out}', formats: [plain, tsv, jsonl]}}\nprogress: false\n"
        f"steps:\n  - filter: length.v1\n    keep: {{min: 1, max: 3}}\n")
    res = cli("run", recipe, "-q")
    assert res.returncode == 0, res.stderr
    kept = len(read_tsv(out / "corpus.tsv"))
    assert 0 < kept < 20
    for name in ("corpus.src", "corpus.tgt", "corpus.jsonl"):
        with open(out / name, encoding="utf-8") as fh:  # universal newlines: CR ends a line
            assert len(fh.read().splitlines()) == kept, name
    for name, n in (("corpus.tsv", kept), ("rejected.tsv", 20 - kept)):
        with open(out / name, encoding="utf-8") as fh:
            assert len(fh.read().splitlines()) == n + 1, name
    view = CorpusView(out / "corpus.tsv")
    back = [t for b in view.iter_batches() for t in b["src"]]
    assert set(back) <= set(de) and back
    pytest.importorskip("starlette")
    from bitextforge.serve.data import load_run

    assert load_run(out).n == 20  # serve reads the run: kept and rejected rows


@pytest.mark.skipif(find_tool("lmplz") is None, reason="KenLM lmplz not built (run make env)")
def test_a_model_settings_file_changed_before_resume_is_refused(bitextforge_plugin, pair_files,
                                                                  tmp_path):
    from test_cache import TEXT_A, train_lm
    from test_resume import ExplodingAfterFirstShard

    bitextforge_plugin(ExplodingAfterFirstShard, name="exploding-after-first-shard")
    s, t = pair_files(SMALL_DE, SMALL_EN)
    model = tmp_path / "lm.bin"
    train_lm(TEXT_A, model)

    def recipe(out):
        return parse_recipe(
            f"name: resume-sidecar\ninput: {{src: '{s}', tgt: '{t}'}}\n"
            f"output: {{dir: '{out}', shard_size: 4}}\nprogress: false\nbatch_size: 2\nsteps:\n"
            f"  - filter: explode_after_first_shard_test.v1\n    keep: {{min: 0}}\n"
            f"  - filter: kenlm_perplexity.v1\n    with: {{model: '{model}'}}\n    as: ppl\n"
            f"    keep: {{max: 1.0e+12}}\n", "r.yaml")

    ExplodingAfterFirstShard.armed = True
    part = tmp_path / "part"
    with pytest.raises(StepError):
        run_recipe(recipe(part))
    sidecar = model.with_name("lm.bin.json")
    meta = json.loads(sidecar.read_text())
    assert meta["lowercase"] is False
    sidecar.write_text(json.dumps({**meta, "lowercase": True}))
    ExplodingAfterFirstShard.armed = False
    with pytest.raises(BitextforgeError, match=r"changed: steps\[1\]\.with\.model\.json; 1 shard"):
        run_recipe(recipe(part))
    run_recipe(recipe(part), restart=True)
    whole = tmp_path / "whole"
    run_recipe(recipe(whole))
    assert (part / "corpus.tsv").read_bytes() == (whole / "corpus.tsv").read_bytes()


def test_a_rerun_removes_the_earlier_runs_files_it_does_not_write_and_says_it_resumed(
        bitextforge_plugin, pair_files, tmp_path):
    from test_resume import ExplodingAfterFirstShard

    s, t = pair_files(SMALL_DE, SMALL_EN)
    out = tmp_path / "out"
    cleaning = tmp_path / "clean.yaml"
    cleaning.write_text(
        f"name: a\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\nprogress: false\n"
        f"steps:\n  - clean: unicode.v1\n  - filter: length.v1\n    keep: {{min: 1}}\n"
        f"evaluate:\n  - evaluator: corpus_stats.v1\n")
    assert cli("run", cleaning, "-q").returncode == 0
    assert (out / "cleaned.tsv").exists() and (out / "reports" / "corpus_stats.v1.json").exists()
    (out / "notes.txt").write_text("mine\n")
    plain = tmp_path / "plain.yaml"
    plain.write_text(
        f"name: b\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\nprogress: false\n"
        f"steps:\n  - filter: length.v1\n    keep: {{min: 1}}\n")
    assert cli("run", plain, "-q").returncode == 0
    assert not (out / "cleaned.tsv").exists()
    assert not (out / "reports" / "corpus_stats.v1.json").exists()
    assert (out / "notes.txt").read_text() == "mine\n"  # not a name a run writes: left alone

    bitextforge_plugin(ExplodingAfterFirstShard, name="exploding-after-first-shard")
    sharded = parse_recipe(
        f"name: resume-said\ninput: {{src: '{s}', tgt: '{t}'}}\n"
        f"output: {{dir: '{tmp_path / 'sh'}', shard_size: 4}}\nprogress: false\nbatch_size: 2\n"
        f"steps:\n  - filter: explode_after_first_shard_test.v1\n    keep: {{min: 0}}\n", "r.yaml")
    ExplodingAfterFirstShard.armed = True
    with pytest.raises(StepError):
        run_recipe(sharded)
    ExplodingAfterFirstShard.armed = False
    res = run_recipe(sharded)
    assert res.manifest["output"]["resumed_shards"] == 1


def test_rows_cut_by_drop_extra_are_counted_in_the_manifest(tmp_path):
    tsv = tmp_path / "in.tsv"
    tsv.write_text("eins\tone\n"
                   "zwei\ttwo\tstray\n"
                   "drei\tthree\n"
                   "vier\tfour\tstray\tmore\n")
    out = tmp_path / "out"
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"name: extra\ninput: {{path: '{tsv}', format: tsv, columns: [src, tgt],"
        f" extra_fields_policy: drop-extra}}\noutput: {{dir: '{out}'}}\nprogress: false\n"
        f"steps:\n  - filter: length.v1\n    keep: {{min: 1}}\n")
    res = cli("run", recipe)
    assert res.returncode == 0, res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["input"]["extra_fields_dropped"] == 2
    assert any("2 TSV rows had more fields than columns" in w for w in manifest["warnings"])
    assert "2 TSV rows had more fields than columns" in res.stderr


def test_a_plugin_raising_keyboardinterrupt_at_import_is_skipped(tmp_path):
    env = fake_distribution(tmp_path, "ki_plugin", "raise KeyboardInterrupt\n")
    res = subprocess.run([sys.executable, "-m", "bitextforge.cli", "plugins", "filters"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "plugin 'ki_plugin'" in res.stderr and "not by Ctrl-C" in res.stderr
    assert "length.v1" in res.stdout


def test_a_killed_runs_scratch_folder_is_swept_and_a_tool_dies_with_its_parent(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f"bitextforge-lm-{gone}-abcd1234"
    stale.mkdir()
    alive = tmp_path / f"bitextforge-lm-{os.getppid()}-abcd1234"
    alive.mkdir()
    with scratch_dir("bitextforge-lm-", tmp_path) as d:
        assert d.is_dir() and d.name.startswith(f"bitextforge-lm-{os.getpid()}-")
        assert not stale.exists() and alive.exists()
    assert not d.exists()
    assert sweep_stale("bitextforge-lm-", tmp_path) == []

    # a parent killed with SIGKILL takes its tool (a sleeping child here) with it
    script = ("import subprocess, sys, time\n"
              "from bitextforge.processes import die_with_parent\n"
              "p = subprocess.Popen(['sleep', '60'], preexec_fn=die_with_parent)\n"
              "print(p.pid, flush=True)\n"
              "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        # a zombie still answers kill(0) until reaped: read its state
        try:
            with open(f"/proc/{child}/stat") as fh:
                if fh.read().split()[2] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the child outlived its killed parent")
