"""The faster forms of the originals' patterns (issue #34, item 3): repeated_words.v1's rewrite
of bicleaner-hardrules' pattern, and the exact pre-checks of repetition.v1, urls.v1 and
glued_words.v1, which skip a pattern only where it cannot match. Every score and match is the
one the original patterns give, on hand-made edge cases and on thousands of random texts built
from a small alphabet, where repeats are common."""

import random

import pytest
import regex

from bitextforge.plugins import hardrules as hr

#: texts on the edges of what the patterns see: case folding under (?i) (Turkish i, sharp s,
#: Kelvin sign, titlecase digraphs), Unicode word boundaries, every kind of whitespace, repeats
#: at the start and at the end, very long words
EDGES = [
    "", " ", "a", "aa", "a a", "ab ab", "ab  ab", "ab" + " " * 10 + "ab", "a" + " " * 10 + "a b",
    "foo bar foo bar", "foo bar\nfoo bar", "foo bar\tfoo bar", "foo\tbar foo\tbar",
    "foo bar foo barbaz", "foo bar foo bar-baz", "x-foo bar foo bar", "(foo bar foo bar)",
    "Das Haus das Haus ist rot.", "DAS HAUS das haus", "Zugfahrt zugfahrt", "Zugfahrt Zugfahrts",
    "word word", "Word WORD word", "the cat saw the dog on the mat", "New York New York",
    "Straße STRASSE straße", "ẞtraße ßtraße", "İstanbul istanbul", "Istanbul ıstanbul",
    "Kelvin \u212aelvin kelvin", "ǅemal ǆemal ǄEMAL", "e\u0301te\u0301 E\u0301TE\u0301",
    "über über", "Über ÜBER", "naïve naïve naïve", "日本語 日本語", "日本語日本語",
    "abc\u00a0abc\u00a0abc", "abc\u3000abc", "abc\u2028abc abc", "abc\u0085abc",
    "a\u200bb a\u200bb", "12345678 12345678", "1234 abcd 1234 abcd", "x_y x_y x_y",
    "Das ist ist ist gut", "ab ab ab", "ab ab ab ab", "abc abc abc", "abcabcabc", "abc  abc abc",
    "abc\tabc\tabc", "abc\nabc\nabc", " abc abc abc", "abc abc abc ", "xyzabcabcabc",
    "abcabcab", "aaaa", "aaaaaaaaa", "a a a a a a", "   abc", "abc   ", "ha ha ha ha!",
    "Ende. Ende. Ende.", "no no no no no", "lalala", "la la la", "lalala lalala lalala",
    "x" * 300, "x" * 300 + " " + "x" * 300, ("abcdefghij" * 12) + " " + ("abcdefghij" * 12),
    "Donaudampfschifffahrtsgesellschaft " * 3, "w" * 101 + "w" * 101 + "w" * 101,
    "ab" * 60, "a b" * 40, "The train leaves at nine o'clock.", "Der Zug fährt um neun Uhr ab.",
    "Der Zug fährt ab ab ab ab.", "- - - - -", "... ... ...", "!!! !!! !!!",
    "Mehr auf www.example.com heute.", "https://a.b/c?d=e", "z.b. so", "E-Mail: a@b.de.",
    "Ende.Anfang", "v1.2.3", "HomeAboutContact", "YouTube", "PayPal", "McDonald's", "iPhone",
    "ǅemalǅemal", "AªBªCd", "ÄbcÖde", "ABC", "AbC", "AbCd", "Ab Cd", "Ab-Cd", "AbⓐCd", "AⓐbCd",
]

#: tokens and separators that make random texts repeat often, in several cases and scripts
TOKENS = ["a", "A", "ab", "AB", "aB", "abc", "ß", "SS", "ẞ", "ss", "i", "I", "İ", "ı", "k", "K",
          "\u212a", "é", "É", "e\u0301", "ǅ", "ǆ", "x-y", "(a", "a)", "12", "_", "..", "日本",
          "Ab", "ba", "Zug", "zug", "ZUG", "www", ".com", ".de", "http://", "a.b", "Home", "About",
          "YouTube", "McDonald", "ª", "ʰ", "ⓐ", "Ⓐ", "Ⅳ", "ⅰ", "Ǆ"]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", " \n ", "\u00a0", "\u3000", "", "-", "."]
CHARS = "ab A.-\t\n"


