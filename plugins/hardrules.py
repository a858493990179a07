"""Rule filters with the semantics of bicleaner-hardrules 2.x and OpusFilter, and
``hardrules.v1``, a composite that runs a chosen list of them and names the rule that fired.

Every rule is an ordinary filter: a score per row and a default ``keep`` bound that rejects
exactly the rows the original rule rejects (bounds are inclusive, as every ``keep`` is; where the
original compares strictly, the bound is the next whole number, or the doc says where a ratio
differs at the boundary itself). A side rule scores each side and keeps the worse score of the
two (``side: both``), or one side. Rules that depend on the language (bicleaner's CJK, Icelandic
or Portuguese exceptions) read ``src_lang``/``tgt_lang``.

bicleaner-hardrules (``hardrules.py``, 2.x): ``urls``, ``only_symbols``, ``only_numbers``,
``repeated_words``, ``glued_words``, ``unicode_noise``, ``space_noise``, ``bad_encoding``,
``titles``, ``literals``, ``parentheses``, ``escaped_unicode``, ``identical``, ``breadcrumbs``,
``too_long``, ``too_short``. OpusFilter (``filters.py``): ``alphabet_ratio``,
``character_script``, ``terminal_punctuation``, ``nonzero_numerals``, ``longest_word``,
``average_word_length``, ``html_tags``, ``repetition``, ``regexp``. Each rule's filter is named
``<rule>.v1``.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from html.parser import HTMLParser
from typing import ClassVar, Literal

import numpy as np
import regex
from pydantic import Field, field_validator

import bitextforge
from bitextforge import ComponentError, Filter
from bitextforge.api import take_rows
from bitextforge.recipe.step_models import KeepSpec
from bitextforge.pipeline.executors import within_bounds

#: the languages bicleaner-hardrules 2.10.8 counts in characters, ISO 639-1 and -3 codes
CJK = {"zh", "ja", "ko", "yue", "bo", "bod", "cmn", "zho", "jpn", "kor"}


class RuleFilter(Filter):
    """Common base of the rule filters: ``fires(batch)`` is where the rule rejects a row, which
    is where its score falls outside its default ``keep``."""

    #: the rule's name in hardrules.v1 and in rejected.tsv
    rule: ClassVar[str] = ""

    def fires(self, batch) -> np.ndarray:
        """True for each row the rule rejects."""
        scores = np.asarray(self.score(batch), dtype=float)
        return ~within_bounds(KeepSpec(**self.default_keep), scores)


class SideConfig(Filter.Config):
    """Options every side rule has."""

    side: Literal["src", "tgt", "both"] = Field("both", description="Score one side, or both "
                                                "sides keeping the worse score.")
    src_lang: str | None = Field(None, description="Language of src (ISO 639-1), for the rules "
                                 "with exceptions per language.")
    tgt_lang: str | None = Field(None, description="Language of tgt (ISO 639-1).")


class SideRule(RuleFilter):
    """A rule that scores each side on its own; ``worse`` says which of two scores is worse."""

    worse: ClassVar[str] = "max"
    Config = SideConfig

    def value(self, text: str, lang: str | None) -> float:
        """The rule's score of one text in language ``lang``."""
        raise NotImplementedError

    def side_scores(self, texts, lang) -> np.ndarray:
        """The score of every text of one side."""
        value = self.value
        return np.fromiter((value(t, lang) for t in texts), dtype=float, count=len(texts))

    def score(self, batch):
        """The side's score, or the worse of both sides' scores."""
        c = self.config
        if c.side != "both":
            return self.side_scores(batch[c.side], getattr(c, f"{c.side}_lang"))
        a = self.side_scores(batch["src"], c.src_lang)
        b = self.side_scores(batch["tgt"], c.tgt_lang)
        return np.maximum(a, b) if self.worse == "max" else np.minimum(a, b)


# --------------------------------------------------------------------- bicleaner-hardrules

_URL = regex.compile(r"(?:https?://.)?(?:www\.)?[-a-zA-Z0-9@:%._+~#=]{2,256}\.[a-z]{2,6}\b"
                     r"[-a-zA-Z0-9@:%_+.~#?&/=]*")
#: what every _URL match holds; most texts lack it and skip _URL's backtracking
_URL_DOT = regex.compile(r"\.[a-z]")


class UrlsFilter(SideRule):
    """Number of URLs or bare domain names (bicleaner-hardrules ``no_urls``: any rejects)."""

    name = "urls.v1"
    rule = "urls"
    default_keep = {"max": 0}

    def value(self, text, lang):
        """URLs found."""
        return len(_URL.findall(text)) if _URL_DOT.search(text) else 0


