"""The rules of OpusFilter (``filters.py``), each a filter named ``<rule>.v1``:
``alphabet_ratio``, ``character_script``, ``terminal_punctuation``, ``nonzero_numerals``,
``longest_word``, ``average_word_length``, ``html_tags``, ``repetition`` and ``regexp``."""

from __future__ import annotations

import difflib
import math
from collections import Counter
from html.parser import HTMLParser

import numpy as np
import regex
from pydantic import Field, field_validator

from bitextforge import ComponentError, Filter

from .hardrules_base import PairRule, RuleFilter, SideConfig, SideRule

class AlphabetRatioConfig(SideConfig):
    """Options of alphabet_ratio.v1."""

    exclude_whitespace: bool = Field(False, description="Leave whitespace out of the ratio.")


class AlphabetRatioFilter(SideRule):
    """Share of alphabetic characters, 1 for an empty text (OpusFilter ``AlphabetRatioFilter``:
    keep 0.75 and above)."""

    name = "alphabet_ratio.v1"
    rule = "alphabet_ratio"
    worse = "min"
    default_keep = {"min": 0.75}
    Config = AlphabetRatioConfig

    def value(self, text, lang):
        """Alphabetic characters / characters."""
        if self.config.exclude_whitespace:
            text = "".join(text.split())
        return sum(ch.isalpha() for ch in text) / len(text) if text else 1.0


_NOT_ALPHA = regex.compile(r"\p{Alphabetic=No}")


class ScriptConfig(Filter.Config):
    """Options of character_script.v1."""

    src_script: str | None = Field(None, description="Unicode script of src (Latin, Cyrillic, "
                                   "Han, ...); empty: src is not scored.")
    tgt_script: str | None = Field(None, description="Unicode script of tgt.")

    @field_validator("src_script", "tgt_script")
    @classmethod
    def _known(cls, v):
        if v is not None:
            try:
                regex.compile(rf"\p{{Script={v}}}")
            except regex.error:
                raise ValueError(f"unknown Unicode script {v!r} (e.g. Latin, Cyrillic, Greek, "
                                 f"Arabic, Han)") from None
        return v


class CharacterScriptFilter(RuleFilter):
    """Share of a side's alphabetic characters that are in its script, 1 when it has none; the
    lower of the scored sides (OpusFilter ``CharacterScoreFilter``: keep 1, every letter in the
    script)."""

    name = "character_script.v1"
    rule = "character_script"
    default_keep = {"min": 1}
    Config = ScriptConfig

    def __init__(self, config=None):
        """Compile the pattern of each side's script."""
        super().__init__(config)
        c = self.config
        self.scripts = {side: regex.compile(rf"\p{{^Script={script}}}")
                        for side, script in (("src", c.src_script), ("tgt", c.tgt_script))
                        if script}
        if not self.scripts:
            raise ComponentError("character_script.v1: set src_script and/or tgt_script")

    @staticmethod
    def _share(text: str, not_script) -> float:
        alphas = _NOT_ALPHA.sub("", text)
        return len(not_script.sub("", alphas)) / len(alphas) if alphas else 1.0

    def score(self, batch):
        """The lowest share over the scored sides."""
        out = None
        for side, pat in self.scripts.items():
            v = np.fromiter((self._share(t, pat) for t in batch[side]), dtype=float,
                            count=len(batch[side]))
            out = v if out is None else np.minimum(out, v)
        return out


_TERMINAL = set(".?!…")


class TerminalPunctuationFilter(PairRule):
    """-log(1 + penalty), where the penalty is the difference between the sides' numbers of
    terminal marks (. ? ! …) plus each side's marks beyond one (OpusFilter
    ``TerminalPunctuationFilter``, Vázquez et al. 2019: keep -2 and above)."""

    name = "terminal_punctuation.v1"
    rule = "terminal_punctuation"
    default_keep = {"min": -2}

    def pair(self, src, tgt):
        """The log penalty."""
        s = sum(ch in _TERMINAL for ch in src)
        t = sum(ch in _TERMINAL for ch in tgt)
        penalty = abs(s - t) + max(s - 1, 0) + max(t - 1, 0)
        return -math.log(penalty + 1)