def random_texts(n: int, seed: int) -> list[str]:
    """``n`` texts, up to 40 pieces long, in turn: tokens from TOKENS joined by SEPARATORS;
    characters of CHARS; and a piece of either repeated 1-4 times, 0-2 spaces between, inside
    such text."""
    rng = random.Random(seed)

    def tokens(size):
        return "".join(rng.choice(TOKENS) + rng.choice(SEPARATORS) for _ in range(size))

    def chars(size):
        return "".join(rng.choice(CHARS) for _ in range(size))

    out = []
    for k in range(n):
        kind = k % 3
        if kind == 0:
            out.append(tokens(rng.randint(0, 40)))
        elif kind == 1:
            out.append(chars(rng.randint(0, 40)))
        else:
            piece = rng.choice([tokens, chars])(rng.randint(1, 8))
            run = "".join(piece + " " * rng.randint(0, 2) for _ in range(rng.randint(1, 4)))
            out.append(chars(rng.randint(0, 6)) + run + tokens(rng.randint(0, 3)))
    return out


TEXTS = EDGES + random_texts(6000, 34)


ORIGINAL_WORDS = regex.compile(hr.BICLEANER_REPEATED_WORDS)


def _old_repeated_words(text: str, lang: str | None) -> int:
    """repeated_words.v1's score with bicleaner-hardrules' own pattern."""
    pattern = ORIGINAL_WORDS if lang is None or lang in hr.WORD_LANGS else hr._REPEATED_CHARS
    least = 4 if lang in hr.CJK else 7
    return sum(1 for m in pattern.finditer(text)
               if len(m.group().strip()) > least and hr._ALPHA.search(m.group()))


@pytest.mark.parametrize("lang", [None, "de", "ja"])
def test_repeated_words_scores_are_the_originals(lang):
    f = hr.RepeatedWordsFilter(hr.RepeatedWordsFilter.Config(side="src"))
    got = [f.value(t, lang) for t in TEXTS]
    want = [_old_repeated_words(t, lang) for t in TEXTS]
    diff = [(t, g, w) for t, g, w in zip(TEXTS, got, want) if g != w]
    assert not diff, diff[:5]
    assert sum(map(bool, want)) > 50  # the random texts do repeat


def test_repeated_words_matches_are_the_originals():
    """Stronger than equal scores: the faster pattern finds every match of bicleaner's, at the
    same span, with the same repeated group, counted or not."""
    def matches(pattern, text):
        return [(m.span(), m.group(1)) for m in pattern.finditer(text)]

    diff = [t for t in TEXTS if matches(hr._REPEATED_WORDS, t) != matches(ORIGINAL_WORDS, t)]
    assert not diff, diff[:5]
    assert sum(1 for t in TEXTS if ORIGINAL_WORDS.search(t)) > 300


@pytest.mark.parametrize("options", [{}, {"threshold": 1}, {"threshold": 3},
                                     {"min_length": 1, "max_length": 4},
                                     {"min_length": 5, "max_length": 8}])
def test_repetition_scores_and_spans_are_the_patterns(options):
    f = hr.RepetitionFilter(hr.RepetitionFilter.Config(side="src", **options))
    c = f.config
    diff, matched = [], 0
    for t in TEXTS:
        m = f.pattern.search(t)
        want = m.group(0).count(m.group(1)) - 1 if m else 0
        could = hr.could_repeat(t, c.min_length, c.max_length, c.threshold)
        matched += bool(m)
        # the pre-check may only say no where the pattern finds no match (no span to lose)
        if f.value(t, None) != want or (m and not could):
            diff.append((t, f.value(t, None), want, m and m.span()))
    assert not diff, diff[:5]
    assert matched > 100


def test_repetition_precheck_skips_plain_sentences():
    for t in ["The train leaves at nine o'clock and the bus at ten.",
              "Die Eisenbahnen verkehren in den Tälern, an den Seen und in den Bergen."]:
        assert not hr.could_repeat(t, 3, 100, 2)
        assert hr.could_repeat(t + " ha ha ha", 2, 100, 2)


#: rule -> its pattern before the pre-check, and the score the rule gave with it alone
ORIGINALS = {
    "urls": lambda t: len(hr._URL.findall(t)),
    "glued_words": lambda t: len(hr._GLUED.findall(t)),
    "only_symbols": lambda t: len(hr._ALPHA.findall(t)) / len(t) if t else 1.0,
}


@pytest.mark.parametrize("rule", sorted(ORIGINALS))
def test_prechecked_rules_score_as_their_patterns(rule):
    f = hr.RULES[rule](hr.RULES[rule].Config(side="src"))
    diff = [(t, f.value(t, None), ORIGINALS[rule](t)) for t in TEXTS
            if f.value(t, None) != ORIGINALS[rule](t)]
    assert not diff, diff[:5]
    if rule != "only_symbols":
        assert sum(1 for t in TEXTS if ORIGINALS[rule](t)) > 30