_ALPHA = regex.compile(r"[[:alpha:]]")
_NOT_ALPHA_RUN = regex.compile(r"[^[:alpha:]]+")
_DIGIT = regex.compile(r"[[:digit:]]")


class OnlySymbolsFilter(SideRule):
    """Share of letters among the characters, 1 for an empty text (bicleaner-hardrules
    ``no_only_symbols`` rejects 0.1 and below; the inclusive bound here keeps exactly 0.1)."""

    name = "only_symbols.v1"
    rule = "only_symbols"
    worse = "min"
    default_keep = {"min": 0.1}

    def value(self, text, lang):
        """Letters / characters."""
        # the letters left once the rest is removed: no list of one-letter strings to build
        return len(_NOT_ALPHA_RUN.sub("", text)) / len(text) if text else 1.0


class OnlyNumbersFilter(SideRule):
    """Share of digits among the characters, 0 for an empty text (bicleaner-hardrules
    ``no_only_numbers`` rejects 0.5 and above, 0.7 for zh, ja, ko: the score is divided by that
    threshold, so the bound is below 1 for every language)."""

    name = "only_numbers.v1"
    rule = "only_numbers"
    default_keep = {"max": 0.999999}

    def value(self, text, lang):
        """Digits / characters / the language's threshold."""
        if not text:
            return 0.0
        return len(_DIGIT.findall(text)) / len(text) / (0.7 if lang in CJK else 0.5)


#: bicleaner-hardrules' pattern for repeated words, as written there
BICLEANER_REPEATED_WORDS = r"(?i)(\b\S+(.+))\s+\b\1\b"
# The same matches, found about 5x faster: a group G that starts with \S+ and ends with .+ is
# any string of two or more characters that starts with a non-space and holds no newline, so
# \S(.+) allows the same groups; and of those at a start, \S+ greedy then .+ greedy try the
# longest first, as \S then .+ greedy do, so every match, and its group 1, is the same. \S+
# made the engine try the whole rest of the line again for every shorter first word.
_REPEATED_WORDS = regex.compile(r"(?i)(\b\S(.+))\s+\b\1\b")
_REPEATED_CHARS = regex.compile(r"(.+)\1")
#: languages where bicleaner-hardrules looks for repeated words (elsewhere: repeated strings)
WORD_LANGS = {"en", "es", "fr", "pl", "de", "it", "pt", "nl", "cs", "ro", "fi", "lv", "et", "bg",
              "hr", "da", "hu", "ga", "eu", "gl", "sl", "sv", "mt", "sk", "is", "lt", "nb", "nn",
              "no", "ur", "sw", "my", "so", "bn", "fa", "gu"}


class RepeatedWordsFilter(SideRule):
    """Number of repeated word sequences longer than 7 characters (4 in zh, ja, ko) holding a
    letter (bicleaner-hardrules ``no_repeated_words``: one rejects). Languages outside
    bicleaner's word list look for any repeated string (an unset language: words)."""

    name = "repeated_words.v1"
    rule = "repeated_words"
    default_keep = {"max": 0}

    def value(self, text, lang):
        """Repetitions found."""
        pattern = _REPEATED_WORDS if lang is None or lang in WORD_LANGS else _REPEATED_CHARS
        least = 4 if lang in CJK else 7
        return sum(1 for m in pattern.finditer(text)
                   if len(m.group().strip()) > least and _ALPHA.search(m.group()))


def _glued_pattern(words: int):
    """bicleaner-hardrules' glued-words pattern for ``words`` capitalised words in a row."""
    return regex.compile(r"([[:alpha:]]*[[:upper:]]{1}[[:lower:]]+){%d}" % words)


_GLUED = _glued_pattern(2)
#: what every glued match holds (upper, lower, letters, upper, lower; a lower or a letter is
#: never a space), for any number of words from two; most texts lack it and skip the pattern's
#: backtracking from every letter
_GLUED_HINT = regex.compile(r"[[:upper:]][[:lower:]]\S*[[:upper:]][[:lower:]]")


class GluedConfig(SideConfig):
    """Options of glued_words.v1."""

    words: int = Field(2, ge=2, description="Capitalised words written together that make a "
                       "glued run: 2 as bicleaner-hardrules 2.10.8 (rejects YouTube, McCord, "
                       "KitchenAid); 3 keeps such names and still rejects HomeAboutContact.")


