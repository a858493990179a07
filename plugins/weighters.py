"""Corpus expansion schemes of Nichols, Bond, Appling & Matsumoto, *Paraphrasing Training Data
for Statistical Machine Translation*, section 4.2 and Table 3, and 1/(m+1) sentence weights (the
paper's future work; Marian reads them with ``--data-weighting``).

For n paraphrases wanted and m available (e0 the original, e1..em its lowercase-distinct
paraphrases in rank order): if n <= m keep e0 and the top n; otherwise distributed (d) rotates
e0, e1..em until there are n+1 rows, first (f) uses e1..em and then repeats e0, varying (v) adds
only e0..em. For n = 4, m = 2 that gives d: e0 e1 e2 e0 e1, f: e0 e1 e2 e0 e0, v: e0 e1 e2.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

import bitextforge
from bitextforge import Weighter


def distinct_ranked(group: list[dict]) -> list[int]:
    """Indices of e0, e1..em: the original first, then paraphrases that are distinct after
    lowercasing (from the original and from each other), in rank order.

    If the original row was filtered out, the best-ranked remaining row stands in for e0.
    """
    order = sorted(range(len(group)), key=lambda i: group[i]["variant"])
    seen = set()
    out = []
    for i in order:
        key = (group[i]["src"].lower(), group[i]["tgt"].lower())
        if key in seen:
            continue
        seen.add(key)
        out.append(i)
    return out


class _Expansion(Weighter):
    class Config(Weighter.Config):
        """Options of the expansion schemes."""

        n: int = Field(4, ge=0, description="Paraphrases wanted per original (the paper's n).")

    def rows(self, m: int) -> list[int]:
        """Positions into [e0, e1..em] for the case n > m."""
        raise NotImplementedError

    def weight(self, group):
        """Rows of the group per the scheme, each with weight 1."""
        ranked = distinct_ranked(group)
        n, m = self.config.n, len(ranked) - 1
        if n <= m:
            picks = list(range(n + 1))
        else:
            picks = self.rows(m)
        return [(ranked[p], 1.0) for p in picks]


class DistributedWeighter(_Expansion):
    """Nichols et al.'s (d)istributed scheme: rotate e0, e1..em until there are n+1 rows."""

    name = "distributed.v1"

    def rows(self, m):
        """e0 e1 .. em e0 e1 .. (n+1 rows)."""
        return [k % (m + 1) for k in range(self.config.n + 1)]


class FirstWeighter(_Expansion):
    """Nichols et al.'s (f)irst scheme: e0, e1..em, then e0 repeated until n+1 rows."""

    name = "first.v1"

    def rows(self, m):
        """e0 e1 .. em e0 e0 .. (n+1 rows)."""
        return list(range(m + 1)) + [0] * (self.config.n - m)


class VaryingWeighter(_Expansion):
    """Nichols et al.'s (v)arying scheme: e0..em without padding."""

    name = "varying.v1"

    def rows(self, m):
        """e0 e1 .. em."""
        return list(range(m + 1))


class SentenceWeighter(Weighter):
    """Each of e0..em once, with weights summing to 1 per original: 1/(m+1) each, or in
    proportion to a score column (linear for non-negative scores, softmax for log-probabilities).
    """

    name = "sentence_weights.v1"

    class Config(Weighter.Config):
        """Options of sentence_weights.v1."""

        n: int | None = Field(None, ge=0, description="Use at most the top n paraphrases "
                              "(all when empty).")
        score_column: str | None = Field(None, description="Weight in proportion to this column "
                                         "(e.g. a paraphrase score); uniform when empty.")
        transform: Literal["linear", "softmax"] = Field(
            "softmax", description="linear: w ~ score (scores must be >= 0); softmax: w ~ "
                                   "exp(score), for log-probabilities.")
        original_score: float | None = Field(None, description="Score given to the original, "
                                             "which has none; default: the group's best score.")

    def weight(self, group):
        """(index, weight) for e0..em."""
        ranked = distinct_ranked(group)
        n = self.config.n
        if n is not None:
            ranked = ranked[: n + 1]
        col = self.config.score_column
        if not col:
            w = 1.0 / len(ranked)
            return [(i, w) for i in ranked]
        if col not in group[0]:
            raise bitextforge.ComponentError(f"sentence_weights.v1: no column {col!r}; columns are "
                                             f"{', '.join(group[0])}")
        raw = [group[i].get(col) for i in ranked]
        known = [s for s in raw if s is not None and not math.isnan(s)]
        fill = self.config.original_score
        if fill is None:
            fill = max(known) if known else 1.0
        scores = [fill if s is None or math.isnan(s) else float(s) for s in raw]
        if self.config.transform == "softmax":
            top = max(scores)
            ex = [math.exp(s - top) for s in scores]
        else:
            if any(s < 0 for s in scores):
                raise bitextforge.ComponentError(
                    f"sentence_weights.v1: negative {col} score with transform linear; use softmax")
            ex = scores
        total = sum(ex)
        if total <= 0:
            return [(i, 1.0 / len(ranked)) for i in ranked]
        return [(i, e / total) for i, e in zip(ranked, ex)]


@bitextforge.hookimpl
def register_weighters(register):
    """Register the Nichols et al. expansion schemes and sentence weights."""
    register(DistributedWeighter)
    register(FirstWeighter)
    register(VaryingWeighter)
    register(SentenceWeighter)
