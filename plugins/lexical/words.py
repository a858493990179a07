"""Word tokenisation for the lexical scores: lowercased word tokens, optionally reduced to Snowball
stems (the ``snowballstemmer`` package, Porter's Snowball stemmers for German and English; with
PyStemmer installed, as the extras install it, ``snowballstemmer`` runs its C build of the same
algorithms: identical stems on 715,000 German, English, French and Czech words, 14-25 times
faster, which matters when a 390,000-entry dictionary is stemmed at every start), and the
sparse bag-of-words matrices that let one matrix product score every source sentence against every
target sentence.

Dictionary entries, aligner input and scored sentences all go through the same :class:`Words`, so
a dictionary form and a sentence form of a word meet on the same key.
"""

from __future__ import annotations

import re
from typing import Iterable, Literal, Sequence

import numpy as np

from bitextforge import ComponentError

#: words are runs of letters and digits, kept whole across inner hyphens, apostrophes and digit
#: separators ("E-Mail", "don't", "10.000"), so numbers and compounds stay one token
WORD = re.compile(r"\w+(?:[-'’.,]\w+)*")

Normalise = Literal["lowercase", "stem"]
NORMALISE = ("lowercase", "stem")
#: the languages with a Snowball stemmer here (``normalise: stem``), by ISO 639-1 code
SNOWBALL = {"de": "german", "en": "english", "fr": "french", "cs": "czech", "es": "spanish",
            "it": "italian", "nl": "dutch", "pt": "portuguese"}


def check_stem(normalise: str, *langs: str) -> None:
    """Refuse ``normalise: stem`` for a language without a Snowball stemmer, with the option's
    name first, as a recipe validator reports it (a ValueError), so ``bitextforge validate``
    says it before a training starts."""
    if normalise != "stem":
        return
    for lang in langs:
        if lang not in SNOWBALL:
            raise ValueError(f"normalise: stem, but there is no Snowball stemmer for language "
                             f"{lang!r} (stemmers: {', '.join(sorted(SNOWBALL))}); use "
                             f"normalise: lowercase")


def copyable(word: str) -> bool:
    """Whether an identical word on both sides of a pair may count as its own translation: a
    number, or a word in Latin script (names, codes, brands, which a pair of languages written
    in Latin script shares). A word in another script that stands on both sides is an
    untranslated copy, not a translation: with Japanese words as copies, an untranslated pair
    would score as a perfect one."""
    return any(ch.isdigit() for ch in word) or all(ord(ch) <= 0x24F for ch in word)


class Words:
    """Turns text of one language into the word keys the lexical tables use."""

    def __init__(self, lang: str, normalise: str = "lowercase"):
        """``lang`` is an ISO 639-1 code (``de``, ``en``, ...); ``normalise`` is ``lowercase`` or
        ``stem`` (lowercase, then the Snowball stemmer of ``lang``)."""
        if normalise not in NORMALISE:
            raise ComponentError(f"unknown word normalisation {normalise!r}; choose one of "
                                 f"{', '.join(NORMALISE)}")
        self.lang = lang
        self.normalise = normalise
        self._stem = None
        self._cache: dict[str, str] = {}
        if normalise == "stem":
            import snowballstemmer

            if lang not in SNOWBALL:
                raise ComponentError(f"no Snowball stemmer for language {lang!r}; use "
                                     f"normalise: lowercase")
            self._stem = snowballstemmer.stemmer(SNOWBALL[lang])

    #: stems remembered at most; a crawl's vocabulary has no end (ids, names, typos), and an
    #: unbounded memo grew each scoring worker by about 290 bytes a line at 1M-2M crawl lines
    CACHE_WORDS = 200_000

    def key(self, word: str) -> str:
        """The key of one (already lowercased) word."""
        if self._stem is None:
            return word
        k = self._cache.get(word)
        if k is None:
            # digits are names and numbers, not inflected words (and not worth remembering)
            if any(ch.isdigit() for ch in word):
                return word
            k = self._stem.stemWord(word)
            if len(self._cache) >= self.CACHE_WORDS:
                self._cache.clear()
            self._cache[word] = k
        return k

    def words(self, text: str | None) -> list[str]:
        """The lowercased words of ``text`` in order, not yet keyed (empty for None)."""
        return WORD.findall(text.lower()) if text else []

    def tokens(self, text: str | None) -> list[str]:
        """The word keys of ``text`` in order (empty for None)."""
        return [self.key(w) for w in self.words(text)]


class Vocab:
    """A word-to-index table that grows while building and is frozen for scoring."""

    def __init__(self, words: Iterable[str] = ()):
        """Index ``words`` in order."""
        self.index: dict[str, int] = {}
        self.words: list[str] = []
        for w in words:
            self.add(w)

    @classmethod
    def of(cls, sentences: Iterable[Iterable[str]]) -> "Vocab":
        """Every word of tokenised ``sentences``, indexed in order of first occurrence."""
        vocab = cls()
        for toks in sentences:
            for t in toks:
                vocab.add(t)
        return vocab

    def add(self, word: str) -> int:
        """Index of ``word``, added when new."""
        i = self.index.get(word)
        if i is None:
            i = self.index[word] = len(self.words)
            self.words.append(word)
        return i

    def __len__(self) -> int:
        return len(self.words)


def bag_matrix(sentences: Sequence[Sequence[str]], vocab: Vocab, binary: bool = True):
    """A CSR matrix with one row per tokenised sentence and one column per vocabulary word
    (``binary``: 1 where the word occurs, else its count); words outside ``vocab`` are dropped."""
    from scipy import sparse

    rows, cols = [], []
    for r, toks in enumerate(sentences):
        ids = {vocab.index[t] for t in toks if t in vocab.index} if binary else \
            [vocab.index[t] for t in toks if t in vocab.index]
        rows.extend([r] * len(ids))
        cols.extend(ids)
    data = np.ones(len(rows), dtype=np.float32)
    m = sparse.csr_matrix((data, (rows, cols)), shape=(len(sentences), len(vocab)))
    m.sum_duplicates()
    return m
