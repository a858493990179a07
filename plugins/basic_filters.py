"""Cheap, model-free filters: sentence length, length ratio and normalised duplicates.

These are the length and ratio bounds that Wieting et al. 2017 (section 5.5) and OpusFilter's
LengthFilter / LengthRatioFilter apply, and the duplicate removal every corpus-cleaning pipeline
runs first. Lengths count whitespace tokens (``unit: tokens``) or characters (``unit: chars``).
"""

from __future__ import annotations

import re
from unicodedata import is_normalized, normalize
from typing import Literal

import numpy as np
from pydantic import Field
from xxhash import xxh3_64_intdigest

import bitextforge
from bitextforge import ComponentError, Filter
from bitextforge.api import Int64Table
from bitextforge.api import text_facts, token_counts

from .combine import ColumnFilter, CombineFilter, CombineModelTrainer
from .spilled_keys import MIN_MEMORY_MB, SpilledKeySet


def _lengths(texts, unit: str) -> np.ndarray:
    """Length of every text: whitespace tokens (counted once per batch column and shared with
    the other length steps, see :mod:`bitextforge.text_facts`) or characters."""
    if unit == "chars":
        return np.fromiter(map(len, texts), np.int64, len(texts))
    return token_counts(texts)


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
        return np.minimum(a, b) if c.combine == "shorter" else np.maximum(a, b)


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
        a, b = _lengths(batch["src"], self.config.unit), _lengths(batch["tgt"], self.config.unit)
        hi, lo = np.maximum(a, b).astype(float), np.minimum(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = hi / lo
        ratio[hi == 0] = 1.0  # both sides empty; one side empty divides by zero: inf
        return ratio


_NONWORD = re.compile(r"[\W_]+", re.UNICODE)


_PAIR = np.uint64(0x9E3779B97F4A7C15)


def _hashes(texts: list[str]) -> np.ndarray:
    """xxh3_64 of every text's UTF-8 bytes, as uint64 (one encode of the joined texts when no
    text holds a line break, as normalised texts never do)."""
    joined = "\n".join(texts).encode("utf-8")
    parts = joined.split(b"\n") if texts else []
    if len(parts) != len(texts):
        parts = [t.encode("utf-8") for t in texts]
    return np.fromiter(map(xxh3_64_intdigest, parts), dtype=np.uint64, count=len(texts))


def _nfkc(texts: list[str]) -> list[str]:
    """``texts`` in NFKC, normalising only the texts that change: one check of the whole batch
    (a newline never composes with its neighbours, so the joined text is normalised iff every
    text is), then one check per text that is not ASCII."""
    if is_normalized("NFKC", "\n".join(texts)):
        return texts
    return [t if t.isascii() or is_normalized("NFKC", t) else normalize("NFKC", t)
            for t in texts]


class DedupeFilter(Filter):
    """1.0 for the first occurrence of a (normalised) sentence or pair, 0.0 for later duplicates.

    Normalisation: Unicode NFKC, whitespace collapsed, optionally lowercased and reduced to
    letters and digits. Duplicates are found across the whole run (state is kept between
    batches): a 64-bit xxh3 hash of each distinct key, in an in-memory table of 32 to 64 bytes
    a key by default; with ``max_memory_mb`` the table has a fixed size and older keys spill
    to sorted files on disk (8 bytes a key), with the same decisions (docs/scale.md).
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
        max_memory_mb: int | None = Field(
            None, ge=MIN_MEMORY_MB, description="Hold the newest seen keys in a fixed table of "
            "half this many MB and spill the rest to sorted files on disk (8 bytes a key): the "
            "same decisions in far less memory (with 64: a peak of 123 MB at 10M lines and 228 "
            "MB at 100M, against 634 MB at 10M without; docs/scale.md). Default: all keys in "
            "memory (32 to 64 bytes a key).")
        spill_dir: str | None = Field(
            None, description="Folder for the spilled keys with max_memory_mb (default: the "
            "system's temporary folder); a resumable run keeps them there until it finishes.")

    #: what the seen keys are, saved with them: a resumed run must hash as the killed one did
    KEY_HASH = "xxh3_64, pair = src * 0x9E3779B97F4A7C15 + tgt"

    def __init__(self, config=None):
        """Start with an empty set of seen keys."""
        super().__init__(config)
        # 64-bit xxh3 of the normalised text: stable across processes (str hash() is salted per
        # process, and a resumed run must recognise the keys the killed one saved)
        self.seen = self._new_set()

    def _new_set(self):
        c = self.config
        if c.max_memory_mb:
            return SpilledKeySet(c.max_memory_mb, c.spill_dir)
        return Int64Table()

    def _norm(self, texts):
        c = self.config
        if c.letters_only:
            out = [_NONWORD.sub("", t) for t in texts]
        else:
            # only the rows whose whitespace is not single interior spaces are rebuilt; which
            # rows those are is worked out for the whole column at once (and shared with the
            # length steps)
            out = list(texts)
            for i in np.flatnonzero(~text_facts(texts).normal).tolist():
                out[i] = " ".join(out[i].split())
        if c.lowercase:
            out = [t.lower() for t in out]
        return _nfkc(out)

    def score(self, batch):
        """First occurrence 1.0, duplicate 0.0."""
        on = self.config.on
        if on == "pair":
            # the pair's key combines its sides' hashes (odd multiplier: distinct pairs collide
            # with the odds of one 64-bit hash)
            hashes = _hashes(self._norm(batch["src"])) * _PAIR + _hashes(self._norm(batch["tgt"]))
        else:
            hashes = _hashes(self._norm(batch[on]))
        hashes = hashes.view(np.int64)
        n = len(hashes)
        hashes[hashes == 0] = 1  # 0 marks a free slot of the table
        _, seen = self.seen.lookup(hashes)
        new = np.flatnonzero(~seen)
        # a key not seen before scores 1 where it first occurs in the batch
        distinct, first = np.unique(hashes[new], return_index=True)
        out = np.zeros(n, dtype=float)
        out[new[first]] = 1.0
        self.seen.insert(distinct)
        return out

    def get_state(self):
        """The keys seen so far (a resumed run must still recognise earlier pairs); with
        ``max_memory_mb``, the in-memory keys and the names of the spilled files."""
        if isinstance(self.seen, SpilledKeySet):
            return {"hash": self.KEY_HASH, "spilled": self.seen.get_state()}
        return {"hash": self.KEY_HASH, "keys": self.seen.stored()}

    def set_state(self, state):
        """Restore the keys seen before the resumed shard."""
        if not isinstance(state, dict) or state.get("hash") != self.KEY_HASH:
            raise ComponentError("dedupe.v1: the unfinished run in the output directory saved "
                                 "its duplicate keys with another hash function (an older "
                                 "bitextforge); rerun with --restart to start it again")
        self.seen = self._new_set()
        if "spilled" in state:
            try:
                self.seen.set_state(state["spilled"])
            except FileNotFoundError as exc:
                raise ComponentError(
                    f"dedupe.v1: the unfinished run's spilled keys are gone ({exc.args[0]} is "
                    f"missing or cut short); rerun with --restart to start it again") from None
        else:
            self.seen.insert(np.asarray(state["keys"], dtype=np.int64))

    def close(self):
        """Remove the spilled keys (kept for a resume when the run is failing)."""
        if isinstance(self.seen, SpilledKeySet):
            self.seen.close()

    def manifest_info(self):
        """Number of distinct keys seen (and, when keys spilled, the files they spilled to)."""
        info = {"distinct": self.seen.count}
        if isinstance(self.seen, SpilledKeySet) and self.seen.spilled:
            info["spilled_runs"] = len(self.seen.spilled)
        return info


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