class NonZeroNumeralsFilter(PairRule):
    """Similarity (difflib ratio) of the sequences of non-zero digits of the two sides, 1 when
    neither has any (OpusFilter ``NonZeroNumeralsFilter``, Vázquez et al. 2019: keep 0.5 and
    above)."""

    name = "nonzero_numerals.v1"
    rule = "nonzero_numerals"
    default_keep = {"min": 0.5}

    @staticmethod
    def _digits(text: str) -> list[str]:
        return [ch for ch in text if ch in "123456789"]

    def pair(self, src, tgt):
        """The similarity of the digit sequences."""
        a, b = self._digits(src), self._digits(tgt)
        if not a and not b:
            return 1.0
        return difflib.SequenceMatcher(None, a, b).ratio()


class LongestWordFilter(RuleFilter):
    """Characters of the longest whitespace-separated word of either side (OpusFilter
    ``LongWordFilter``: below 40 keeps)."""

    name = "longest_word.v1"
    rule = "longest_word"
    default_keep = {"max": 39}

    def score(self, batch):
        """The longest word's length per row."""
        return np.fromiter((max(map(len, f"{s} {t}".split()), default=0)
                            for s, t in zip(batch["src"], batch["tgt"])), dtype=float,
                           count=len(batch["src"]))


class AverageWordLengthFilter(SideRule):
    """Average characters per whitespace-separated word, 0 for an empty text (OpusFilter
    ``AverageWordLengthFilter``: keep 2 to 20 on every side). With ``side: both`` the score is the
    side farther outside 2-20 (the shorter average when both are inside)."""

    name = "average_word_length.v1"
    rule = "average_word_length"
    default_keep = {"min": 2, "max": 20}

    def value(self, text, lang):
        """Characters / words."""
        words = text.split()
        return len("".join(words)) / len(words) if words else 0.0

    def score(self, batch):
        """The side's average, or of both sides the one farther outside the default bounds."""
        c = self.config
        if c.side != "both":
            return super().score(batch)
        a = self.side_scores(batch["src"], c.src_lang)
        b = self.side_scores(batch["tgt"], c.tgt_lang)
        lo, hi = self.default_keep["min"], self.default_keep["max"]

        def outside(v):
            return np.maximum(lo - v, v - hi)

        return np.where(outside(b) > outside(a), b, a)


