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
        # long batches are checked slice by slice before text by text
        for size in (31, 32, 33, 200):
            batch = ["ok fine"] * size
            for i in rng.sample(range(size), 3):
                batch[i] = rng.choice(ODD)
            assert f._norm(batch) == [reference_norm(t, lowercase) for t in batch]


def test_dedupe_finds_variants_across_batches_and_keeps_first():
    f = DedupeFilter(DedupeFilter.Config())
    first = f.score({"src": ["Ein Hund.", "Café"], "tgt": ["A dog.", "x"]})
    again = f.score({"src": ["ein  hund.", "Cafe\u0301", "Ein Hund."],
                     "tgt": [" a dog.", "X", "A cat."]})
    assert list(first) == [1.0, 1.0] and list(again) == [0.0, 0.0, 1.0]
    exact = DedupeFilter(DedupeFilter.Config(lowercase=False, on="src"))
    assert list(exact.score({"src": ["A", "a", "A"], "tgt": ["", "", ""]})) == [1.0, 1.0, 0.0]
    letters = DedupeFilter(DedupeFilter.Config(letters_only=True, on="tgt"))
    assert list(letters.score({"src": ["", ""], "tgt": ["It's 3 dogs!", "its 3 dogs"]})) == \
        [1.0, 0.0]


def test_dedupe_state_round_trips_and_refuses_keys_of_another_hash():
    """A resumed run gets the seen keys back; keys saved by the earlier blake2b version cannot
    be compared with xxh3 keys, so such a state is refused with a one-line error."""
    import pytest

    from bitextforge import ComponentError

    f = DedupeFilter(DedupeFilter.Config())
    f.score({"src": ["a", "b"], "tgt": ["x", "y"]})
    g = DedupeFilter(DedupeFilter.Config())
    g.set_state(f.get_state())
    assert list(g.score({"src": ["b", "c"], "tgt": ["y", "z"]})) == [0.0, 1.0]
    with pytest.raises(ComponentError, match="--restart"):
        g.set_state({b"\x00" * 8})


def test_lengths_shared_between_steps_stay_correct():
    """Token counts are worked out once per column and shared by the next length steps; every
    count is still the whitespace token count, and the ratio follows its definition."""
    from bitextforge import text_facts

    batch = {"src": ["a b c", "", "x  y\tz "], "tgt": ["one", "two words", "a b c"]}
    shorter = LengthFilter(LengthFilter.Config(combine="shorter")).score(batch)
    assert text_facts.text_facts(batch["src"]) is text_facts.text_facts(batch["src"])
    longer = LengthFilter(LengthFilter.Config(combine="longer")).score(batch)
    ratio = LengthRatioFilter(LengthRatioFilter.Config()).score(batch)
    assert list(shorter) == [1, 0, 3] and list(longer) == [3, 2, 3]
    assert list(ratio) == [3.0, float("inf"), 1.0]
    assert list(basic_filters._lengths(["a b c", "d"], "tokens")) == [3, 1]
    assert list(LengthRatioFilter(LengthRatioFilter.Config()).score(
        {"src": ["", "a b"], "tgt": ["", "c d e"]})) == [1.0, 1.5]
    assert list(LengthFilter(LengthFilter.Config(unit="chars", side="src")).score(batch)) == \
        [5, 0, 7]