class GluedWordsFilter(SideRule):
    """Number of runs of two or more capitalised words written together ("HomeAboutContact",
    but also "YouTube", "PayPal"; bicleaner-hardrules 2.10.8 ``no_glued_words``: one rejects);
    ``words: 3`` asks for three, which keeps names such as "McCord" or "KitchenAid"."""

    name = "glued_words.v1"
    rule = "glued_words"
    default_keep = {"max": 0}
    Config = GluedConfig

    def __init__(self, config=None):
        """Compile the pattern for the configured number of words."""
        super().__init__(config)
        self.pattern = _GLUED if self.config.words == 2 else _glued_pattern(self.config.words)

    def value(self, text, lang):
        """Glued runs found."""
        return len(self.pattern.findall(text)) if _GLUED_HINT.search(text) else 0


_NOISE = regex.compile(r"[\x80-\xFF]{3,}")
_NOISE_RELAXED = regex.compile(r"[\x80-\xFF]{7,}")
RELAXED_NOISE_LANGS = {"is", "fi", "az"}


class UnicodeNoiseFilter(SideRule):
    """Number of runs of three or more characters from U+0080-U+00FF (seven in Icelandic,
    Finnish, Azerbaijani, whose words can hold such runs; bicleaner-hardrules
    ``no_unicode_noise``: one rejects)."""

    name = "unicode_noise.v1"
    rule = "unicode_noise"
    default_keep = {"max": 0}

    def value(self, text, lang):
        """Runs found."""
        if text.isascii():
            return 0
        return len((_NOISE_RELAXED if lang in RELAXED_NOISE_LANGS else _NOISE).findall(text))


_SPACE_NOISE = regex.compile(r"([ ]\D){4,}[ ]")


class SpaceNoiseFilter(SideRule):
    """Number of runs of four or more single non-digits between spaces ("w o r d s";
    bicleaner-hardrules ``no_space_noise``: one rejects)."""

    name = "space_noise.v1"
    rule = "space_noise"
    default_keep = {"max": 0}

    def value(self, text, lang):
        """Runs found."""
        return len(_SPACE_NOISE.findall(text))


class BadEncodingFilter(SideRule):
    """Number of "Ã" (outside Portuguese) and "Â" (outside Welsh, French, Persian, Italian,
    Ligurian, Portuguese, Romanian, Turkish, Vietnamese), the marks of UTF-8 read as Latin-1
    (bicleaner-hardrules ``no_bad_encoding``: one rejects; ``fix_mojibake.v1`` repairs such text
    instead)."""

    name = "bad_encoding.v1"
    rule = "bad_encoding"
    default_keep = {"max": 0}
    ATILDE_LANGS: ClassVar[set] = {"pt"}
    ACIRC_LANGS: ClassVar[set] = {"cy", "fr", "fa", "it", "lij", "pt", "ro", "tr", "vi"}

    def value(self, text, lang):
        """Suspicious characters found."""
        n = 0 if lang in self.ATILDE_LANGS else text.count("Ã")
        return n + (0 if lang in self.ACIRC_LANGS else text.count("Â"))


DEFAULT_LITERALS = ["Re:", "{{", "%s", "}}", "+++", "***", '="']


class LiteralsConfig(SideConfig):
    """Options of literals.v1."""

    literals: list[str] = Field(default_factory=lambda: list(DEFAULT_LITERALS),
                                description="Strings that reject a row wherever they occur.")


class LiteralsFilter(SideRule):
    """Number of the listed literal strings that occur (bicleaner-hardrules ``no_literals``, same
    default list: one rejects)."""

    name = "literals.v1"
    rule = "literals"
    default_keep = {"max": 0}
    Config = LiteralsConfig

    def value(self, text, lang):
        """Literals that occur."""
        return sum(1 for lit in self.config.literals if lit in text)


_ESCAPED = regex.compile(r"[\\][xu][0-9a-fA-F]{2,}")


class EscapedUnicodeFilter(SideRule):
    """Number of escaped code points left in the text ("\\u00e9", "\\xc3";
    bicleaner-hardrules ``no_escaped_unicode``: one rejects)."""

    name = "escaped_unicode.v1"
    rule = "escaped_unicode"
    default_keep = {"max": 0}

    def value(self, text, lang):
        """Escapes found."""
        return len(_ESCAPED.findall(text)) if "\\" in text else 0


