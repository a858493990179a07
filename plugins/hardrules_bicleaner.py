"""The rules of bicleaner-hardrules 2.x (``hardrules.py``), each a filter named ``<rule>.v1``:
``urls``, ``only_symbols``, ``only_numbers``, ``repeated_words``, ``glued_words``,
``unicode_noise``, ``space_noise``, ``bad_encoding``, ``literals``, ``escaped_unicode``,
``breadcrumbs``, ``too_long``, ``too_short``, ``titles``, ``parentheses`` and ``identical``
(the module docstring of :mod:`bitextforge.plugins.hardrules` says how their bounds match the
original's)."""

from __future__ import annotations

from typing import ClassVar

import regex
from pydantic import Field

from .hardrules_base import CJK, PairRule, SideConfig, SideRule

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
