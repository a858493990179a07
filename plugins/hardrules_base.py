"""The common ground of the rule filters of ``hardrules.v1`` (:mod:`bitextforge.plugins.hardrules`):
a rule fires where its score falls outside its default ``keep``; a side rule scores each side on
its own, a pair rule both sides together."""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from bitextforge import Filter
from bitextforge.api import KeepSpec
from bitextforge.api import within_bounds

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