_CRUMB_WEAK = regex.compile(r"([ ][-/][ ]|[<>*]|[ ][:][ ])")
_CRUMB_STRONG = regex.compile(r"([ ][»][ ]|[|→←•·¬])")


class BreadcrumbsFilter(SideRule):
    """1 for navigation breadcrumbs: at least three " - ", " / ", " : ", "<", ">", "*" and at
    least two " » ", "|", "→", "←", "•", "·", "¬" (bicleaner-hardrules ``no_breadcrumbs``), else
    0."""

    name = "breadcrumbs.v1"
    rule = "breadcrumbs"
    default_keep = {"max": 0}

    def value(self, text, lang):
        """1 when both kinds of separator are frequent enough."""
        return float(len(_CRUMB_WEAK.findall(text)) >= 3 and len(_CRUMB_STRONG.findall(text)) >= 2)


class TooLongFilter(SideRule):
    """Characters of the longer side (bicleaner-hardrules ``not_too_long``: 1024 or more
    rejects)."""

    name = "too_long.v1"
    rule = "too_long"
    default_keep = {"max": 1023}

    def value(self, text, lang):
        """Characters."""
        return len(text)


_BLANK = regex.compile("[ \u00A0]")


class TooShortFilter(SideRule):
    """Words of the shorter side, counted as bicleaner-hardrules ``not_too_short`` does (spaces
    and no-break spaces plus one; characters in zh, ja, ko): fewer than 3 rejects."""

    name = "too_short.v1"
    rule = "too_short"
    worse = "min"
    default_keep = {"min": 3}

    def value(self, text, lang):
        """Blanks + 1, or characters in CJK."""
        return len(text) if lang in CJK else len(_BLANK.findall(text)) + 1


class PairRule(RuleFilter):
    """A rule that looks at both sides of a row together."""

    def pair(self, src: str, tgt: str) -> float:
        """The rule's score of one pair."""
        raise NotImplementedError

    def score(self, batch):
        """The score of every pair."""
        pair = self.pair
        return np.fromiter((pair(s, t) for s, t in zip(batch["src"], batch["tgt"])), dtype=float,
                           count=len(batch["src"]))


class TitlesFilter(PairRule):
    """1 when both sides are title-cased and longer than one word ("Terms And Conditions";
    bicleaner-hardrules ``no_titles``), else 0."""

    name = "titles.v1"
    rule = "titles"
    default_keep = {"max": 0}

    @staticmethod
    def _title(text: str) -> bool:
        return len(text.strip().split(" ")) > 1 and text.istitle()

    def pair(self, src, tgt):
        """1 for a pair of titles."""
        return float(bool(src) and bool(tgt) and self._title(src) and self._title(tgt))


_PAREN = regex.compile(r"[][(){}⟨⟩]")


def _unbalanced(counts: dict, opening: str, closing: str) -> bool:
    a, b = counts.get(opening, 0), counts.get(closing, 0)
    return a + b > 6 or a != b


class ParenthesesFilter(PairRule):
    """1 when brackets are wrong (bicleaner-hardrules ``no_paren``): a side with more than six or
    unbalanced [ ], { } or ⟨ ⟩; or unbalanced ( ) on a side whose number of ")" differs from the
    other side's (so "a) ... b) ..." lists pass); else 0."""

    name = "parentheses.v1"
    rule = "parentheses"
    default_keep = {"max": 0}

    def pair(self, src, tgt):
        """1 for wrong brackets."""
        if not (_PAREN.search(src) or _PAREN.search(tgt)):
            return 0.0
        cs = {ch: src.count(ch) for ch in "[]{}⟨⟩()"}
        ct = {ch: tgt.count(ch) for ch in "[]{}⟨⟩()"}
        for c in (cs, ct):
            if any(_unbalanced(c, o, e) for o, e in ("[]", "{}", "⟨⟩")):
                return 1.0
        if cs["("] == cs[")"] and ct["("] == ct[")"]:
            return 0.0
        return float(cs[")"] != ct[")"])


def _letters(text: str) -> str:
    return "".join(ch for ch in text if ch.isalpha())


class IdenticalFilter(PairRule):
    """1 when both sides hold the same letters, ignoring case, digits, punctuation and spaces
    (bicleaner-hardrules ``no_identical``: an untranslated pair), else 0."""

    name = "identical.v1"
    rule = "identical"
    default_keep = {"max": 0}

    def pair(self, src, tgt):
        """1 for identical letters."""
        return float(_letters(src).casefold() == _letters(tgt).casefold())


# --------------------------------------------------------------------------- OpusFilter


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


