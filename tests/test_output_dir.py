"""The output directory of a run (issue #32, "Trust every number"): two runs into one directory,
a directory that holds someone else's files, and kills during and just after the final merge of
the shards. The run's outputs must be exactly an uninterrupted run's, or the run refused with one
line that names the directory and nothing in it touched."""

import fcntl
import json
import os
import subprocess
import sys
import threading

import pytest

import bitextforge.pipeline.runners.local as local_runner
from bitextforge import BitextforgeError, Filter
from bitextforge.recipe.load import load_recipe, parse_recipe
from bitextforge.api import run_recipe

from conftest import SMALL_DE, SMALL_EN, run_cli as cli

FINAL = ("corpus.src", "corpus.tgt", "corpus.tsv", "corpus.weights", "rejected.tsv")
LOCK = ".bitextforge.lock"


def recipe_text(s, t, out, steps="  - filter: gate_test.v1\n    keep: {min: 1}\n", extra=""):
    return (f"name: outdir\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'{extra}}}\n"
            f"progress: false\nbatch_size: 2\nsteps:\n{steps}")


def listing(d):
    return {p.name: p.read_bytes() for p in d.iterdir()}


class Gate(Filter):
    """Target length in characters; the first batch it ever scores waits until released, so a
    test can start a second run while the first is inside its first shard."""

    name = "gate_test.v1"
    entered = threading.Event()
    release = threading.Event()

    def score(self, batch):
        if not Gate.entered.is_set():
            Gate.entered.set()
            assert Gate.release.wait(60)
        return [float(len(t)) for t in batch["tgt"]]


def test_a_second_run_into_a_directory_in_use_is_refused_and_the_first_completes(
        bitextforge_plugin, pair_files, tmp_path):
    bitextforge_plugin(Gate, name="gate")
    Gate.entered.clear()
    Gate.release.clear()
    s, t = pair_files(SMALL_DE, SMALL_EN)
    out = tmp_path / "out"
    text = recipe_text(s, t, out)
    first: dict = {}

    def run_first():
        try:
            first["result"] = run_recipe(parse_recipe(text, "r.yaml"))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            first["error"] = exc

    thread = threading.Thread(target=run_first)
    thread.start()
    try:
        assert Gate.entered.wait(60)
        # the same command started again while the first run is in its first shard
        with pytest.raises(BitextforgeError) as err:
            run_recipe(parse_recipe(text, "r.yaml"))
        assert str(err.value) == (f"{out}: another bitextforge run is writing into this directory "
                                  f"(pid {os.getpid()}); wait for it to finish or choose another "
                                  f"output directory")
    finally:
        Gate.release.set()
        thread.join(60)
    assert "error" not in first, first.get("error")
    kept = [de for de, en in zip(SMALL_DE, SMALL_EN) if en]  # the gate keeps min 1 character
    assert first["result"].rows_out == len(kept)
    assert (out / "corpus.src").read_text().splitlines() == kept
    assert json.loads((out / "manifest.json").read_text())["output"]["rows"] == len(kept)
    # a finished run leaves neither its lock nor its shards behind
    assert not (out / LOCK).exists() and not (out / ".shards").exists()