class _TagCounter(HTMLParser):
    """Counts the start tags of an HTML fragment (what BeautifulSoup's html.parser finds)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = 0

    def handle_starttag(self, tag, attrs):
        self.tags += 1

    def handle_startendtag(self, tag, attrs):
        self.tags += 1


class HtmlTagsFilter(SideRule):
    """Number of HTML tags (OpusFilter ``HtmlTagFilter``: any rejects; ``html.v1`` strips them
    instead)."""

    name = "html_tags.v1"
    rule = "html_tags"
    default_keep = {"max": 0}

    def value(self, text, lang):
        """Start tags found."""
        if "<" not in text:
            return 0
        counter = _TagCounter()
        counter.feed(text)
        counter.close()
        return counter.tags


def could_repeat(text: str, min_length: int, max_length: int, threshold: int) -> bool:
    """False only where ``(\\S.{min_length-1,max_length}?)(?: *\\1){threshold,}``
    (RepetitionFilter's pattern) cannot match ``text``: an exact pre-check that spares most texts
    the pattern's ~max_length backtracking steps per character.

    A match is a string S of min_length to max_length + 1 characters at some position p, then
    ``threshold`` copies of S, each after a run of spaces (all of the run: S starts with a
    non-space). So S's first min_length characters occur at least threshold + 1 times, two of
    them at p and at the first copy's start p2; S ends where the spaces before p2 begin or
    inside them. Every such (p, p2, length) is tried here with plain string comparisons; the
    pattern's other limits (S starts with a non-space, holds no newline) are left out, which
    can only make this say True more often.
    """
    m = min_length
    if len(text) < m * (threshold + 1):
        return False
    counts = Counter(zip(*(text[i:] for i in range(m))))
    if max(counts.values()) <= threshold:
        return False
    n = len(text)
    for gram, count in counts.items():
        if count <= threshold:
            continue
        gram = "".join(gram)
        starts = []
        i = text.find(gram)
        while i >= 0:
            starts.append(i)
            i = text.find(gram, i + 1)
        for a, p in enumerate(starts):
            for p2 in starts[a + 1:]:
                spaces = 0  # the run of spaces just before p2 (not reaching back to p)
                while p2 - 1 - spaces > p and text[p2 - 1 - spaces] == " ":
                    spaces += 1
                for length in range(max(m, p2 - p - spaces), min(max_length + 1, p2 - p) + 1):
                    s = text[p:p + length]
                    at, copies = p2, 0
                    while text.startswith(s, at):
                        copies += 1
                        if copies >= threshold:
                            return True
                        at += length
                        while at < n and text[at] == " ":
                            at += 1
    return False


class RepetitionConfig(SideConfig):
    """Options of repetition.v1."""

    threshold: int = Field(2, ge=1, description="Repeats (beyond the first occurrence) that "
                           "count as a repetition.")
    min_length: int = Field(3, ge=1, description="Shortest repeated string, in characters.")
    max_length: int = Field(100, ge=1, description="Longest repeated string, in characters.")


class RepetitionFilter(SideRule):
    """Repeats of the first string of min_length to max_length characters that occurs
    threshold more times in a row, spaces between allowed; 0 when none does (OpusFilter
    ``RepetitionFilter``: any rejects)."""

    name = "repetition.v1"
    rule = "repetition"
    default_keep = {"max": 0}
    Config = RepetitionConfig

    def __init__(self, config=None):
        """Compile the pattern for the configured lengths and threshold."""
        super().__init__(config)
        c = self.config
        self.pattern = regex.compile(rf"(\S.{{{c.min_length - 1},{c.max_length}}}?)"
                                     rf"(?: *\1){{{c.threshold},}}")

    def value(self, text, lang):
        """Repeats of the first repeated string."""
        c = self.config
        if not could_repeat(text, c.min_length, c.max_length, c.threshold):
            return 0
        m = self.pattern.search(text)
        return m.group(0).count(m.group(1)) - 1 if m else 0


class RegexpConfig(Filter.Config):
    """Options of regexp.v1."""

    src: str | None = Field(None, description="Pattern searched in src (Python `regex` syntax); "
                            "empty: src is not searched.")
    tgt: str | None = Field(None, description="Pattern searched in tgt.")

    @field_validator("src", "tgt")
    @classmethod
    def _compiles(cls, v):
        if v is not None:
            try:
                regex.compile(v)
            except regex.error as exc:
                raise ValueError(f"invalid pattern {v!r}: {exc}") from None
        return v


class RegexpFilter(RuleFilter):
    """Number of sides whose pattern matches (OpusFilter ``RegExpFilter``: with the default
    ``keep: {max: 0}`` a match rejects, as ``accept_match: false``; ``keep: {min: N}`` keeps rows
    where N sides match, as ``accept_match: true``)."""

    name = "regexp.v1"
    rule = "regexp"
    default_keep = {"max": 0}
    Config = RegexpConfig

    def __init__(self, config=None):
        """Compile the patterns."""
        super().__init__(config)
        c = self.config
        self.patterns = {side: regex.compile(p) for side, p in (("src", c.src), ("tgt", c.tgt))
                         if p is not None}
        if not self.patterns:
            raise ComponentError("regexp.v1: set a src and/or tgt pattern")

    def score(self, batch):
        """Sides that match, per row."""
        n = len(batch["src"])
        out = np.zeros(n)
        for side, pat in self.patterns.items():
            out += np.fromiter((pat.search(t) is not None for t in batch[side]), dtype=float,
                               count=n)
        return out