# ----------------------------------------------------------------------------- composite

RULES: dict[str, type[RuleFilter]] = {cls.rule: cls for cls in (
    TooLongFilter, TooShortFilter, IdenticalFilter, LiteralsFilter, OnlySymbolsFilter,
    OnlyNumbersFilter, UrlsFilter, BreadcrumbsFilter, GluedWordsFilter, RepeatedWordsFilter,
    UnicodeNoiseFilter, SpaceNoiseFilter, ParenthesesFilter, EscapedUnicodeFilter,
    BadEncodingFilter, TitlesFilter, AlphabetRatioFilter, CharacterScriptFilter,
    TerminalPunctuationFilter, NonZeroNumeralsFilter, LongestWordFilter,
    AverageWordLengthFilter, HtmlTagsFilter, RepetitionFilter, RegexpFilter)}

#: bicleaner-hardrules' default pipeline, in its order, less what is not a text rule here
#: (no_empty: an empty side is too short; length_ratio: length_ratio.v1; language, porn and LM
#: rules need models; no_urls is off by default there too)
BICLEANER_DEFAULT = ["too_long", "too_short", "identical", "literals", "only_symbols",
                     "only_numbers", "breadcrumbs", "glued_words", "repeated_words",
                     "unicode_noise", "space_noise", "parentheses", "escaped_unicode",
                     "bad_encoding", "titles"]


class HardrulesConfig(Filter.Config):
    """Options of hardrules.v1."""

    rules: list[str] = Field(default_factory=lambda: list(BICLEANER_DEFAULT),
                             description="Rules to run, in order; the first that fires names "
                             "the rejection. Default: bicleaner-hardrules' default rules.")
    src_lang: str | None = Field(None, description="Language of src (ISO 639-1) for the rules "
                                 "with exceptions per language.")
    tgt_lang: str | None = Field(None, description="Language of tgt (ISO 639-1).")

    @field_validator("rules")
    @classmethod
    def _known(cls, v):
        unknown = [r for r in v if r not in RULES]
        if unknown:
            raise ValueError(f"unknown rule(s) {', '.join(map(repr, unknown))}; the rules are "
                             f"{', '.join(RULES)}")
        if not v:
            raise ValueError("give at least one rule")
        if len(set(v)) != len(v):
            raise ValueError("a rule is listed twice")
        return v


class HardrulesFilter(Filter):
    """The position (1, 2, ...) in ``rules`` of the first rule that rejects the row, 0 when
    none does; rejected rows name the rule in ``rejected.tsv`` (``steps[0]:hardrules.v1
    (glued_words)``) and the summary counts them per rule. Each rule runs with its defaults
    (languages from this step); rules that need options of their own (character_script,
    regexp) are separate steps."""

    name = "hardrules.v1"
    default_keep = {"max": 0}
    explains = True
    Config = HardrulesConfig

    def __init__(self, config=None):
        """Build every listed rule with its default options and this step's languages."""
        super().__init__(config)
        c = self.config
        self.rules = []
        for rule in c.rules:
            cls = RULES[rule]
            if cls.Config is SideConfig or issubclass(cls.Config, SideConfig):
                cfg = cls.Config(src_lang=c.src_lang, tgt_lang=c.tgt_lang)
            else:
                try:
                    cfg = cls.Config()
                except ValueError as exc:
                    raise ComponentError(f"hardrules.v1: rule {rule} needs options of its own; "
                                         f"use {cls.name} as a step") from exc
            try:
                self.rules.append(cls(cfg))
            except ComponentError:
                raise ComponentError(f"hardrules.v1: rule {rule} needs options of its own; use "
                                     f"{cls.name} as a step") from None

    def score(self, batch):
        """The first firing rule's position, or 0."""
        n = len(batch["src"])
        out = np.zeros(n)
        todo = np.arange(n)
        for k, rule in enumerate(self.rules, 1):
            if not len(todo):
                break
            sub = batch if len(todo) == n else take_rows(batch, todo.tolist())
            fired = rule.fires(sub)
            out[todo[fired]] = k
            todo = todo[~fired]
        return out

    def reason(self, score):
        """The name of the rule at position ``score``."""
        k = int(score)
        return self.config.rules[k - 1] if 1 <= k <= len(self.config.rules) else f"score {score}"


@bitextforge.hookimpl
def register_filters(register):
    """Register the rule filters and their composite."""
    for cls in RULES.values():
        register(cls)
    register(HardrulesFilter)