def test_cli_refuses_a_locked_directory_in_one_line_and_touches_nothing(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    out = tmp_path / "out"
    out.mkdir()
    r = tmp_path / "r.yaml"
    r.write_text(recipe_text(s, t, out, "  - filter: length.v1\n    keep: {min: 1}\n"))
    with open(out / LOCK, "a+") as held:  # another run holds the directory
        fcntl.flock(held, fcntl.LOCK_EX)
        before = listing(out)
        res = cli("run", r, "-q")
        assert listing(out) == before
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines() == [
        f"bitextforge: error: {out}: another bitextforge run is writing into this directory; "
        f"wait for it to finish or choose another output directory"]
    assert res.stdout == ""


def test_a_directory_of_other_files_is_refused_unless_forced(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    mine = tmp_path / "mine"  # output.dir: .. pointed at a directory like this one
    mine.mkdir()
    (mine / "corpus.src").write_text("my own corpus\n")
    (mine / "notes.txt").write_text("do not touch\n")
    before = listing(mine)
    r = tmp_path / "r.yaml"
    r.write_text(recipe_text(s, t, mine, "  - filter: length.v1\n    keep: {min: 1}\n"))
    res = cli("run", r, "-q")
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines() == [
        f"bitextforge: error: {mine}: output directory is not empty and holds no bitextforge run "
        f"(corpus.src, notes.txt); choose a new or empty directory, or rerun with --force to "
        f"write into it anyway"]
    assert listing(mine) == before
    # the user says so: the run writes there, and a rerun into its finished run needs no --force
    res = cli("run", r, "-q", "--force")
    assert res.returncode == 0, res.stderr
    assert (mine / "notes.txt").read_text() == "do not touch\n"
    assert (mine / "manifest.json").exists()
    res = cli("run", r, "-q")
    assert res.returncode == 0, res.stderr


def test_score_refuses_to_overwrite_a_file_it_did_not_write(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    r = tmp_path / "r.yaml"
    r.write_text(recipe_text(s, t, tmp_path / "unused",
                             "  - filter: length.v1\n    keep: {min: 1}\n"))
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("src\ttgt\nein\tone\n")
    res = cli("score", r, "-q", "-o", corpus)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines() == [
        f"bitextforge: error: {corpus}: exists and is not a TSV written by bitextforge score; "
        f"choose another file, or rerun with --force to overwrite it"]
    assert corpus.read_text() == "src\ttgt\nein\tone\n"
    res = cli("score", r, "-q", "-o", corpus, "--force")
    assert res.returncode == 0, res.stderr
    assert corpus.read_text().splitlines()[0].endswith("\trejected_by")
    res = cli("score", r, "-q", "-o", corpus)  # its own output: overwritten without --force
    assert res.returncode == 0, res.stderr


# a run killed with SIGKILL at a chosen point: during the merge of the shards (when the second
# final file is renamed into place) or just after it (when the reports are about to be written)
KILLED_RUN = '''
import os, signal, sys
from pathlib import Path

import bitextforge.run as run
from bitextforge.recipe.load import load_recipe

recipe, out, point = sys.argv[1], Path(sys.argv[2]), sys.argv[3]


def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


if point == "merge":
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst) == out / "corpus.tgt":
            die()
        return real_replace(src, dst, *args, **kwargs)

    os.replace = replace
else:
    run.write_reports = die
run.run_recipe(load_recipe(recipe), output_dir=str(out))
'''

SHARDED_STEPS = """\
  - filter: dedupe.v1
  - filter: length_ratio.v1
    keep: {max: 2.5}
  - weight: distributed.v1
    with: {n: 2}
"""


@pytest.mark.parametrize("point", ["merge", "reports"])
def test_a_kill_during_or_after_the_merge_is_resumed_without_processing_rows_again(
        pair_files, tmp_path, monkeypatch, point):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    r = tmp_path / "r.yaml"
    # batch_size 2, shard_size 2: four shards to merge
    r.write_text(recipe_text(s, t, "unused", SHARDED_STEPS, extra=", shard_size: 2"))
    full, part = tmp_path / "full", tmp_path / "part"
    expected = run_recipe(load_recipe(str(r)), output_dir=str(full))

    killed = subprocess.run([sys.executable, "-c", KILLED_RUN, r, part, point],
                            capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr
    assert not (part / "manifest.json").exists()
    if point == "merge":
        assert any(p.name.endswith(".tmp") for p in part.iterdir())

    def no_rows_again(*args, **kwargs):
        raise AssertionError("the rerun processed rows again")

    monkeypatch.setattr(local_runner, "run", no_rows_again)
    res = run_recipe(load_recipe(str(r)), output_dir=str(part))
    for name in FINAL:
        assert (part / name).exists() == (full / name).exists(), name
        if (full / name).exists():
            assert (part / name).read_bytes() == (full / name).read_bytes(), name
    assert (res.rows_in, res.rows_out, res.rejected) == \
        (expected.rows_in, expected.rows_out, expected.rejected)
    counts = lambda m: [(st["component"], st["rows_in"], st["rows_out"]) for st in m["steps"]]
    assert counts(res.manifest) == counts(expected.manifest)
    assert res.manifest["output"]["files"] == expected.manifest["output"]["files"]
    # nothing of the killed run is left: no temporary file, no shards, no lock
    assert sorted(p.name for p in part.iterdir()) == sorted(p.name for p in full.iterdir())


def test_a_run_stopped_during_its_evaluation_is_continued_by_the_same_command(
        bitextforge_plugin, pair_files, tmp_path):
    """A run (keep: top decides over the whole corpus, after its shards) writes its corpus, then
    stops in its evaluator (SIGTERM or Ctrl-C in a training there, or an error). Its directory
    holds corpus files and no manifest; the same command must continue it, not refuse the
    directory as someone else's (a vocabulary probe stopped by SIGTERM was refused once, while
    `bitextforge status` said the same command continues it)."""
    from bitextforge import Evaluator, Report

    class Stops(Evaluator):
        """Raises while armed, as a training stopped by SIGTERM does; else counts rows."""
        name = "stops_test.v1"
        armed = True

        def evaluate(self, corpus):
            if Stops.armed:
                raise KeyboardInterrupt
            return Report(numbers={"rows": float(len(corpus))})

    bitextforge_plugin(Stops, name="stops")
    s, t = pair_files(SMALL_DE, SMALL_EN)
    out = tmp_path / "run"
    text = recipe_text(s, t, out, steps="  - filter: length.v1\n    keep: {top: 3}\n")
    text += "evaluate:\n  - evaluator: stops_test.v1\n"
    with pytest.raises(KeyboardInterrupt):
        run_recipe(parse_recipe(text, "r.yaml"))
    assert (out / "corpus.tsv").exists() and not (out / "manifest.json").exists()
    assert (out / LOCK).exists()  # the mark that this is a run's directory
    said = cli("status", out).stdout
    assert said.startswith(f"{out}: unfinished run, every shard merged into the final files; "
                           f"the same command writes what is missing"), said
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "corpus.tsv").write_text("src\ttgt\n")
    assert cli("status", foreign).stdout.startswith(
        f"{foreign}: corpus files but no mark of a bitextforge run; a run refuses to write here")
    Stops.armed = False
    run_recipe(parse_recipe(text, "r.yaml"))
    assert json.loads((out / "manifest.json").read_text())["output"]["rows"] == 3
    assert not (out / LOCK).exists()
