"""Nichols et al. section 4.2 / Table 3 expansion schemes and 1/(m+1) sentence weights."""

import math

import pytest

from bitextforge.plugins.weighters import (DistributedWeighter, FirstWeighter, SentenceWeighter,
                                           VaryingWeighter)


def group(m, dup=False):
    rows = [{"id": 0, "variant": 0, "src": "x", "tgt": "Original sentence.", "weight": 1.0,
             "para_score": None}]
    for k in range(1, m + 1):
        rows.append({"id": 0, "variant": k, "src": "x", "tgt": f"Paraphrase {k}.", "weight": 1.0,
                     "para_score": -float(k)})
    if dup:  # differs from e1 only in case: not distinct
        rows.append({"id": 0, "variant": m + 1, "src": "x", "tgt": "PARAPHRASE 1.", "weight": 1.0,
                     "para_score": -0.5})
    return rows


def labels(weighter, g):
    return [f"e{g[i]['variant']}" for i, _ in weighter.weight(g)]


def test_table3_n4_m2():
    g = group(2)
    assert labels(DistributedWeighter(DistributedWeighter.Config(n=4)), g) == ["e0", "e1", "e2", "e0", "e1"]
    assert labels(FirstWeighter(FirstWeighter.Config(n=4)), g) == ["e0", "e1", "e2", "e0", "e0"]
    assert labels(VaryingWeighter(VaryingWeighter.Config(n=4)), g) == ["e0", "e1", "e2"]


@pytest.mark.parametrize("cls", [DistributedWeighter, FirstWeighter, VaryingWeighter])
def test_n_le_m_keeps_top_n(cls):
    g = group(5)
    assert labels(cls(cls.Config(n=2)), g) == ["e0", "e1", "e2"]


def test_d_and_f_agree_for_n_at_most_2():
    for m in range(0, 3):
        g = group(m)
        d = labels(DistributedWeighter(DistributedWeighter.Config(n=2)), g)
        f = labels(FirstWeighter(FirstWeighter.Config(n=2)), g)
        assert d == f


def test_lowercase_duplicates_are_not_counted():
    g = group(2, dup=True)  # m is still 2
    assert labels(DistributedWeighter(DistributedWeighter.Config(n=4)), g) == ["e0", "e1", "e2", "e0", "e1"]


def test_no_paraphrases_pads_original():
    g = group(0)
    assert labels(DistributedWeighter(DistributedWeighter.Config(n=2)), g) == ["e0"] * 3
    assert labels(VaryingWeighter(VaryingWeighter.Config(n=2)), g) == ["e0"]


def test_sentence_weights_uniform_sum_to_one():
    w = SentenceWeighter().weight(group(3))
    assert [x for _, x in w] == pytest.approx([0.25] * 4)


def test_sentence_weights_softmax_on_scores():
    w = SentenceWeighter(SentenceWeighter.Config(score_column="para_score")).weight(group(2))
    ws = [x for _, x in w]
    assert sum(ws) == pytest.approx(1.0)
    # original takes the best score (-1), so it ties with e1; e2 (-2) is lower by a factor e
    assert ws[0] == pytest.approx(ws[1])
    assert ws[1] / ws[2] == pytest.approx(math.e)
