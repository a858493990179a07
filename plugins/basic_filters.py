"""Cheap, model-free filters: sentence length, length ratio and normalised duplicates.

These are the length and ratio bounds that Wieting et al. 2017 (section 5.5) and OpusFilter's
LengthFilter / LengthRatioFilter apply, and the duplicate removal every corpus-cleaning pipeline
runs first. Lengths count whitespace tokens (``unit: tokens``) or characters (``unit: chars``).
"""

from __future__ import annotations

from hashlib import blake2b
import re
from unicodedata import is_normalized, normalize
from typing import Literal

from pydantic import Field

import bitextforge
from bitextforge import Filter

from .combine import ColumnFilter, CombineFilter, CombineModelTrainer


#: token counts by text, shared by every length.v1 / length_ratio.v1 step of a run: a recipe
#: bounds both sides from below and above and by ratio in three steps, which would otherwise split
#: each sentence six times (the text is the key, so a step never sees another text's count)
_TOKENS: dict[str, int] = {}
_TOKENS_MAX = 1 << 14  # the current batch stays (both sides of 5,000 rows); few texts held


def _lengths(texts, unit: str) -> list[int]:
    if unit == "chars":
        return [len(t) for t in texts]
    memo = _TOKENS
    got = [memo.get(t, -1) for t in texts]
    if -1 not in got:
        return got
    out = [n if n >= 0 else len(t.split()) for n, t in zip(got, texts)]
    if len(memo) > _TOKENS_MAX:
        memo.clear()
    memo.update(zip(texts, out))
    return out


class LengthFilter(Filter):
    """Length of one side, or of the shorter / longer of the two sides.

    To bound both sides from below and above, use two steps: ``combine: shorter`` with
    ``keep.min`` and ``combine: longer`` with ``keep.max`` (one score cannot carry both).
    """

    name = "length.v1"

    class Config(Filter.Config):
        """Options of length.v1."""

        unit: Literal["tokens", "chars"] = Field("tokens", description="Count whitespace tokens "
                                                 "or characters.")
        side: Literal["src", "tgt", "both"] = Field("both", description="Which side to measure.")
        combine: Literal["shorter", "longer"] = Field(
            "longer", description="With side both: score the shorter side (for keep.min) or the "
                                  "longer side (for keep.max).")

    def score(self, batch):
        """Length of the configured side per row."""
        c = self.config
        if c.side != "both":
            return _lengths(batch[c.side], c.unit)
        a, b = _lengths(batch["src"], c.unit), _lengths(batch["tgt"], c.unit)
        if c.combine == "shorter":
            return [x if x < y else y for x, y in zip(a, b)]
        return [x if x > y else y for x, y in zip(a, b)]


class LengthRatioFilter(Filter):
    """Ratio of the longer side's length to the shorter's (>= 1; infinite when one side is empty).

    Bound it with ``keep.max`` (e.g. 2 or 3, as OpusFilter's LengthRatioFilter ``threshold``).
    """

    name = "length_ratio.v1"

    class Config(Filter.Config):
        """Options of length_ratio.v1."""

        unit: Literal["tokens", "chars"] = Field("tokens", description="Count whitespace tokens "
                                                 "or characters.")

    def score(self, batch):
        """max(len)/min(len) per row; inf when exactly one side is empty, 1 when both are."""
        inf = float("inf")
        a, b = _lengths(batch["src"], self.config.unit), _lengths(batch["tgt"], self.config.unit)
        return [(x / y if x >= y else y / x) if x and y else (1.0 if x == y else inf)
                for x, y in zip(a, b)]


_NONWORD = re.compile(r"[\W_]+", re.UNICODE)


def _single_spaced(texts) -> bool:
    """Whether every text's only whitespace is single interior ASCII spaces (a few scans of the
    joined batch in C instead of a Python test per line)."""
    if not texts:
        return True
    joined = "\n".join(texts)
    return ("  " not in joined and " \n" not in joined and "\n " not in joined
            and joined[:1] != " " and joined[-1:] != " " and "a".join(texts).isprintable())


class DedupeFilter(Filter):
    """1.0 for the first occurrence of a (normalised) sentence or pair, 0.0 for later duplicates.

    Normalisation: Unicode NFKC, whitespace collapsed, optionally lowercased and reduced to
    letters and digits. Duplicates are found across the whole run (state is kept between
    batches); memory grows with the number of distinct keys (one 64-bit hash each).
    """

    name = "dedupe.v1"
    default_keep = {"min": 1}
    stateful = True

    class Config(Filter.Config):
        """Options of dedupe.v1."""

        on: Literal["pair", "src", "tgt"] = Field("pair", description="What must repeat to count "
                                                  "as a duplicate.")
        lowercase: bool = Field(True, description="Compare case-insensitively.")
        letters_only: bool = Field(False, description="Ignore everything but letters and digits.")

    def __init__(self, config=None):
        """Start with an empty set of seen keys."""
        super().__init__(config)
        # 8-byte blake2b digests: stable across processes (str hash() is salted per process, and a
        # resumed run must recognise the keys the killed one saved)
        self.seen: set[bytes] = set()
        self.duplicates = 0

    def _norm(self, texts):
        c = self.config
        if c.letters_only:
            out = [_NONWORD.sub("", t) for t in texts]
        elif _single_spaced(texts):
            out = list(texts)
        else:
            # isprintable() is False for every separator but the ASCII space, so a printable
            # line without double, leading or trailing spaces is its own normal form
            out = [t if t.isprintable() and "  " not in t and t[:1] != " " and t[-1:] != " "
                   else " ".join(t.split()) for t in texts]
        if c.lowercase:
            out = [t.lower() for t in out]
        # NFKC only where it changes something: one check of the whole batch (a newline never
        # composes with its neighbours, so the joined text is normalised iff every line is)
        if is_normalized("NFKC", "\n".join(out)):
            return out
        return [t if t.isascii() or is_normalized("NFKC", t) else normalize("NFKC", t)
                for t in out]

    def score(self, batch):
        """First occurrence 1.0, duplicate 0.0."""
        on = self.config.on
        if on == "pair":
            keys = [blake2b(f"{a}\x1f{b}".encode(), digest_size=8).digest()
                    for a, b in zip(self._norm(batch["src"]), self._norm(batch["tgt"]))]
        else:
            keys = [blake2b(k.encode(), digest_size=8).digest() for k in self._norm(batch[on])]
        seen = self.seen
        out = []
        add = seen.add
        for k in keys:
            if k in seen:
                out.append(0.0)
            else:
                add(k)
                out.append(1.0)
        return out

    def get_state(self):
        """The keys seen so far (a resumed run must still recognise earlier pairs)."""
        return self.seen

    def set_state(self, state):
        """Restore the keys seen before the resumed shard."""
        self.seen = set(state)

    def manifest_info(self):
        """Number of distinct keys seen."""
        return {"distinct": len(self.seen)}


@bitextforge.hookimpl
def register_filters(register):
    """Register the model-free filters."""
    register(LengthFilter)
    register(LengthRatioFilter)
    register(DedupeFilter)
    register(ColumnFilter)
    register(CombineFilter)


@bitextforge.hookimpl
def register_trainers(register):
    """Register the trainer of combine.v1's logistic regression."""
    register(CombineModelTrainer)
