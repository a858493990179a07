"""The synthetic negatives of the pair classifier (``pair_classifier_model.v1``): one noisy pair
made from each clean pair, the kinds taken in turn. Each kind is one small function in
:data:`NEGATIVE_MAKERS`; :func:`make_negatives` draws all of them from one random generator, in row
order, so a seed gives the same negatives whatever kinds are mixed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

from bitextforge import ComponentError, InputError

NEGATIVES = ("misaligned", "shuffled", "truncated", "wrong_language", "untranslated", "numbers")
#: kinds that can be asked for but are not in the default list (a default list that grew would
#: change what an unchanged recipe trains)
MORE_NEGATIVES = ("appended", "partial", "neighbour", "machine_translated", "mistranslated",
                  "word_for_word")
#: a number as written in text (1,000 and 3.5 are one number each)
NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")

#: words a ``partial`` negative may cut before (a clause boundary where no comma marks one), in
#: the languages of the project's data; a cut before one drops the conjunction with its clause
# (one-letter conjunctions, Czech "a" or Spanish "y", are left out: English "a" is an article)
_CONJUNCTIONS = frozenset("""
and but or because while although when which who whose that so
et mais ou car donc parce lorsque quand qui que dont tandis puisque
und aber oder denn weil wenn als dass obwohl während sondern
ale nebo protože když který která které kteří že aby zatímco ani
pero porque cuando aunque mientras
""".split())
_CLAUSE_END = re.compile(r"[,;:]$")
_FINAL = re.compile(r"[.!?…]+[\"'»”’)\]]*$")


def _tidy(words: list[str], like: str) -> str:
    """``words`` joined as a sentence shaped like ``like``: its first letter's case and its final
    punctuation, so that a cut side still looks like a whole sentence (real free translations
    do) and only its content tells it apart."""
    words = list(words)
    words[-1] = _CLAUSE_END.sub("", words[-1]) or words[-1]
    out = " ".join(words)
    end = _FINAL.search(like.rstrip())
    if end and not _FINAL.search(out):
        out += end.group()
    first = like.lstrip()[:1]
    if out[:1].isalpha() and first.isalpha() and first.isupper() != out[:1].isupper():
        out = (out[0].upper() if first.isupper() else out[0].lower()) + out[1:]
    return out


def _bare(word: str) -> str:
    """``word`` in lower case without the punctuation around it."""
    return word.strip(".,;:!?\"'«»„“”()[]").lower()


def _partial(text: str, rng: random.Random) -> str:
    """``text`` without a contiguous span of 10-30 % of its words at its start or end: a whole
    clause (cut at a comma, semicolon, colon or conjunction) where one of that size exists, else
    that many words."""
    w = text.split()
    n = len(w)
    if n < 2:
        return text
    lo, hi = max(1, round(n * 0.1)), max(1, int(n * 0.3))
    conj = [_bare(x) in _CONJUNCTIONS for x in w]
    # b splits w[:b] | w[b:]: cutting the end drops n - b words, cutting the start drops b (and
    # the conjunction that opens w[b:], which belongs to the dropped clause)
    bounds = [b for b in range(1, n) if _CLAUSE_END.search(w[b - 1]) or conj[b]]
    cuts = [("end", b) for b in bounds if lo <= n - b <= hi]
    cuts += [("start", b + conj[b]) for b in bounds if lo <= b + conj[b] <= hi and b + conj[b] < n]
    if cuts:
        where, b = cuts[rng.randrange(len(cuts))]
    else:
        k = rng.randint(lo, hi)
        where = "end" if rng.random() < 0.5 else "start"
        b = n - k if where == "end" else k
    return _tidy(w[:b] if where == "end" else w[b:], text)


def _neighbour(text: str, other: str, after: bool, rng: random.Random) -> str:
    """``text`` with 25-50 % of its words (at least one, all of a one-word side) replaced by as
    many words of ``other``: its end by ``other``'s start when ``other`` comes ``after`` it, its
    start by ``other``'s end when ``other`` comes before."""
    w, v = text.split(), other.split()
    n = len(w)
    k = n if n < 2 else min(n - 1, max(1, round(n * rng.uniform(0.25, 0.5))))
    take = max(1, min(k, len(v)))
    words = w[:n - k] + v[:take] if after else v[len(v) - take:] + w[k:]
    return _tidy(words, text)


