"""bleu.v1 / chrf.v1: sacrebleu corpus scores and paired bootstrap, checked against sacrebleu's own
command line on real system outputs (mqm-ted-ende) and real multiple references (wmt19)."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bitextforge import InputError
from bitextforge.io.corpus import CorpusView
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe
from bitextforge.plugins.evaluation.mt_metrics import BleuEvaluator, ChrfEvaluator

from conftest import read_lines, shared

SACREBLEU = Path(sys.executable).with_name("sacrebleu")


def mqm_systems(tmp_path: Path, names: list[str]) -> dict[str, Path]:
    """Write each system's 529 rated TED segments (error marks <v></v> removed) to a file."""
    tsv = shared("mqm-ted-ende", "mqm_ted_ende.tsv")
    seg: dict[str, dict[int, str]] = {}
    src: dict[int, str] = {}
    with open(tsv, encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(rows)
        for r in rows:
            seg.setdefault(r[0], {})[int(r[3])] = re.sub(r"</?v>", "", r[6])
            src[int(r[3])] = r[5]
    out = {}
    for name in [*names, "src"]:
        lines = seg[name] if name != "src" else src
        p = tmp_path / f"{name}.txt"
        p.write_text("".join(lines[i] + "\n" for i in sorted(lines)), encoding="utf-8")
        out[name] = p
    return out


def cli_paired_bs(ref: Path, base: Path, system: Path) -> dict[str, tuple[float, ...]]:
    """sacrebleu's own CLI: metric -> (score, mean, ci, p) for the system (1-decimal table)."""
    out = subprocess.run([str(SACREBLEU), ref.name, "-i", base.name, system.name, "-m", "bleu",
                          "chrf", "--paired-bs", "-f", "text"], capture_output=True, text=True,
                         check=True, cwd=system.parent).stdout
    lines = out.splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.strip("│ ").startswith(system.name))
    vals = re.findall(r"([\d.]+) \(([\d.]+) ± ([\d.]+)\)", lines[row])
    ps = re.findall(r"p = ([\d.]+)", lines[row + 1])
    return {m: (*map(float, v), float(p)) for m, v, p in zip(("bleu", "chrf"), vals, ps)}


def test_paired_bootstrap_matches_sacrebleu_cli(tmp_path):
    files = mqm_systems(tmp_path, ["ref", "Facebook-AI", "HuaweiTSC"])
    cli = cli_paired_bs(files["ref"], files["Facebook-AI"], files["HuaweiTSC"])
    # through a real run: the hypothesis is the corpus column tgt, baseline and reference are files
    recipe = f"""
name: mt-eval
input: {{src: '{files["src"]}', tgt: '{files["HuaweiTSC"]}'}}
output: {{dir: '{tmp_path / "run"}', formats: [tsv]}}
progress: false
evaluate:
  - evaluator: bleu.v1
    with: {{references: ['{files["ref"]}'], baseline: '{files["Facebook-AI"]}'}}
  - evaluator: chrf.v1
    with: {{references: ['{files["ref"]}'], baseline: '{files["Facebook-AI"]}'}}
"""
    res = run_recipe(parse_recipe(recipe, "mt.yaml"))
    for key, metric in (("bleu.v1", "bleu"), ("chrf.v1", "chrf")):
        nums = res.reports[key]["numbers"]
        score, mean, ci, p = cli[metric]
        assert round(nums["score"], 1) == score
        assert round(nums["mean"], 1) == mean
        assert round(nums["ci"], 1) == ci
        assert round(nums["p_value"], 4) == p
        # the two systems are close: not significant at 0.05 (p = 0.21 BLEU, 0.17 chrF here)
        assert 0.05 < nums["p_value"] < 0.5
        assert nums["ci_low"] < nums["baseline_score"] < nums["ci_high"]
        assert "bs:1000|seed:12345" in res.reports[key]["summary"]
    items = (tmp_path / "run" / "reports" / "bleu.v1.json").read_text()
    assert '"sentence_bleu"' in items


