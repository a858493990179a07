"""``bitextforge status``: a finished run, an unfinished sharded run, and unfinished NMT trainings
(with the update their state continues from, and whether the process that wrote a prepare
trainer's partial output still runs) are each said in one line; a missing directory is a line
among the others, and an error only when no directory given exists."""

import os

import pytest

from bitextforge.errors import StepError
from bitextforge.api import run_recipe

from conftest import SMALL_DE, SMALL_EN, read_lines, run_cli, shared
from test_resume import ExplodingAfterFirstShard, exploding_recipe


def _dead_pid() -> int:
    """A process id that no running process has."""
    for pid in range(4_000_000, 3_000_000, -7919):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            continue
    raise AssertionError("no free process id found")


def test_status_says_a_finished_run_and_the_shards_of_an_unfinished_one(
        bitextforge_plugin, pair_files, tmp_path):
    bitextforge_plugin(ExplodingAfterFirstShard, name="exploding-after-first-shard")
    s, t = pair_files(SMALL_DE, SMALL_EN)

    ExplodingAfterFirstShard.armed = False
    run_recipe(exploding_recipe(s, t, tmp_path / "done"))
    ExplodingAfterFirstShard.armed = True
    with pytest.raises(StepError):
        run_recipe(exploding_recipe(s, t, tmp_path / "part"))
    ExplodingAfterFirstShard.armed = False
    res = run_cli("status", tmp_path / "done", tmp_path / "part", tmp_path)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'done'}: finished run of ")
    assert lines[0].endswith(f" min: {len(SMALL_DE)} rows kept, 0 rejected")
    assert lines[1] == (f"{tmp_path / 'part'}: unfinished run, 1 shard finished; the same "
                        f"command continues after them")
    assert lines[2] == f"{tmp_path}: no run and no unfinished training here"


def test_status_says_where_each_unfinished_training_continues(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    import bitextforge.plugins.nmt.train as nmt_train
    from test_nmt_pipeline import _short_run

    data = tmp_path / "data"
    data.mkdir()
    for lang in ("de", "en"):  # the 300 pairs of test_nmt_pipeline.py's tiny trainings
        lines = read_lines(shared("multi30k", f"train.{lang}.gz"), 300)
        (data / f"t.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (data / f"test.{lang}").write_text("\n".join(lines[:8]) + "\n", encoding="utf-8")

    real_save = nmt_train.save_resume
    saves = []

    def save_then_stop(path, state):
        real_save(path, state)
        saves.append(state["step"])
        raise KeyboardInterrupt

    monkeypatch.setattr(nmt_train, "save_resume", save_then_stop)
    models = tmp_path / "models"
    dead, running = models / f".de-en.partial-{_dead_pid()}", models / f".en-de.partial-{os.getpid()}"
    for out in (dead, running):
        opts = nmt_train.TrainOptions(**_short_run(data, max_steps=7,
                                                   resume_every_steps=3), output=str(out))
        with pytest.raises(KeyboardInterrupt):
            nmt_train.train(opts, log=lambda m: None)
    assert saves == [3, 3]
    (models / "finished").mkdir()  # a model directory without a state is not listed
    res = run_cli("status", models)
    assert res.returncode == 0, res.stderr
    head, title, *rows = res.stdout.splitlines()
    assert head == f"{models}:" and title == "  unfinished trainings:"
    said = "train-nmt state at update 3/7 (epoch 1, "
    assert rows[0].startswith(f"    {dead}: {said}")
    assert rows[0].endswith("the same command continues from it (left by a training that stopped)")
    assert rows[1].startswith(f"    {running}: {said}")
    assert rows[1].endswith(f"(pid {os.getpid()}, which wrote it, is running)")
    assert len(rows) == 2


def test_status_of_only_missing_directories_is_an_error(tmp_path):
    res = run_cli("status", tmp_path / "nothing", tmp_path / "neither")
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        f"bitextforge: error: {tmp_path / name}: does not exist (give a run's output directory "
        f"or a model directory)" for name in ("nothing", "neither")]


def test_status_reports_the_run_that_exists_beside_a_missing_directory(
        bitextforge_plugin, pair_files, tmp_path):
    """The README's ``status runs/quickstart models`` on a fresh checkout: no models/ yet, and
    the run is still reported."""
    bitextforge_plugin(ExplodingAfterFirstShard, name="exploding-after-first-shard")
    s, t = pair_files(SMALL_DE, SMALL_EN)
    ExplodingAfterFirstShard.armed = False
    run_recipe(exploding_recipe(s, t, tmp_path / "done"))
    res = run_cli("status", tmp_path / "done", tmp_path / "models")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'done'}: finished run of ")
    assert lines[1] == f"{tmp_path / 'models'}: does not exist"
