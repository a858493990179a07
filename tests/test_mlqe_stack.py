"""benchmarks/bench_mlqe_stack.py: the stacked MLQE-PE design is chosen by cross-validation on the
train rows alone, and dev is read for the chosen design and the recipe's reference only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import benchmark


def _write(tmp_path: Path, mod, informative: str, n: int = 400, shuffle_ids: bool = False):
    """Two corpus.tsv files: the recipe's score columns (noise) and embedding_qe, where only the
    column ``informative`` follows the human score on train; on dev every column is noise, so a
    choice that read dev could not prefer it."""
    rng = np.random.default_rng(0)
    split = np.array(["train"] * (n - 100) + ["dev"] * 100)
    y = rng.normal(size=n)
    cols = sorted({c for v in mod.CANDIDATES.values() for c in v} - {"embedding_qe"})
    vals = {c: rng.normal(size=n) for c in cols + ["embedding_qe"]}
    vals[informative] = np.where(split == "train", y + 0.3 * rng.normal(size=n),
                                 rng.normal(size=n))
    a, b = tmp_path / "scores.tsv", tmp_path / "emb.tsv"
    with open(a, "w") as f:
        f.write("\t".join(["id", "split", "da_z_mean"] + cols) + "\n")
        for i in range(n):
            f.write("\t".join([str(i), split[i], f"{y[i]:.6f}"]
                              + [f"{vals[c][i]:.6f}" for c in cols]) + "\n")
    ids = list(range(n))[::-1] if not shuffle_ids else list(range(1, n + 1))
    with open(b, "w") as f:
        f.write("id\tembedding_qe\n")
        for i in ids:
            f.write(f"{i}\t{vals['embedding_qe'][i % n]:.6f}\n")
    return a, b


def test_the_choice_follows_train_cv_and_reads_dev_for_two_designs(tmp_path, capsys):
    mod = benchmark("bench_mlqe_stack")
    a, b = _write(tmp_path, mod, "embedding_qe")
    assert mod.main([str(a), str(b)]) == 0
    out = json.loads(capsys.readouterr().out)
    cv = out["cv_pearson_on_train"]
    assert out["chosen"] == max(cv, key=cv.get)
    assert "embedding_qe" in mod.CANDIDATES[out["chosen"]]
    assert cv[out["chosen"]] > 0.8 > cv["ours"]
    # the rows of the embedding file are matched by id, not by position (written reversed)
    assert set(out["dev_pearson"]) == {out["chosen"], "ours"}
    lo, hi = out["dev_pearson"]["ours"]["interval"]
    assert lo <= out["dev_pearson"]["ours"]["pearson"] <= hi


def test_files_with_other_rows_are_refused(tmp_path):
    mod = benchmark("bench_mlqe_stack")
    a, b = _write(tmp_path, mod, "nmt_back", shuffle_ids=True)
    with pytest.raises(SystemExit, match="row ids differ"):
        mod.main([str(a), str(b)])