def test_filtered_rows_pick_reference_lines_by_id(tmp_path):
    """After a filter drops rows, the file reference of each kept row is its input line."""
    import sacrebleu

    files = mqm_systems(tmp_path, ["ref", "UEdin"])
    recipe = f"""
name: mt-eval-filtered
input: {{src: '{files["src"]}', tgt: '{files["UEdin"]}'}}
output: {{dir: '{tmp_path / "run"}', formats: [tsv]}}
progress: false
steps:
  - filter: length.v1
    with: {{side: tgt}}
    keep: {{min: 10}}
evaluate:
  - evaluator: bleu.v1
    with: {{references: ['{files["ref"]}'], per_item: false}}
"""
    res = run_recipe(parse_recipe(recipe, "mt.yaml"))
    hyp = files["UEdin"].read_text(encoding="utf-8").splitlines()
    ref = files["ref"].read_text(encoding="utf-8").splitlines()
    kept = [i for i, h in enumerate(hyp) if len(h.split()) >= 10]
    assert 0 < len(kept) < len(hyp)
    expect = sacrebleu.corpus_bleu([hyp[i] for i in kept], [[ref[i] for i in kept]]).score
    assert res.reports["bleu.v1"]["numbers"]["score"] == pytest.approx(expect)
    assert res.reports["bleu.v1"]["numbers"]["sentences"] == len(kept)


def test_multiple_references_match_cli(tmp_path):
    d = "wmt19-ende-multiref"
    # the first 400 lines keep the test fast; hqall has CRLF line ends (read_lines drops them)
    cut = {}
    for name in ("ref-google-arp", "ref-wmt", "ref-google-hqall"):
        cut[name] = tmp_path / f"{name}.de"
        cut[name].write_text("".join(x + "\n" for x in read_lines(
            shared(d, f"newstest2019.{name}.de"), 400)), encoding="utf-8")
    hyp = cut["ref-google-arp"]
    refs = [cut["ref-wmt"], cut["ref-google-hqall"]]
    cli = subprocess.run([str(SACREBLEU), *map(str, refs), "-i", str(hyp), "-m", "bleu", "chrf",
                          "-b", "-w", "4", "-f", "text"], capture_output=True, text=True, check=True).stdout.split()
    # a tsv corpus file is all an evaluator needs; the hypothesis here is a file, not a column
    tsv = tmp_path / "c.tsv"
    tsv.write_text("id\tsrc\n0\tx\n", encoding="utf-8")
    view = CorpusView(tsv)
    cfg = dict(hypothesis=str(hyp), references=[str(r) for r in refs], per_item=False)
    bleu = BleuEvaluator(BleuEvaluator.Config(**cfg)).evaluate(view)
    chrf = ChrfEvaluator(ChrfEvaluator.Config(**cfg)).evaluate(view)
    assert f"{bleu.numbers['score']:.4f}" == cli[0]
    assert f"{chrf.numbers['score']:.4f}" == cli[1]
    assert "nrefs:2" in bleu.summary
    # two references score higher than either alone
    one = BleuEvaluator(BleuEvaluator.Config(**{**cfg, "references": [str(refs[0])]})).evaluate(view)
    assert bleu.numbers["score"] > one.numbers["score"]


def test_unaligned_files_and_missing_file_are_clear_errors(tmp_path):
    tsv = tmp_path / "c.tsv"
    tsv.write_text("id\tsrc\ttgt\n0\ta\tDas ist gut.\n1\tb\tNoch ein Satz.\n", encoding="utf-8")
    view = CorpusView(tsv)
    short = tmp_path / "ref.txt"
    short.write_text("Das ist gut.\n", encoding="utf-8")
    with pytest.raises(InputError, match="has 1 lines.*line-aligned"):
        BleuEvaluator(BleuEvaluator.Config(references=[str(short)])).evaluate(view)
    with pytest.raises(InputError, match="nope.txt: no such file"):
        ChrfEvaluator(ChrfEvaluator.Config(references=[str(tmp_path / "nope.txt")])).evaluate(view)
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("a\nb\nc\n", encoding="utf-8")
    with pytest.raises(InputError, match="has 1 lines, the hypothesis"):
        BleuEvaluator(BleuEvaluator.Config(hypothesis=str(hyp), references=[str(short)])).evaluate(view)
