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

import numpy as np
from pydantic import Field, field_validator

import bitextforge
from bitextforge import ComponentError, Filter
from bitextforge.api import take_rows

# The rules live in three modules (their common base, bicleaner-hardrules', OpusFilter's); every
# name is still importable from here, where recipes' plugins, tests and benchmarks found them.
from .hardrules_base import CJK, PairRule, RuleFilter, SideConfig, SideRule  # noqa: F401
from .hardrules_bicleaner import (  # noqa: F401
    BICLEANER_REPEATED_WORDS, DEFAULT_LITERALS, RELAXED_NOISE_LANGS, WORD_LANGS, BadEncodingFilter,
    BreadcrumbsFilter, EscapedUnicodeFilter, GluedConfig, GluedWordsFilter, IdenticalFilter,
    LiteralsConfig, LiteralsFilter, OnlyNumbersFilter, OnlySymbolsFilter, ParenthesesFilter,
    RepeatedWordsFilter, SpaceNoiseFilter, TitlesFilter, TooLongFilter, TooShortFilter,
    UnicodeNoiseFilter, UrlsFilter,
    # the patterns tests/test_hardrules_prechecks.py compares with bicleaner's
    _ALPHA, _GLUED, _REPEATED_CHARS, _REPEATED_WORDS, _URL,
)
from .hardrules_opusfilter import (  # noqa: F401
    AlphabetRatioConfig, AlphabetRatioFilter, AverageWordLengthFilter, CharacterScriptFilter,
    HtmlTagsFilter, LongestWordFilter, NonZeroNumeralsFilter, RegexpConfig, RegexpFilter,
    RepetitionConfig, RepetitionFilter, ScriptConfig, TerminalPunctuationFilter, could_repeat,
)

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
