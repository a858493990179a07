"""The model-free filters: token and character lengths (with the token counts shared between
steps) and duplicate detection with its normalisation (whitespace, NFKC, case, letters only)."""

import random
from unicodedata import normalize

from bitextforge.plugins import basic_filters
from bitextforge.plugins.basic_filters import DedupeFilter, LengthFilter, LengthRatioFilter

ODD = ["a b", "a  b", " a", "a ", "a\tb", "a\u00a0b", "", "ｆｕｌｌ ｗｉｄｔｈ", "Cafe\u0301",
       "Café", "A B", "x\u2028y", "ok fine", "Über den Fluss", "über  den Fluss "]


def reference_norm(t: str, lowercase: bool) -> str:
    t = " ".join(t.split())
    return normalize("NFKC", t.lower() if lowercase else t)


def test_dedupe_normalisation_matches_the_definition_on_mixed_batches():
    """Clean batches take a batch-level fast path, others the per-line one; both must give the
    documented normal form (whitespace collapsed, NFKC, optionally lowercased)."""
    rng = random.Random(0)
    for lowercase in (False, True):
        f = DedupeFilter(DedupeFilter.Config(lowercase=lowercase))
        for _ in range(500):
            batch = rng.choices(ODD, k=rng.randint(1, 6))
            assert f._norm(batch) == [reference_norm(t, lowercase) for t in batch], batch
        clean = ["ein Hund", "zwei Katzen", ""]
        assert f._norm(clean) == [reference_norm(t, lowercase) for t in clean]


def test_dedupe_finds_variants_across_batches_and_keeps_first():
    f = DedupeFilter(DedupeFilter.Config())
    first = f.score({"src": ["Ein Hund.", "Café"], "tgt": ["A dog.", "x"]})
    again = f.score({"src": ["ein  hund.", "Cafe\u0301", "Ein Hund."],
                     "tgt": [" a dog.", "X", "A cat."]})
    assert first == [1.0, 1.0] and again == [0.0, 0.0, 1.0]
    exact = DedupeFilter(DedupeFilter.Config(lowercase=False, on="src"))
    assert exact.score({"src": ["A", "a", "A"], "tgt": ["", "", ""]}) == [1.0, 1.0, 0.0]
    letters = DedupeFilter(DedupeFilter.Config(letters_only=True, on="tgt"))
    assert letters.score({"src": ["", ""], "tgt": ["It's 3 dogs!", "its 3 dogs"]}) == [1.0, 0.0]


def test_lengths_shared_between_steps_stay_correct():
    """Token counts are memoised by text for the next length step; a full memo is cleared, and
    every count is still the whitespace token count."""
    basic_filters._TOKENS.clear()
    batch = {"src": ["a b c", "", "x  y\tz "], "tgt": ["one", "two words", "a b c"]}
    shorter = LengthFilter(LengthFilter.Config(combine="shorter")).score(batch)
    longer = LengthFilter(LengthFilter.Config(combine="longer")).score(batch)
    ratio = LengthRatioFilter(LengthRatioFilter.Config()).score(batch)
    assert shorter == [1, 0, 3] and longer == [3, 2, 3]
    assert ratio == [3.0, float("inf"), 1.0]
    assert basic_filters._TOKENS["x  y\tz "] == 3
    for i in range(basic_filters._TOKENS_MAX + 10):
        basic_filters._lengths([f"w{i} x"], "tokens")
    assert len(basic_filters._TOKENS) <= basic_filters._TOKENS_MAX + 1
    assert basic_filters._lengths(["a b c", "d"], "tokens") == [3, 1]
    assert LengthFilter(LengthFilter.Config(unit="chars", side="src")).score(batch) == [5, 0, 7]