#: a word's punctuation before and after it, and its core
_AFFIXES = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)


def _content(word: str) -> str | None:
    """The core of ``word`` (its punctuation off) if that is four or more letters, else None:
    the words a ``mistranslated`` negative replaces and replaces them with (most are content
    words in the project's languages; function words are mostly shorter)."""
    core = _AFFIXES.match(word).group(2)
    return core if len(core) >= 4 and core.isalpha() else None


def _mistranslated(text: str, draw: Callable[[], str], rng: random.Random) -> str:
    """``text`` with 10-25 % of its words (at least one) of four or more letters replaced by words
    ``draw`` gives (from other sentences of the same language), each keeping the replaced word's
    punctuation and first-letter case: a translation with wrong words. A side without such a
    word has its last word replaced."""
    w = text.split()
    if not w:
        return text
    slots = [k for k, x in enumerate(w) if _content(x)] or [len(w) - 1]
    n = min(len(slots), max(1, round(len(w) * rng.uniform(0.1, 0.25))))
    for k in sorted(rng.sample(slots, n)):
        before, core, after = _AFFIXES.match(w[k]).groups()
        new = draw()
        for _ in range(5):  # the same word drawn back is no error
            if new.lower() != core.lower():
                break
            new = draw()
        if core[:1].isupper() != new[:1].isupper():
            new = (new[0].upper() if core[:1].isupper() else new[0].lower()) + new[1:]
        w[k] = before + new + after
    return " ".join(w)


def _word_drawer(side: list[str], i: int, rng: random.Random) -> Callable[[], str]:
    """A function that draws a word of four or more letters from a random sentence of ``side``
    other than the ``i``-th (any of its words when none is that long)."""
    def draw() -> str:
        words = []
        for _ in range(20):
            j = rng.randrange(len(side) - 1)
            words = side[j if j < i else j + 1].split() or words
            found = [c for c in map(_content, words) if c]
            if found:
                return found[rng.randrange(len(found))]
        # text of short words only (captions of "a", "an", "the"...): any word of it
        return words[rng.randrange(len(words))] if words else "?"
    return draw


@dataclass
class NegativePool:
    """What a negative kind may draw on besides its own pair: all clean pairs, the one random
    generator every kind shares, the translations of the ``machine_translated`` rows (by row) and
    the word-for-word gloss of a source."""

    src: list[str]
    tgt: list[str]
    rng: random.Random
    mt: dict[int, str]
    gloss: Callable[[str], str] | None

    def other(self, i: int) -> int:
        """A random row other than ``i``."""
        j = self.rng.randrange(len(self.src) - 1)
        return j if j < i else j + 1


#: a negative kind: (pool, row, source, target) -> the negative's source and target
NegativeMaker = Callable[[NegativePool, int, str, str], "tuple[str, str]"]


