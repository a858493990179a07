"""benchmarks/bench_hard_news.py's reading of the MQM-rated WMT21 TED talks (``--ted`` and
bench_ted_qe.py): every rated segment with its source, each system's translation without the
error marks, and each system's MQM scores, the human reference's included (the score file calls
it ``ref-A``, the annotation file ``ref``)."""

from __future__ import annotations

from pathlib import Path

from conftest import benchmark, shared


def test_ted_segments_pairs_each_system_with_its_own_scores(monkeypatch):
    shared("mqm-ted-ende", "mqm_ted_ende.tsv")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    en, by, mqm = benchmark("bench_hard_news").ted_segments()
    assert len(en) == 529 and len(by) == 14 and "ref" in by
    assert all(len(texts) == len(en) for texts in by.values())
    assert not any("<v>" in t or "</v>" in t for texts in [en, *by.values()] for t in texts)
    assert {system for system, _ in mqm} == set(by)  # ref-A's scores are the reference's
    assert all(0 <= i < len(en) and score <= 0 for (_, i), score in mqm.items())
    ref = [score for (system, _), score in mqm.items() if system == "ref"]
    assert len(ref) > 400 and -1.0 < sum(ref) / len(ref) < -0.8  # the upstream README: 0.91
