"""Whitespace facts about a text column, computed once per batch and shared by every step.

A recipe often bounds both sides from below and above and by their ratio in three steps and then
removes duplicates after normalising whitespace: each of those reads the same two columns. This
module works out, for a list of texts, each text's whitespace token count (``len(t.split())``)
and whether the text is already in whitespace-normal form (``t == " ".join(t.split())``), with a
few NumPy passes over the UTF-8 bytes of the joined column instead of a Python call per row, and
remembers the answer for that list object. :func:`bitextforge.io.corpus.take_rows` hands the facts
of the rows it selects on to the new lists, so a later step sees them without recomputing.

Column lists are never changed in place once a batch exists (every step builds new lists), which
is what makes remembering by list identity sound; a cached entry holds its list, so the identity
cannot be reused while the entry lives.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

#: the characters beyond ASCII that ``str.split()`` splits on (U+0085, U+00A0, U+1680,
#: U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), found by their UTF-8 lead bytes
WIDE_SPACES = "\x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + \
    "\u2028\u2029\u202f\u205f\u3000"


#: the ASCII control bytes ``str.split()`` splits on, but for the line feed between rows
_CTRL = np.zeros(32, dtype=bool)
_CTRL[[9, 11, 12, 13, 28, 29, 30, 31]] = True


@dataclass(frozen=True)
class TextFacts:
    """Per-row facts of one text column: whitespace token counts and whitespace-normal flags."""

    tokens: np.ndarray  # int64, len(t.split()) per row
    normal: np.ndarray  # bool, t == " ".join(t.split()) per row

    def take(self, idx) -> "TextFacts":
        """The facts of the rows at ``idx`` (in that order, repeats allowed)."""
        i = np.asarray(idx, dtype=np.intp)
        return TextFacts(self.tokens[i], self.normal[i])


#: id(list) -> (the list, its facts); the newest few columns only
_CACHE: dict[int, tuple[list, TextFacts]] = {}
_CACHE_MAX = 8


_LOCK = threading.Lock()  # a server or a component may call steps from several threads


def _remember(texts: list, facts: TextFacts) -> None:
    with _LOCK:
        while len(_CACHE) >= _CACHE_MAX:
            del _CACHE[next(iter(_CACHE))]
        _CACHE[id(texts)] = (texts, facts)


def _cached(texts) -> TextFacts | None:
    hit = _CACHE.get(id(texts))
    if hit is not None and hit[0] is texts and len(hit[1].tokens) == len(texts):
        return hit[1]
    return None


def text_facts(texts) -> TextFacts:
    """Token counts and whitespace-normal flags of ``texts`` (a list of str), remembered for
    that list."""
    got = _cached(texts)
    if got is not None:
        return got
    facts = _analyse(texts)
    if isinstance(texts, list):
        _remember(texts, facts)
    return facts


def token_counts(texts) -> np.ndarray:
    """``len(t.split())`` for every text, as an int64 array."""
    return text_facts(texts).tokens


def carry(old: list, new: list, idx) -> None:
    """Hand the remembered facts of ``old`` on to ``new``, which holds ``old``'s rows at ``idx``."""
    facts = _cached(old)
    if facts is not None:
        _remember(new, facts.take(idx))


def _per_row(texts) -> TextFacts:
    split = [t.split() for t in texts]
    return TextFacts(np.fromiter(map(len, split), np.int64, len(texts)),
                     np.fromiter((" ".join(s) == t for s, t in zip(split, texts)), bool,
                                 len(texts)))


def _analyse(texts) -> TextFacts:
    n = len(texts)
    if n == 0:
        return TextFacts(np.zeros(0, np.int64), np.zeros(0, bool))
    joined = "\n".join(texts)
    if not joined:  # one empty text
        return TextFacts(np.zeros(1, np.int64), np.ones(1, bool))
    b = np.frombuffer(joined.encode("utf-8"), dtype=np.uint8)
    low = np.flatnonzero(b < 32)
    code = b[low]  # the control bytes' values
    nl = low[code == 10]  # the n - 1 row separators
    if len(nl) != n - 1:  # a text holds a line break: rows cannot be told apart
        return _per_row(texts)
    ws = b == 32
    ws[nl] = True
    # ASCII separators str.split() also splits on: tab, VT, FF, CR and the four information
    # separators; their rows are never whitespace-normal
    ctrl = low[_CTRL[code]]
    normal = np.ones(n, dtype=bool)
    if len(ctrl):
        ws[ctrl] = True
        normal[np.searchsorted(nl, ctrl)] = False
    start = ~ws
    start[1:] &= ws[:-1]
    firsts = np.flatnonzero(start)
    ends = np.searchsorted(firsts, nl)
    tokens = np.diff(np.concatenate(([0], ends, [len(firsts)])))
    # two separators side by side (but for the line break between two empty rows), or a space at
    # either end of the text, break the normal form
    pair = np.flatnonzero(ws[1:] & ws[:-1])
    if len(pair):
        first = b[pair] == 10
        pair = pair[~(first & (b[pair + 1] == 10))]
        normal[np.searchsorted(nl, np.where(b[pair] == 10, pair + 1, pair))] = False
    if b[0] == 32:
        normal[0] = False
    if b[-1] == 32:
        normal[-1] = False
    wide = _wide_spaces(b)
    if len(wide):  # rare: these rows are counted one by one
        for r in sorted(set(np.searchsorted(nl, wide).tolist())):
            tokens[r] = len(texts[r].split())
            normal[r] = False
    return TextFacts(tokens.astype(np.int64, copy=False), normal)


def _wide_spaces(b: np.ndarray) -> np.ndarray:
    """Byte offsets in UTF-8 ``b`` where one of :data:`WIDE_SPACES` starts."""
    cand = np.flatnonzero((b == 0xC2) | ((b >= 0xE1) & (b <= 0xE3)))
    if not len(cand):
        return cand
    pad = np.concatenate((b, np.zeros(2, np.uint8)))
    b0, b1, b2 = pad[cand], pad[cand + 1], pad[cand + 2]
    hit = ((b0 == 0xC2) & ((b1 == 0x85) | (b1 == 0xA0))) \
        | ((b0 == 0xE1) & (b1 == 0x9A) & (b2 == 0x80)) \
        | ((b0 == 0xE2) & (b1 == 0x80) & (((b2 >= 0x80) & (b2 <= 0x8A)) | (b2 == 0xA8)
                                          | (b2 == 0xA9) | (b2 == 0xAF))) \
        | ((b0 == 0xE2) & (b1 == 0x81) & (b2 == 0x9F)) \
        | ((b0 == 0xE3) & (b1 == 0x80) & (b2 == 0x80))
    return cand[hit]
