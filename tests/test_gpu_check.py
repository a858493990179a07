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

from conftest import shared

pytest.importorskip("ctranslate2")
ROOT = Path(__file__).resolve().parents[1]


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
