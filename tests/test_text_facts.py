"""Column facts shared between steps (whitespace token counts, whitespace-normal rows), the
per-run memo of text scores, and the plain writer's batch path."""

import random
import sys

import numpy as np
import pytest

from bitextforge import text_facts
from bitextforge.io.corpus import take_rows
from bitextforge.cache.memo import TextScoreMemo
from bitextforge.io.corpus import plain_text as plain_lines

#: every character str.split() splits on, and a few that it does not but that sit near them
SPACES = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
PIECES = SPACES + [" ", " ", "  ", "a", "bc", "ä", "€", "\u2019", "\u00a9", "\u200b", "\u2030",
                   "\u3001", "\x01", "\x7f", "é", "\U0001f600"]


def expected(texts):
    return ([len(t.split()) for t in texts], [" ".join(t.split()) == t for t in texts])


def test_facts_match_str_split_on_random_texts():
    """The byte-wise counts agree with str.split() for every whitespace character Python knows,
    next to multi-byte neighbours, at the ends of rows and in empty rows."""
    rng = random.Random(7)
    no_break = [p for p in PIECES if p != "\n"]  # a line break inside a text: the per-row path
    for k in range(3000):
        pieces = no_break if k % 4 else PIECES
        texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 7)))
                 for _ in range(rng.randint(1, 7))]
        facts = text_facts._analyse(texts)
        counts, normal = expected(texts)
        assert facts.tokens.tolist() == counts, texts
        assert facts.normal.tolist() == normal, texts


def test_facts_of_edge_columns():
    for texts in ([], [""], ["", ""], [" "], ["a"], ["a\nb", "c"], ["\n", " x "]):
        facts = text_facts._analyse(texts)
        assert (facts.tokens.tolist(), facts.normal.tolist()) == expected(texts), texts


def test_facts_are_computed_once_per_column_and_follow_selected_rows():
    src = ["a b", "c  d e", " f", "g"]
    batch = {"id": [0, 1, 2, 3], "src": src, "tgt": ["x", "y", "z", "w"]}
    first = text_facts.text_facts(src)
    assert text_facts.text_facts(src) is first
    part = take_rows(batch, [3, 1])
    carried = text_facts._cached(part["src"])
    assert carried is not None and carried.tokens.tolist() == [1, 3]
    assert carried.normal.tolist() == [True, False]
    # an equal list that is another object is analysed on its own
    assert text_facts.text_facts(list(src)) is not first


def test_memo_computes_each_distinct_text_once_and_grows():
    calls = []

    def compute(texts):
        calls.append(list(texts))
        return [len(t) + 0.5 for t in texts]

    memo = TextScoreMemo(initial_bits=2)
    texts = [f"text {i % 37}" for i in range(100)]
    got = memo.scores(texts, compute)
    assert got.tolist() == [len(t) + 0.5 for t in texts]
    assert sum(map(len, calls)) == 37 and memo.count == 37 and len(memo.table.keys) >= 74
    again = memo.scores(texts[::-1] + ["new"], compute)
    assert again.tolist() == [len(t) + 0.5 for t in texts[::-1]] + [3.5]
    assert calls[-1] == ["new"] and memo.hits == 63 + 100 and memo.computed == 38


def test_memo_holds_at_most_its_bound_and_forgets_no_score():
    """A crawl of distinct texts: the memo starts again whenever a batch would pass its bound,
    so its table stays the size the bound needs, and every score is still the computed one."""
    calls = []

    def compute(texts):
        calls.append(len(texts))
        return [len(t) + 0.5 for t in texts]

    memo = TextScoreMemo(initial_bits=2, max_texts=64)
    sizes = []
    for b in range(50):
        texts = [f"line {b} {i}" for i in range(20)] + ["boilerplate"] * 5
        assert memo.scores(texts, compute).tolist() == [len(t) + 0.5 for t in texts]
        assert memo.count <= 64
        sizes.append(len(memo.table.keys))
    assert max(sizes) <= 256 and memo.restarts >= 10  # unbounded: 1,001 texts, 2,048 slots
    assert memo.computed == sum(calls) == 1000 + memo.restarts + 1  # boilerplate after each restart


def test_memo_refuses_a_scorer_that_returns_the_wrong_number_of_scores():
    with pytest.raises(ValueError, match="expected 2 scores"):
        TextScoreMemo().scores(["a", "b"], lambda texts: [1.0])


def test_plain_lines_writes_one_line_per_text():
    assert plain_lines([]) == ""
    assert plain_lines(["a", "", "b c"]) == "a\n\nb c\n"
    assert plain_lines(["a\nb", "c"]) == "a b\nc\n"
    assert np.array_equal(text_facts.token_counts(["a b", "c"]), [2, 1])
