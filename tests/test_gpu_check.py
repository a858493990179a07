"""benchmarks/gpu_check.py, the device check of issue #36, on its CPU path with tiny settings
(``--smoke``): every section runs and writes its figures, so the script a lent GPU machine runs
has been run before it gets there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import benchmark, shared

pytest.importorskip("ctranslate2")
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.long
def test_smoke_run_writes_every_figure(tmp_path):
    data = shared("deen-train-pool").parent
    out = tmp_path / "figures.json"
    res = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), "--smoke", "--device", "cpu",
         "--data", str(data), "--out", str(out), "--work", str(tmp_path / "work")],
        capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable},
        timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    fig = json.loads(out.read_text(encoding="utf-8"))
    assert fig["errors"] == {} and fig["device"] == "cpu"
    assert fig["train_accelerated"]["steps"] == 12 and fig["train_cpu"]["steps"] == 4
    assert fig["train_accelerated"]["updates_per_second"] > 0
    assert fig["speedup_updates_per_second"] > 0
    assert [b["backend"] for b in fig["bleu_on_cpu_of_accelerated_model"]] == \
        ["ctranslate2", "ctranslate2", "transformers"]
    assert all(b["device"] == "cpu" and b["bleu"] >= 0
               for b in fig["bleu_on_cpu_of_accelerated_model"])
    bt = fig["back_translation"]
    assert bt["sentences"] == 120 and bt["output_tokens_per_second"] > 0
    # the same model on the same device scores the same pairs the same
    assert fig["nmt_logprob"]["max_abs_score_difference"] == pytest.approx(0, abs=1e-5)
    assert fig["bilingual_cross_device"]["max_abs_embedding_difference"] == 0.0
    # the trained models are where --work said, in the format every device loads
    assert (tmp_path / "work" / "nmt-accel" / "model.safetensors").is_file()
    assert json.loads((tmp_path / "work" / "nmt-accel" / "train_log.json").read_text())[
        "device"] == "cpu"


def test_news_run_takes_the_batch_that_sees_most_tokens_with_enough_updates():
    """benchmarks/bt_news_gpu.py --probe: among the batch sizes whose budget in the phase's time
    (with a margin for phase A's fourth training) reaches --min-updates, the one that sees the
    most tokens; where none does, the fastest."""
    choose_batch = benchmark("bt_news_gpu").choose_batch
    # budgets 2000, 1750, 1000 updates: 32,000 tokens x 1000 is the most
    assert choose_batch({8000: 16.7, 16000: 15.0, 32000: 8.5}, 150, 1000) == (32000, 1000)
    # 32,000 falls below the minimum: 16,000 x 1750 beats 8,000 x 2000
    assert choose_batch({8000: 16.7, 16000: 15.0, 32000: 8.5}, 150, 1500) == (16000, 1750)
    # nothing reaches the minimum: the fastest batch, with what fits
    assert choose_batch({8000: 3.0, 16000: 2.0}, 180, 1000) == (8000, 250)


@pytest.mark.long
def test_news_run_commands_validate_before_a_gpu_is_spent(tmp_path):
    """benchmarks/bt_news_gpu.py --check validates every phase's command (recipe, inputs and each
    --set key) with ``bitextforge validate``: on 2026-11-29 a lent GPU's phase A lost its reverse
    model to a --set key that no longer existed (prepare[0].with.force), found only there."""
    data = shared("deen-train-pool").parent
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bt_news_gpu.py"), "--check", "--data",
         str(data), "--out", str(tmp_path / "out"), "--logs", str(tmp_path / "logs")],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    phases = json.loads((tmp_path / "out" / "news.json").read_text())["phases"]
    assert {p: sorted(v["exit"]) for p, v in phases.items()} == {
        "A": ["A-bitext-s1", "A-bitext-s2", "A-bitext-s3", "A-reverse"],
        "B": ["B-back-translate"], "C": ["C-bt-s1", "C-bt-s2", "C-bt-s3"]}
    assert all(rc == 0 for v in phases.values() for rc in v["exit"].values())
    # --until-phase B (the first of two calls) runs A and B, not C
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bt_news_gpu.py"), "--check", "--data",
         str(data), "--out", str(tmp_path / "out2"), "--logs", str(tmp_path / "logs2"),
         "--until-phase", "B"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert sorted(json.loads((tmp_path / "out2" / "news.json").read_text())["phases"]) == ["A", "B"]
    # a misspelt key fails the check, with the key named
    bad = [sys.executable, "-m", "bitextforge.cli", "run", "benchmarks/studies/bt-news/recipes/bitext.yaml",
           "--set=evaluate[0].with.no_such_key=1", "--force"]
    argv = benchmark("bt_news_gpu").check_command(bad, tmp_path / "scratch")
    assert argv[3] == "validate" and "--force" not in argv
    res = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode != 0 and "no_such_key" in res.stderr


def test_news_tarball_fits_what_the_device_tool_returns(tmp_path):
    """bt_news_gpu.py's news.tar.gz must stay under the 16 MiB a device call returns: on
    2026-11-30 phase B's corpus in three formats made it too large and it did not come back. The
    plain-text copies of the corpus are left out, and past the limit every file over 1 MB, while
    the reports and logs stay."""
    import tarfile
    mod = benchmark("bt_news_gpu")
    run = tmp_path / "runs" / "bt-news-gpu"
    (run / "reports").mkdir(parents=True)
    (run / "reports" / "train_and_test.v1.json").write_text('{"numbers": {"bleu": 8.0}}')
    (run / "corpus.src").write_text("ein Satz\n")
    (run / "corpus.tsv").write_text("ein Satz\ta sentence\n")
    (run / "big.bin.txt").write_bytes(os.urandom(1_500_000))  # incompressible, over 1 MB
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "A-reverse.log").write_text("exit 0\n")
    dest = tmp_path / "news.tar.gz"
    mod.pack([run], logs, dest, root=tmp_path)
    with tarfile.open(dest) as tar:
        names = set(tar.getnames())
    assert {"runs/bt-news-gpu/reports/train_and_test.v1.json", "runs/bt-news-gpu/corpus.tsv",
            "runs/bt-news-gpu/big.bin.txt", "logs/A-reverse.log"} <= names
    assert "runs/bt-news-gpu/corpus.src" not in names
    mod.pack([run], logs, dest, root=tmp_path, limit=1_000_000)
    with tarfile.open(dest) as tar:
        names = set(tar.getnames())
    assert "runs/bt-news-gpu/big.bin.txt" not in names
    assert {"runs/bt-news-gpu/reports/train_and_test.v1.json", "logs/A-reverse.log"} <= names
    assert dest.stat().st_size < 1_000_000
