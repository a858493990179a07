"""The streaming top/words selection keeps exactly the rows the whole-corpus selection keeps,
and holds only the rows still in the running."""

import numpy as np
import pytest

from bitextforge.pipeline.decide import StreamingSelection, select_global, selection_cut
from bitextforge.recipe.step_models import KeepSpec


def _stream(keep, scores, words, chunk):
    sel = StreamingSelection(keep)
    for i in range(0, len(scores), chunk):
        sel.add(scores[i:i + chunk], None if words is None else words[i:i + chunk])
    cut = sel.finish()
    mask = np.concatenate([sel.mask(i, scores[i:i + chunk])
                           for i in range(0, len(scores), chunk)] or [np.zeros(0, bool)])
    return mask, cut, sel


KEEPS = [dict(top=7), dict(top=0.3), dict(words=50), dict(words=50, top=12),
         dict(top=0.5, words=40), dict(words=1, order="lowest"), dict(top=3, order="lowest"),
         dict(words=10_000)]


@pytest.mark.parametrize("spec", KEEPS)
@pytest.mark.parametrize("seed", range(6))
def test_same_rows_and_cut_as_whole_corpus(spec, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    # few distinct values: many ties, which must keep stream order
    scores = rng.integers(-5, 5, n).astype(float) / 2
    scores[rng.random(n) < 0.1] = np.nan
    scores[rng.random(n) < 0.1] = np.inf          # out of scope: always kept
    scores[rng.random(n) < 0.05] = -np.inf         # ranked last, or first with order lowest
    scores[rng.random(n) < 0.05] = -0.0
    words = rng.integers(0, 6, n)
    keep = KeepSpec(**spec)
    w = words if keep.words is not None else None
    want = select_global(keep, scores, w)
    StreamingSelection.MIN_HOLD, old = 8, StreamingSelection.MIN_HOLD  # cut often
    try:
        got, cut, _ = _stream(keep, scores, w, int(rng.integers(1, 50)))
    finally:
        StreamingSelection.MIN_HOLD = old
    assert got.tolist() == want.tolist()
    assert cut == selection_cut(keep, scores, w, want)


def test_memory_bounded_by_the_budget_not_the_corpus():
    rng = np.random.default_rng(0)
    keep = KeepSpec(words=1_000)
    sel = StreamingSelection(keep)
    held = 0
    for _ in range(100):
        sel.add(rng.random(10_000), np.full(10_000, 10))
        held = max(held, len(sel._pos))
    sel.finish()
    assert sel.rows == 1_000_000
    assert held <= 3 * StreamingSelection.MIN_HOLD  # never the million rows
    assert len(sel._selected) == 100