def _misaligned(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    return s, p.tgt[p.other(i)]


def _shuffled(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    w = t.split()
    if len(w) > 1:
        orig = list(w)
        for _ in range(5):  # a two-word sentence may shuffle back into itself
            p.rng.shuffle(w)
            if w != orig:
                break
    return s, " ".join(w)


def _truncated(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    side = p.rng.random() < 0.5
    w = (s if side else t).split()
    cut = " ".join(w[:max(1, int(len(w) * p.rng.uniform(0.3, 0.7)))])
    return (cut, t) if side else (s, cut)


def _wrong_language(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    return t, s


def _untranslated(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    return s, s


def _numbers(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    if NUMBER_RE.search(t):
        return s, NUMBER_RE.sub(lambda m: str(int(re.sub(r"\D", "", m.group())) +
                                              p.rng.randint(1, 9)), t)
    w = t.split()
    w.insert(p.rng.randrange(len(w) + 1), str(p.rng.randint(2, 2030)))
    return s, " ".join(w)


def _appended(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    # a side that says more than the other: another pair's sentence added to it, as when a
    # crawler aligns one sentence with two
    j = p.other(i)
    return (s + " " + p.src[j], t) if p.rng.random() < 0.5 else (s, t + " " + p.tgt[j])


def _partial_pair(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    # a one-word side has no part to lose: the other side loses one
    if (p.rng.random() < 0.5 or len(t.split()) < 2) and len(s.split()) > 1:
        return _partial(s, p.rng), t
    return s, _partial(t, p.rng)


def _neighbour_pair(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    # the next pair's side, or the previous one's at the end of the list
    after = i + 1 < len(p.src) and (i == 0 or p.rng.random() < 0.5)
    j = i + 1 if after else i - 1
    if p.rng.random() < 0.5:
        return _neighbour(s, p.src[j], after, p.rng), t
    return s, _neighbour(t, p.tgt[j], after, p.rng)


def _machine_translated(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    return s, p.mt[i]


def _mistranslated_pair(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    # wrong words in a translation (ParaCrawl's E, MQM's mistranslations), on either side
    if p.rng.random() < 0.5:
        return _mistranslated(s, _word_drawer(p.src, i, p.rng), p.rng), t
    return s, _mistranslated(t, _word_drawer(p.tgt, i, p.rng), p.rng)


def _word_for_word(p: NegativePool, i: int, s: str, t: str) -> tuple[str, str]:
    return s, p.gloss(s)


#: every negative kind and the function that makes it
NEGATIVE_MAKERS: dict[str, NegativeMaker] = {
    "misaligned": _misaligned, "shuffled": _shuffled, "truncated": _truncated,
    "wrong_language": _wrong_language, "untranslated": _untranslated, "numbers": _numbers,
    "appended": _appended, "partial": _partial_pair, "neighbour": _neighbour_pair,
    "machine_translated": _machine_translated, "mistranslated": _mistranslated_pair,
    "word_for_word": _word_for_word,
}


def make_negatives(src: list[str], tgt: list[str], kinds: tuple[str, ...] = NEGATIVES,
                   seed: int = 1, translate: Callable[[list[str]], list[str]] | None = None,
                   gloss: Callable[[str], str] | None = None
                   ) -> tuple[list[str], list[str], list[str]]:
    """One synthetic negative per clean pair, the kinds taken in turn; returns sources, targets
    and the kind of each. ``translate`` (sources -> one translation each) makes the targets of
    ``machine_translated`` negatives, all in one call; ``gloss`` (a source -> its word-for-word
    translation) those of ``word_for_word``."""
    if len(src) < 2:
        raise InputError("pair classifier: need at least two clean pairs to make negatives")
    unknown = [k for k in kinds if k not in NEGATIVE_MAKERS]
    if unknown:
        raise ComponentError(f"unknown negative kind {unknown[0]!r}; choose from "
                             f"{', '.join(NEGATIVES + MORE_NEGATIVES)}")
    mt_rows = [i for i in range(len(src)) if kinds[i % len(kinds)] == "machine_translated"]
    if mt_rows and translate is None:
        raise ComponentError("pair classifier: machine_translated negatives need a translation "
                             "model (mt_model)")
    mt = dict(zip(mt_rows, translate([src[i] for i in mt_rows]))) if mt_rows else {}
    if gloss is None and "word_for_word" in kinds:
        raise ComponentError("pair classifier: word_for_word negatives need a dictionary "
                             "(gloss_dictionary)")
    pool = NegativePool(src, tgt, random.Random(seed), mt, gloss)
    ns, nt, nk = [], [], []
    for i, (s, t) in enumerate(zip(src, tgt)):
        kind = kinds[i % len(kinds)]
        s2, t2 = NEGATIVE_MAKERS[kind](pool, i, s, t)
        ns.append(s2)
        nt.append(t2)
        nk.append(kind)
    return ns, nt, nk
